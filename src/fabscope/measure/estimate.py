"""How long a fabscope-bench sweep takes, from its sizes and iterations, said before it starts.

The point-to-point sweeps (pingpong, bw, bibw, mbw, multi-lat) run every size of a doubling series
for a fixed number of iterations, more for small sizes than for large ones (``csrc/p2p.c``:
``fb_sizes`` and ``fb_iters``; :data:`SWEEPS` holds the same numbers, and
tests/measure/test_estimate.py reads them from the C source).  Each iteration moves its messages at
the link's rate after a start-up latency, so the time is a sum over sizes.  A testbed's shaped links
(a few MB/s) turn the default sweep into an hour; this says so first.

>>> round(sweep_seconds("pingpong", [], rate=5e6, latency=1e-3))    # 40 Mbit: over an hour
3770
>>> round(sweep_seconds("pingpong", ["--max-size", "64KiB", "--iterations", "10"], rate=5e6, latency=1e-3), 2)
5.06
>>> sweep_seconds("random-pairs", [], rate=5e6, latency=1e-3) is None       # not a size sweep
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fabscope.units import parse_size

__all__ = ["FABRIC_LATENCY", "SWEEPS", "Sweep", "TESTBED_LATENCY", "duration", "estimate_line", "sizes", "sweep_seconds"]


@dataclass(frozen=True)
class Sweep:
    min_size: int
    max_size: int
    #: timed iterations at sizes up to 8 KiB and above, then warm-up ones (fb_iters, fb_warm)
    iters: tuple[int, int]
    warmup: tuple[int, int]
    #: messages of the size on the busiest link per iteration: a round trip (2), or a window (``--window``)
    round_trip: bool


#: as csrc/p2p.c runs them
SWEEPS = {
    "pingpong": Sweep(0, 4 << 20, (10000, 1000), (100, 10), True),
    "multi-lat": Sweep(0, 1 << 20, (10000, 1000), (100, 10), True),
    "bw": Sweep(1, 4 << 20, (100, 20), (10, 2), False),
    "bibw": Sweep(1, 4 << 20, (100, 20), (10, 2), False),
    "mbw": Sweep(1, 4 << 20, (100, 20), (10, 2), False),
}
SMALL = 8192
WINDOW = 64
#: a message's start-up on a testbed's veths and shapers (TCP, namespaces on a shared machine): at least
#: 1 ms; on InfiniBand (a --fabric given) the fabric's own figure is a few microseconds
TESTBED_LATENCY = 1e-3
FABRIC_LATENCY = 2e-6


def _option(args: Sequence[str], name: str) -> str | None:
    """The value of ``--name V`` or ``--name=V`` (the last one given), else None."""
    val = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            val = args[i + 1]
        elif a.startswith(name + "="):
            val = a.split("=", 1)[1]
    return val


def sizes(sweep: Sweep, args: Sequence[str]) -> list[int]:
    """The sizes the program runs: ``--size`` alone, else 0 (where the sweep starts there), then powers
    of two from ``--min-size`` to ``--max-size``, the maximum included (fb_sizes)."""
    one = _option(args, "--size")
    if one is not None:
        return [parse_size(one)]
    lo = parse_size(_option(args, "--min-size") or sweep.min_size)
    hi = parse_size(_option(args, "--max-size") or sweep.max_size)
    out = [0] if lo == 0 else []
    s = lo or 1
    while s <= hi:
        out.append(s)
        if s > hi // 2:
            break
        s *= 2
    if out and out[-1] != hi and hi > 0:
        out.append(hi)
    return out


def sweep_seconds(test: str, args: Sequence[str], rate: float, latency: float) -> float | None:
    """Seconds test ``test`` takes with program options ``args`` on links of ``rate`` bytes/s and a
    start-up ``latency`` per message; None for a test that is not a size sweep."""
    sweep = SWEEPS.get(test)
    if sweep is None:
        return None
    its, warm = _option(args, "--iterations"), _option(args, "--warmup")
    window = int(_option(args, "--window") or WINDOW)
    total = 0.0
    for b in sizes(sweep, args):
        small = b <= SMALL
        n = (int(its) if its else sweep.iters[0 if small else 1]) + \
            (int(warm) if warm else sweep.warmup[0 if small else 1])
        per = 2 * (latency + b / rate) if sweep.round_trip else window * b / rate + 2 * latency
        total += n * per
    return total


def estimate_line(tests: Sequence[str], args: Sequence[str], rate: float, latency: float,
                  where: str, min_seconds: float = 0.0) -> str | None:
    """One line saying how long the sweeps among ``tests`` will take, or None if none is one (or they
    take less than ``min_seconds``).

    >>> print(estimate_line(["pingpong", "bw"], [], 5e6, 1e-3, "the testbed's links"))
    estimated time: about 1 h 42 min (pingpong 1 h 2 min, bw 39 min 44 s) at 5.00 MB/s, the testbed's links; --max-size or --iterations shortens it
    """
    from fabscope.units import format_rate

    parts = [(t, sweep_seconds(t, args, rate, latency)) for t in tests]
    parts = [(t, s) for t, s in parts if s is not None]
    if not parts:
        return None
    total = sum(s for _, s in parts)
    if total < min_seconds:
        return None
    each = f" ({', '.join(f'{t} {duration(s)}' for t, s in parts)})" if len(parts) > 1 else ""
    return (f"estimated time: about {duration(total)}{each} at {format_rate(rate)}, {where}; "
            "--max-size or --iterations shortens it")


def duration(seconds: float) -> str:
    """``3725`` -> ``'1 h 2 min'``; under a minute in seconds.

    >>> duration(42.4), duration(125), duration(3725)
    ('42 s', '2 min 5 s', '1 h 2 min')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
