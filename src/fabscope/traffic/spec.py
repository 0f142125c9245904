"""``--pattern`` specs: a pattern name with optional ``key=value`` parameters.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> f = fat_tree(k=4, levels=2)
>>> p = Placement.block(f, 16, ppn=1)
>>> make_traffic("shift:k=4", f, p, 1e6).n_flows
16
>>> make_traffic("stencil2d:4x4", f, p, 1e6).n_flows
64
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from fabscope.errors import FabscopeWarning, TrafficError
from fabscope.fabric.generators.size import SLOW_SECONDS
from fabscope.limits import human_bytes, human_seconds, memory_limit
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.numbers import number
from fabscope.traffic import patterns as pt
from fabscope.traffic.flows import Traffic


def _grid(n: int, nd: int) -> tuple[int, ...]:
    """A near-cubic grid of n ranks in nd dimensions."""
    dims = [1] * nd
    rest = n
    for i in range(nd, 0, -1):
        d = round(rest ** (1 / i))
        while d > 1 and rest % d:
            d -= 1
        dims[nd - i] = max(d, 1)
        rest //= max(d, 1)
    dims[-1] *= rest
    return tuple(sorted(dims))


def _stencil(nd: int) -> Callable[..., Traffic]:
    def make(f: Fabric, p: Placement, size: float, seed: int, dims: str | None = None,
             periodic: str = "1") -> Traffic:
        d = tuple(int(x) for x in dims.split("x")) if dims else _grid(p.n_ranks, nd)
        if len(d) != nd:
            raise TrafficError(f"stencil{nd}d needs {nd} dimensions, got {dims}")
        from math import prod

        if prod(d) != p.n_ranks:
            raise TrafficError(f"stencil{nd}d grid {'x'.join(map(str, d))} has {prod(d)} points; the job has {p.n_ranks} ranks")
        return pt.stencil(d, size, periodic=periodic not in ("0", "false", "no"))
    return make


PATTERNS: dict[str, Callable[..., Traffic]] = {
    "random-pairs": lambda f, p, size, seed, rounds=1: pt.random_pairs(p.n_ranks, size, seed, int(rounds)),
    "leaf-offset": lambda f, p, size, seed, offset=1, nodes_per_leaf=8: pt.leaf_offset(
        f, p, int(offset), size, int(nodes_per_leaf)),
    "leaf-pairs": lambda f, p, size, seed, nodes_per_leaf=8, concurrent="1": pt.leaf_pairs(
        f, p, size, int(nodes_per_leaf), concurrent=str(concurrent) not in ("0", "false", "no")),
    "partner-hops": lambda f, p, size, seed, hops=1, order="random": pt.partner_hops(f, p, int(hops), size, seed,
                                                                                    str(order)),
    "bisection": lambda f, p, size, seed, samples=10: pt.bisection(p.n_ranks, size, seed, int(samples)),
    "shift": lambda f, p, size, seed, k=1: pt.shift(p.n_ranks, size, int(k)),
    "permutation": lambda f, p, size, seed: pt.permutation(p.n_ranks, size, seed),
    "all-to-all": lambda f, p, size, seed: pt.all_to_all(p.n_ranks, size),
    "natural-ring": lambda f, p, size, seed: pt.ring(p.n_ranks, size, "natural", seed),
    "random-ring": lambda f, p, size, seed: pt.ring(p.n_ranks, size, "random", seed),
    "bucket-brigade": lambda f, p, size, seed: pt.bucket_brigade(p.n_ranks, size),
    "random-messaging": lambda f, p, size, seed, low=100, high=1000: pt.random_messaging(
        p.n_ranks, seed, int(low), int(high)),
    "stencil2d": _stencil(2),
    "stencil3d": _stencil(3),
}

# Calibration (peak RSS growth and wall time of make_traffic on 4,096 ranks of fat-tree:k=16,cores=16):
#   bisection:samples=500  2,048,000 flows  134 MB  1.6 s;   all-to-all  16,773,120 flows  803 MB  20 s
# that is 48-65 B and up to 1.2 us a flow; rounded up:
BYTES_PER_FLOW = 80.0
SECONDS_PER_FLOW = 1.5e-6


def _int(kw: dict[str, Any], key: str, default: int) -> int:
    try:
        return int(kw.get(key, default))
    except (TypeError, ValueError):
        return default                         # the pattern itself refuses it, by name


def _dims_points(kw: dict[str, Any], n: int) -> int:
    try:
        from math import prod

        return prod(int(x) for x in str(kw["dims"]).split("x")) if kw.get("dims") else n
    except ValueError:
        return n


#: integer parameters of the patterns and their ranges (``samples=1e8`` reads as 100000000, then is sized)
_INTEGERS: dict[str, tuple[int | None, int | None]] = {
    "samples": (1, None), "offset": (1, None), "nodes_per_leaf": (1, None), "hops": (0, None),
    "k": (None, None), "low": (0, None), "high": (0, None)}

#: an upper bound on the flows each pattern makes for n ranks, from its parameters alone
FLOWS: dict[str, Callable[[int, dict[str, Any]], int]] = {
    "random-pairs": lambda n, kw: n,
    "leaf-offset": lambda n, kw: 2 * n,
    "leaf-pairs": lambda n, kw: 2 * n * max(n // max(_int(kw, "nodes_per_leaf", 8), 1), 1),
    "partner-hops": lambda n, kw: n,
    "bisection": lambda n, kw: 2 * (n // 2) * max(_int(kw, "samples", 10), 0),
    "shift": lambda n, kw: n,
    "permutation": lambda n, kw: n,
    "all-to-all": lambda n, kw: n * n,
    "natural-ring": lambda n, kw: 2 * n,
    "random-ring": lambda n, kw: 2 * n,
    "bucket-brigade": lambda n, kw: n,
    "random-messaging": lambda n, kw: n,
    "stencil2d": lambda n, kw: 4 * _dims_points(kw, n),
    "stencil3d": lambda n, kw: 6 * _dims_points(kw, n),
}


def check_flows(what: str, flows: int, limit: tuple[int, str] | None = None) -> None:
    """Refuse traffic that would not fit in memory, with the estimate; warn of a slow one.

    >>> check_flows("bisection:samples=100000000", 51200000000, limit=(16 * 10 ** 9, "FABSCOPE_MAX_MEMORY"))
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: bisection:samples=100000000: 51,200,000,000 flows, about 4.1 TB; the limit is 16.0 GB (FABSCOPE_MAX_MEMORY)
    """
    lim, source = limit if limit is not None else memory_limit()
    need = flows * BYTES_PER_FLOW
    if need > lim:
        raise TrafficError(f"{what}: {flows:,} flows, about {human_bytes(need)}; the limit is {human_bytes(lim)} "
                           f"({source})")
    if flows * SECONDS_PER_FLOW > SLOW_SECONDS:
        warnings.warn(f"{what}: {flows:,} flows, about {human_bytes(need)}; making them takes about "
                      f"{human_seconds(flows * SECONDS_PER_FLOW)}", FabscopeWarning, stacklevel=3)


_POSITIONAL = {"stencil2d": "dims", "stencil3d": "dims", "leaf-offset": "offset", "partner-hops": "hops",
               "shift": "k", "random-pairs": "rounds"}


def make_traffic(spec: str, fabric: Fabric, placement: Placement, size: float, seed: int = 0,
                 **extra: Any) -> Traffic:
    """Build the traffic a ``--pattern`` spec names; raises TrafficError naming the fault."""
    name, _, arg = spec.strip().partition(":")
    if name not in PATTERNS:
        raise TrafficError(f"unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")
    kw: dict[str, Any] = {}
    for i, part in enumerate(x for x in arg.split(",") if x.strip()):
        k, eq, v = part.partition("=")
        if not eq:
            if i == 0 and name in _POSITIONAL:
                k, v = _POSITIONAL[name], part
            else:
                raise TrafficError(f"pattern {name!r}: parameter {part!r} should be key=value")
        kw[k.strip().replace("-", "_")] = v.strip()
    import inspect

    params = inspect.signature(PATTERNS[name]).parameters
    for k, v in extra.items():
        if k in params:
            kw.setdefault(k, v)
    unknown = [k for k in kw if k not in params or k in ("f", "p", "size", "seed")]
    if unknown:
        takes = [k for k in params if k not in ("f", "p", "size", "seed")]
        raise TrafficError(f"pattern {name!r} has no parameter {unknown[0]!r}"
                           + (f" (takes: {', '.join(takes)})" if takes else " (takes none)"))
    for k, v in list(kw.items()):
        if k in _INTEGERS:
            lo, hi = _INTEGERS[k]
            kw[k] = number(v, f"pattern {name!r}: {k}", lo, hi, integer=True, error=TrafficError)
    check_flows(spec.strip(), FLOWS[name](placement.n_ranks, kw))
    try:
        return PATTERNS[name](fabric, placement, size, seed, **kw)
    except ValueError as err:
        raise TrafficError(f"pattern {name!r}: bad parameter ({err})") from None
