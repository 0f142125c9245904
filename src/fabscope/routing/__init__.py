"""Routing: turn (source host, destination host) into links, as arrays.

Engines route host ports (terminals): ``routes(src, dst)`` takes hosts, and
:func:`terminal_routes` (``engine.terminal_routes``) terminals; see
:mod:`fabscope.routing.routes`.

Engines, by name (``make_routing``):

========== ============================================================
dmodk      D-mod-K on fat trees (computed, any size)
minhop     OpenSM's minhop: min-hop forwarding tables balanced by port use
ftree      OpenSM's ftree (``ftree:roots=S1+S2``; default: the top level)
updn       OpenSM's updn (``updn:roots=S1+S2``; default: found as OpenSM does)
tables     forwarding tables given with the fabric (imported from OpenSM)
dor        dimension-order routing on tori, meshes, hypercubes
           (``dor:tie=plus|simgrid|opensm``; OpenSM's dor without coordinates)
minimal    minimal routing (min-hop tables; dragonflies: local-global-local,
           ``cables=all``: over every cable between two groups, an even share each)
valiant    dragonflies: through a random intermediate group (seeded; ``via=all``: drawn
           among all groups, the flow's own two routing it minimally)
ugal-l     dragonflies: minimal or Valiant per flow by its source router's queues
ugal-g     dragonflies: minimal or Valiant per flow by the queues on its paths
           (``parts=N``: each flow in N parts; ``load=X``: each flow offers X of its link;
           ``cables=tables``: the minimal side on minimal's one cable)
ecmp       one minimal path per flow by hash; ``ecmp-random`` by seed
adaptive   each flow split evenly over its minimal next hops (ideal bound)
adaptive-local  each switch takes its least loaded minimal next hop (flows placed in a seeded order)
========== ============================================================

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> r = make_routing(f, "dmodk").routes(np.array([0]), np.array([3]))
>>> [f.link_name(l) for l in r.path(0)]
['h0000[1] -> s1-0000[1]', 's1-0000[4] -> s2-0001[1]', 's2-0001[2] -> s1-0001[4]', 's1-0001[2] -> h0003[1]']
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.routes import Routes, check_routes, host_terminals, terminal_routes, walk

__all__ = ["ENGINES", "Routes", "Routing", "check_routes", "default_engine", "host_terminals", "make_routing",
           "parse_engine", "terminal_routes", "walk"]

ENGINES = ("dmodk", "minhop", "ftree", "updn", "tables", "dor", "minimal", "ecmp", "ecmp-random", "adaptive",
           "adaptive-local", "valiant", "ugal-l", "ugal-g")


class Routing(Protocol):
    name: str

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes: ...


def default_engine(fabric: Fabric) -> str:
    """What a fabric routes by unless told: its own tables, DOR on coordinates,
    min-hop for Itasca (its subnet manager's static routing), D-mod-K on other trees."""
    gen = fabric.params.get("generator")
    if fabric.lft is not None:
        return "tables"
    if fabric.coords is not None:
        return "dor"
    if gen in ("itasca", "director") or gen is None:
        return "minhop"
    if gen in ("xgft", "fat-tree"):
        return "dmodk"
    return "minimal"


def parse_engine(spec: str) -> tuple[str, dict[str, str]]:
    """``'dor:tie=simgrid'`` -> ``('dor', {'tie': 'simgrid'})``.

    >>> parse_engine("updn:roots=s2-0000+s2-0001")
    ('updn', {'roots': 's2-0000+s2-0001'})
    >>> parse_engine("updn:roots=r(0,0,0)+r(1,0,0)")
    ('updn', {'roots': 'r(0,0,0)+r(1,0,0)'})
    """
    name, _, rest = spec.partition(":")
    opts = {}
    items: list[str] = []
    for part in rest.split(","):         # a comma inside a value (switch "r(0,0,0)") joins it back
        if items and "=" not in part:
            items[-1] += "," + part
        else:
            items.append(part)
    for item in filter(None, items):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise RoutingError(f"cannot read routing option {item!r} in {spec!r}: write key=value")
        opts[k.strip()] = v.strip()
    return name.strip(), opts


_OPTIONS = {"dor": {"tie"}, "ftree": {"roots"}, "updn": {"roots"}, "minimal": {"cables"},
            "valiant": {"spread", "via"},
            "ugal-l": {"spread", "parts", "when", "load", "cables"},
            "ugal-g": {"spread", "parts", "when", "load", "cables"},
            "adaptive-local": {"parts"}}


def _parts(name: str, opts: dict[str, str]) -> int:
    """The ``parts=N`` option of the engines that place flows in parts (1 unless given)."""
    from fabscope.numbers import number

    return int(number(opts.get("parts", "1"), f"routing {name}: parts", 1, 1024, integer=True, error=RoutingError))


def make_routing(fabric: Fabric, name: str | None = None, *, seed: int = 0,
                 lft: np.ndarray | None = None) -> Routing:
    """The routing engine ``name`` (default: :func:`default_engine`) on ``fabric``.

    ``name`` may carry options: ``dor:tie=simgrid``, ``updn:roots=S1+S2``.
    """
    # each engine's module imported when it is the one asked for (a process routes with one)
    name, opts = parse_engine(name or default_engine(fabric))
    bad = set(opts) - _OPTIONS.get(name, set())
    if bad and name in ENGINES:
        raise RoutingError(f"routing {name!r} takes no option {sorted(bad)[0]!r}")
    roots = [r for r in opts.get("roots", "").split("+") if r] or None
    if name == "ftree":
        from fabscope.routing.ftree import FatTreeRouting

        return FatTreeRouting(fabric, roots)
    if name == "updn":
        from fabscope.routing.updn import UpDownRouting

        return UpDownRouting(fabric, roots)
    if name == "dmodk":
        from fabscope.routing.tree import DModKRouting

        return DModKRouting(fabric)
    if name in ("minimal", "valiant", "ugal-l", "ugal-g"):
        from fabscope.routing.dragonfly import DragonflyRouting, is_dragonfly

        if opts.get("when", "placed") != "placed":
            raise RoutingError(f"{name}:when={opts['when']}: each message chooses as it is posted only in time "
                               "(simulate --dynamic, when=posted); the static model places flows (when=placed)")
        if is_dragonfly(fabric):
            from fabscope.numbers import number

            load = number(opts.get("load", "1"), f"routing {name}: load", 0, 1, lo_open=True, error=RoutingError)
            return DragonflyRouting(fabric, name, seed, opts.get("spread", "packet"), _parts(name, opts), load,
                                    opts.get("cables"), opts.get("via", "others"))
        if name != "minimal":
            raise RoutingError(f"routing {name!r} routes dragonflies; {fabric.name!r} is not one")
        if opts:
            raise RoutingError(f"routing 'minimal' takes {next(iter(opts))}= on dragonflies only (it routes "
                               f"dragonflies local-global-local); {fabric.name!r} is not one")
    if name in ("minhop", "minimal"):
        from fabscope.routing.tables import TableRouting, minhop_tables

        return TableRouting(fabric, minhop_tables(fabric), name=name)
    if name == "tables":
        from fabscope.routing.tables import TableRouting

        table = lft if lft is not None else fabric.lft
        if table is None:
            raise RoutingError(f"fabric {fabric.name!r} carries no forwarding tables; import them with "
                               "'fabscope fabric import --lfts' or pick another routing")
        return TableRouting(fabric, np.asarray(table), name="tables")
    if name == "dor":
        from fabscope.routing.dor import DimensionOrderRouting

        return DimensionOrderRouting(fabric, opts.get("tie"))
    if name == "adaptive-local":
        from fabscope.routing.adaptive_local import LocalAdaptiveRouting

        return LocalAdaptiveRouting(fabric, seed, _parts(name, opts))
    multipath = {"ecmp": "ecmp", "ecmp-random": "random", "adaptive": "adaptive"}
    if name in multipath:
        from fabscope.routing.multipath import MultipathRouting

        return MultipathRouting(fabric, multipath[name], seed)
    raise RoutingError(f"unknown routing {name!r}; choose from {', '.join(ENGINES)}")
