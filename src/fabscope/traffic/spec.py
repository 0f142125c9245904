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

from typing import Any, Callable

from fabscope.errors import TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
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
    try:
        return PATTERNS[name](fabric, placement, size, seed, **kw)
    except ValueError as err:
        raise TrafficError(f"pattern {name!r}: bad parameter ({err})") from None
