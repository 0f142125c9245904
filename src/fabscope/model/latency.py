"""Times of messages: software overhead, wire latency per hop, and size over rate.

Seed 002's wormhole model, ``(L_f / B) * D + L / B``, plus the per-link
latencies of the fabric and a fixed software overhead ``alpha``::

    t = alpha + sum(link latencies) + hops * flit / B + size / rate

``B`` is the slowest link the message crosses (``link_rate``; an infinite one,
as for an on-node copy, adds nothing).  The static model's ``time`` column is
this; its ``bandwidth`` column is the rate alone (latency left out), the
dynamic simulation's includes it (docs/dynamic.md).

>>> float(round(message_time(1e6, 3071e6, hops=4, wire=4e-7, alpha=1.5e-6, flit=32, link_rate=3071e6) * 1e6, 2))
327.57
"""

from __future__ import annotations

import numpy as np

#: MPI software overhead of one message on a QDR InfiniBand cluster (about 1.5 us)
DEFAULT_ALPHA = 1.5e-6
#: flit size of seed 002's wormhole model (bytes)
DEFAULT_FLIT = 32.0


def message_time(size, rate, hops, wire, alpha: float = DEFAULT_ALPHA, flit: float = DEFAULT_FLIT,
                 link_rate=None):
    """Seconds for one message; arrays broadcast."""
    size = np.asarray(size, dtype=float)
    rate = np.asarray(rate, dtype=float)
    per_hop = 0.0 if link_rate is None else np.asarray(hops) * flit / np.asarray(link_rate, dtype=float)
    # (flit / inf = 0: a copy that crosses no link pays no per-hop term)
    with np.errstate(divide="ignore"):
        return alpha + np.asarray(wire) + per_hop + np.where(np.isinf(rate), 0.0, size / rate)
