"""How much memory a simulation in time needs, counted from a program's counts before anything is
allocated: a ping-pong of 10**12 iterations is refused from its count, not after NumPy has tried
to allocate its 14.6 TiB of messages.

>>> check_counts("ping-pong", 8 * 2 * 10**12, 10**5, 16, limit=8 << 30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.dynamic.sizes.SimulationTooLarge: program 'ping-pong' has 16,000,000,000,000 messages ...
>>> check_counts("ping-pong", 8 * 2 * 102, 2 * 102 * 16, 16, limit=8 << 30) < 10 << 20
True
"""

from __future__ import annotations

import os

from fabscope.errors import FabscopeError

#: rough bytes the engine holds per message, per step and per path entry (measured with tracemalloc)
BYTES_PER_MESSAGE = 700
BYTES_PER_STEP = 250
BYTES_PER_HOP = 120


class SimulationTooLarge(FabscopeError):
    """A simulation that would not fit in memory."""


def run_bytes(n_messages: int, n_steps: int, n_ranks: int, mean_hops: float = 8.0) -> int:
    """Bytes a run of a program of these counts needs, about."""
    return int(n_messages * (BYTES_PER_MESSAGE + mean_hops * 16) + n_steps * BYTES_PER_STEP
               + min(n_messages, n_ranks ** 2) * mean_hops * BYTES_PER_HOP)


def available_memory() -> int:
    """MemAvailable from /proc/meminfo (bytes); a large number where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 1 << 62


def check_counts(name: str, n_messages: int, n_steps: int, n_ranks: int, limit: int | None = None) -> int:
    """Refuse, naming the counts, a program whose run would not fit in ``limit`` (default: the memory
    available now); return the estimate.  Integers all the way: 10**12 iterations do not overflow."""
    need = run_bytes(int(n_messages), int(n_steps), int(n_ranks))
    have = available_memory() if limit is None else limit
    if need > have:
        raise SimulationTooLarge(
            f"program {name!r} has {int(n_messages):,} messages and {int(n_steps):,} steps: "
            f"simulating it needs about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB are available")
    return need
