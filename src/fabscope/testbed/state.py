"""Where a testbed's description lives between commands, and its model.

The state file (``$FABSCOPE_TESTBED_DIR``, default ``/run/fabscope-testbed``,
one ``NAME.json`` each) holds the testbed's fabric, routing, rates and
faults.  ``down`` does not need it: the names of what was made say whose it is.

:func:`load_fabric` is what other parts call to model a testbed: by default
the fabric as built (recorded at ``up``: the nominal fabric a fault is found
against), with ``now=True`` the fabric as it runs now (degraded rates, cut
cables, rerouted tables).  ``--fabric`` reaches it through
:func:`fabscope.resolver.resolve_fabric` (``tb1``, ``tb1:now``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.errors import FabricError, FabscopeError
from fabscope.fabric.model import Fabric
from fabscope.testbed.names import TestbedError, check_name


def state_dir() -> Path:
    return Path(os.environ.get("FABSCOPE_TESTBED_DIR", "/run/fabscope-testbed"))


def state_path(name: str) -> Path:
    return state_dir() / f"{check_name(name)}.json"


@dataclass
class State:
    name: str
    spec: str
    routing: str
    rate: float
    mgmt_subnet: str  # e.g. "10.233.4" (/24; .1 is the bridge)
    fabric: dict[str, Any]  # the testbed's fabric before faults (fabscope.fabric JSON)
    scale: float
    efficiency: float
    #: cable index (link id // 2) -> capacity in bytes/s of payload, both directions
    degraded: dict[str, float] = field(default_factory=dict)
    #: cut cables as node[port] specs
    cut: list[str] = field(default_factory=list)
    ppn: int = 1
    #: the fabric as built, with the forwarding tables the switches got at ``up`` (fabscope.fabric JSON)
    nominal: dict[str, Any] = field(default_factory=dict)
    #: what ``up`` measured this machine forwarding (see fabscope.testbed.calibrate), if it did
    calibration: dict[str, Any] = field(default_factory=dict)

    def base_fabric(self) -> Fabric:
        from fabscope.fabric.io import from_dict

        return from_dict(self.fabric, f"testbed {self.name}")

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def fabric_interfaces(self) -> list[str]:
        """Every host's fabric interfaces, ``fab0`` to ``fab{P-1}`` for the most ports ``P`` a host has:
        what MPI is told to use (Open MPI's TCP BTL stripes a large message over all of them)."""
        from fabscope.testbed.names import host_if

        return [host_if(p) for p in range(int(self.base_fabric().host_n_ports.max()))]


def save(st: State) -> None:
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    with atomic_open(state_path(st.name)) as fh:
        json.dump(st.to_json(), fh)


def load(name: str) -> State:
    """The state of testbed ``name``; TestbedError if it is not up."""
    p = state_path(name)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise TestbedError(f"no testbed {name!r} is up (no {p}); start one with 'fabscope testbed up --name {name}'") from None
    except (OSError, ValueError) as err:
        raise TestbedError(f"cannot read testbed state {p}: {err}") from None
    return State(**doc)


def remove(name: str) -> bool:
    try:
        state_path(name).unlink()
        return True
    except FileNotFoundError:
        return False


def names_up() -> list[str]:
    d = state_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def current_fabric(st: State) -> Fabric:
    """The testbed's fabric with its faults: degraded cables at their rates, cut cables gone."""
    from dataclasses import replace

    from fabscope.whatif import cut_cables

    f = st.base_fabric()
    if st.degraded:
        cap = f.link_capacity.copy()
        for c, v in st.degraded.items():
            cap[2 * int(c)] = cap[2 * int(c) + 1] = float(v)
        f = replace(f, link_capacity=cap, params={**f.params, "degraded": dict(st.degraded)})
    if st.cut:
        try:
            f, _ = cut_cables(f, st.cut)
        except FabricError as err:
            raise TestbedError(str(err)) from None
    return f


def routing_engine(st: State) -> str:
    """The engine that routes the testbed now.  After a cut, the fabric's own engine on the cut
    fabric if it still routes every pair; otherwise (D-mod-K knows no faults; imported tables are
    rewritten by the subnet manager) min-hop, OpenSM's default engine, as a subnet manager would."""
    if not st.cut:
        return st.routing
    if st.routing != "tables":
        from fabscope.routing import make_routing
        from fabscope.testbed.plan import forwarding

        f = current_fabric(st)
        try:
            forwarding(f, make_routing(f, st.routing))
            return st.routing
        except FabscopeError:
            pass
    return "minhop"


def forwarding_now(st: State) -> tuple[Fabric, np.ndarray]:
    """The fabric with its faults and the forwarding tables its switches hold now."""
    from fabscope.routing import make_routing
    from fabscope.testbed.plan import forwarding

    f = current_fabric(st)
    try:
        router = make_routing(f, routing_engine(st))
    except FabscopeError as err:
        raise TestbedError(f"testbed {st.name}: routing {routing_engine(st)}: {err}") from None
    return f, forwarding(f, router)


def nominal_fabric(st: State) -> Fabric:
    """The testbed's fabric as built: no faults, the tables its switches got at ``up``."""
    from dataclasses import replace

    from fabscope.fabric.io import from_dict

    if st.nominal:
        f = from_dict(st.nominal, f"testbed {st.name} (as built)")
    else:  # a state written before the nominal fabric was recorded: the same tables, computed again
        from fabscope.routing import make_routing
        from fabscope.testbed.plan import forwarding

        f = st.base_fabric()
        try:
            f = replace(f, lft=forwarding(f, make_routing(f, st.routing)))
        except FabscopeError as err:
            raise TestbedError(f"testbed {st.name}: routing {st.routing}: {err}") from None
    return replace(f, name=f"testbed {st.name} as built ({st.spec})",
                   params={**f.params, "routing": st.routing, "testbed_view": "nominal", "testbed": st.name})


def load_fabric(name: str, now: bool = False) -> Fabric:
    """The model of testbed ``name``: as built (default), or as it runs now (``now=True``).

    Its hosts carry the names MPI reports on the testbed, its capacities the
    payload rates its shaped links deliver, and its ``lft`` the very
    forwarding tables the switch namespaces hold (at ``up``, or now), so its
    default routing (``tables``) gives every pair the path its packets take.
    As built: every cable at its nominal rate, the tables of ``up``.  Now:
    degraded cables at their rate, cut cables gone, the tables rewritten
    after a cut.  ``params["routing"]`` names the engine the tables come
    from, ``params["testbed_view"]`` which of the two this is, ``params["testbed"]`` the testbed's name.
    """
    from dataclasses import replace

    st = load(name)
    if not now:
        return nominal_fabric(st)
    f, lft = forwarding_now(st)
    faults = f"{len(st.degraded)} degraded, {len(st.cut)} cut" if st.degraded or st.cut else "no faults"
    return replace(f, lft=lft, name=f"testbed {st.name} now ({st.spec}; {faults})",
                   params={**f.params, "routing": routing_engine(st), "testbed_view": "now", "testbed": st.name})


def load_routing(name: str, now: bool = True):  # type: ignore[no-untyped-def]
    """``(Fabric, Routing)`` of testbed ``name`` (now by default): :func:`load_fabric` and its table routing."""
    from fabscope.routing import make_routing

    f = load_fabric(name, now=now)
    return f, make_routing(f, "tables")


def cable_of(f: Fabric, spec: str, original_hosts: list[str] | None = None) -> int:
    """The cable (link id // 2) at ``node[port]`` in ``f``; hosts may be named as in the original fabric.

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2)
    >>> cable_of(f, "s1-0000[3]"), cable_of(f, "h0001[1]")
    (4, 1)
    """
    from fabscope.whatif import parse_cut

    try:
        node, port = parse_cut(spec)
    except FabricError as err:
        raise TestbedError(str(err)) from None
    if original_hosts and node in original_hosts:
        node = f.host_names[original_hosts.index(node)]
    if node not in f.node_index:
        raise TestbedError(f"no node {node!r} in the testbed's fabric {f.name!r}; links are named node[port], "
                           f"e.g. {f.link_name(2 * (f.n_links // 4)).split(' -> ')[0]}")
    v = f.node_index[node]
    hit = np.flatnonzero(f.link_src == v)
    if port is None:
        if v < f.n_hosts and len(hit) == 1:
            return int(hit[0]) // 2
        raise TestbedError(f"link {spec!r}: name one port of {node}, e.g. {node}[{int(f.link_src_port[hit[0]])}]")
    hit = hit[f.link_src_port[hit] == port]
    if not len(hit):
        raise TestbedError(f"link {spec!r}: {node} has no cable on port {port}")
    return int(hit[0]) // 2
