"""How much memory a simulation in time needs, counted from a program's counts before anything is
allocated: a ping-pong of 10**12 iterations is refused from its count, not after NumPy has tried
to allocate its 14.6 TiB of messages.

>>> check_counts("ping-pong", 8 * 2 * 10**12, 10**5, 16, limit=8 << 30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.dynamic.sizes.SimulationTooLarge: program 'ping-pong' has 16,000,000,000,000 messages ...
>>> check_counts("ping-pong", 8 * 2 * 102, 2 * 102 * 16, 16, limit=8 << 30) < 10 << 20
True

A trace of timed messages is sized from its file before it is read (:func:`check_trace_size`):

>>> check_trace_size("big.csv", 72 * 10**6, limit=1 << 30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.dynamic.sizes.SimulationTooLarge: big.csv: a trace of 72.0 MB, about 3,000,000 messages ... needs about 4.0 GB...
"""

from __future__ import annotations

import os

from fabscope.errors import FabscopeError

#: rough bytes the engine holds per message, per step and per path entry (measured with tracemalloc)
BYTES_PER_MESSAGE = 700
BYTES_PER_STEP = 250
BYTES_PER_HOP = 120
#: bytes of a trace line, about ("0.000123,12,40,65536" and its end: 21.6 on a trace of 200,000 random
#: messages among 64 ranks): the message count a trace's size implies
TRACE_LINE_BYTES = 24


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


def check_trace_size(path: str, size: int, limit: int | None = None, where: str = "available") -> int:
    """Refuse a trace of ``size`` bytes whose replay would not fit in ``limit`` bytes (``where`` says
    whose limit), from the count its size implies (:data:`TRACE_LINE_BYTES` a message), before it is
    read; return that count.  A timed trace is 2 steps a message; its ranks are not known before it is
    read, so their part of the estimate is left out (the estimate is low rather than high: the run's
    own check, from the real counts, comes after the reading)."""
    about = int(size) // TRACE_LINE_BYTES
    need = run_bytes(about, 2 * about, 0)
    have = available_memory() if limit is None else limit
    if need > have:
        from fabscope.limits import human_bytes

        raise SimulationTooLarge(
            f"{path}: a trace of {human_bytes(size)}, about {about:,} messages ({TRACE_LINE_BYTES} bytes a line), "
            f"needs about {human_bytes(need)} to replay; the limit is {human_bytes(have)} ({where}): "
            "replay a part of it")
    return about
