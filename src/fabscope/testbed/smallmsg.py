"""Below which message size a testbed's figures are not its links'.

Each cable end is a ``tbf`` shaper with a bucket of 2 ms at the link's rate, at least two frames
(:func:`fabscope.testbed.commands.burst_bytes`: 18,028 B up to 72 Mbit).  A message that fits the
bucket leaves at the veths' speed (4-8 us one way on a 20 Mbit link, where the link would take
milliseconds); a larger one gets up to a bucket ahead of the link's pace.  So a message's time is
the link's to within 1/:data:`SHARE` only from :data:`SHARE` buckets up: :func:`link_size` is the
first power of two there.  Latencies are never the fabric's (per-hop latencies are not emulated:
what a small message measures is the kernel's TCP path).  ``measure --testbed`` records the size
in its testbed line and says so when it measured below it; ``compare`` repeats it; the latency
model of a sweep on a testbed is fitted over the sizes from it up only, so that no kink is read
out of the bucket's effects.

>>> link_size(parse_rate("40Mbit")), link_size(parse_rate("200Mbit"))
(524288, 1048576)
"""

from __future__ import annotations

import math

from fabscope.testbed.commands import burst_bytes
from fabscope.testbed.names import parse_rate  # noqa: F401 - the doctest's
from fabscope.testbed.plan import MTU

#: a bucket may be at most this share of a message whose time is the link's
SHARE = 16


def link_size(wire_rate: float, mtu: int = MTU) -> int:
    """The smallest power of two of at least :data:`SHARE` buckets of the fastest link (``wire_rate``, bytes/s)."""
    return 1 << math.ceil(math.log2(SHARE * burst_bytes(wire_rate, mtu)))


def note(name: str, size: int, smallest: int) -> str:
    """The line saying that a run on testbed ``name`` measured sizes below ``size``.

    >>> note("tb1", 524288, 1024)[:52]
    'testbed tb1: sizes below 524288 B (here from 1024 B)'
    """
    return (f"testbed {name}: sizes below {size} B (here from {smallest} B) are not its links' figures: a message "
            f"of up to {SHARE} shaper buckets gains up to a bucket on the link's pace, one within a bucket crosses at "
            "the veths' speed; latencies are the kernel's TCP path, not the fabric's")
