"""Faults on a running testbed: a slow cable, a cut cable, and undoing them.

``degrade`` changes both shapers of one cable.  ``cut`` takes the cable's two
ends down and rewrites every switch's routes as the fabric's routing engine
computes them on the fabric without that cable (imported OpenSM tables give
way to min-hop, OpenSM's default engine, as :mod:`fabscope.whatif`
does).  ``restore`` undoes one fault or all.  Each records the fault in the
state first check, then acts, then saves: the model (:func:`~.state.load_fabric`)
always says what the testbed does.
"""

from __future__ import annotations

import numpy as np

from fabscope.testbed import commands, state, system
from fabscope.testbed.counters import plan_of
from fabscope.testbed.names import TestbedError
from fabscope.testbed.plan import Plan


def _quiet(msg: str) -> None:
    pass


def _ends(p: Plan, cable: int) -> list[tuple[str, str, int]]:
    """(namespace, interface, link id) of both ends of a cable."""
    f = p.fabric
    return [(p.netns(int(f.link_src[l])), p.ifname(l), l) for l in (2 * cable, 2 * cable + 1)]


def _check_up(st: state.State) -> None:
    from fabscope.testbed.lifecycle import existing

    ex = existing(st.name)
    if not ex or len(ex[0].netns) != st.base_fabric().n_nodes:
        raise TestbedError(f"testbed {st.name} is not whole (its namespaces are missing); bring it up again")


def _reroute(st: state.State, p: Plan) -> int:
    """Rewrite every switch's routes to the tables of the fabric as it is now; returns routes changed."""
    f_now, lft_now = state.forwarding_now(st)
    base = p.fabric
    # the cut fabric numbers its links anew: map them back by (node, port, far node)
    key = {(int(base.link_src[l]), int(base.link_src_port[l]), int(base.link_dst[l])): l for l in range(base.n_links)}
    to_base = np.array([key[(int(f_now.link_src[l]), int(f_now.link_src_port[l]), int(f_now.link_dst[l]))]
                        for l in range(f_now.n_links)], np.int64)
    lft = np.where(lft_now >= 0, to_base[np.maximum(lft_now, 0)], -1)
    n = 0
    for j in range(base.n_switches):
        lines = commands.route_lines(p, j, lft)
        system.run(["ip", "-n", p.netns(base.n_hosts + j), "-batch", "-"], input="\n".join(lines) + "\n")
        n += len(lines)
    return n


def _shape(p: Plan, cable: int, capacity: float) -> None:
    for ns, ifname, _ in _ends(p, cable):
        line = commands.shaper(ifname, capacity / p.efficiency, p.mtu, change=True)[0]
        system.run(["tc", "-n", ns, *line.split()])


def degrade(name: str, link: str, rate: float, say=_quiet) -> int:  # type: ignore[no-untyped-def]
    """Shape the cable at ``link`` (node[port]) to ``rate`` bytes/s on the wire, both directions.

    Returns the cable index.  ``rate`` is as ``--rate`` of ``up``: a wire rate
    here, not scaled again.
    """
    system.require()
    st = state.load(name)
    p = plan_of(st)
    c = state.cable_of(p.fabric, link, p.fabric.params.get("original_hosts"))
    _check_up(st)
    cap = rate * p.efficiency
    _shape(p, c, cap)
    st.degraded[str(c)] = cap
    state.save(st)
    say(f"testbed {name}: {p.fabric.link_name(2 * c)} now {rate * 8 / 1e6:g}Mbit each way")
    return c


def cut(name: str, link: str, say=_quiet) -> int:  # type: ignore[no-untyped-def]
    """Take the cable at ``link`` down and reroute as the fabric's routing would; returns the cable index."""
    from fabscope.whatif import cut_cables

    system.require()
    st = state.load(name)
    p = plan_of(st)
    f = p.fabric
    c = state.cable_of(f, link, f.params.get("original_hosts"))
    _check_up(st)
    a = f"{f.node_names[f.link_src[2 * c]]}[{int(f.link_src_port[2 * c])}]"
    if a in st.cut:
        say(f"testbed {name}: {a} is already cut")
        return c
    new = st.cut + [a]
    try:
        cut_cables(f, new)
    except Exception as err:  # FabricError: a host left without a cable
        raise TestbedError(f"cannot cut {link}: {err}") from None
    st.cut = new
    state.forwarding_now(st)  # the routing must still reach every pair (RoutingError otherwise)
    for ns, ifname, _ in _ends(p, c):
        system.run(["ip", "-n", ns, "link", "set", ifname, "down"])
    n = _reroute(st, p)
    state.save(st)
    say(f"testbed {name}: cut {f.link_name(2 * c)}; {n} switch routes rewritten by {state.routing_engine(st)}")
    return c


def restore(name: str, link: str | None = None, say=_quiet) -> int:  # type: ignore[no-untyped-def]
    """Undo the faults of ``link`` (all faults if None); returns how many were undone."""
    system.require()
    st = state.load(name)
    p = plan_of(st)
    f = p.fabric
    _check_up(st)
    only = None if link is None else state.cable_of(f, link, f.params.get("original_hosts"))
    undone = 0
    for c in [int(x) for x in st.degraded if only is None or int(x) == only]:
        _shape(p, c, float(f.link_capacity[2 * c]))
        del st.degraded[str(c)]
        undone += 1
    keep, back = [], []
    for spec in st.cut:
        c = state.cable_of(f, spec)
        (back if only is None or c == only else keep).append(c)
    if back:
        for c in back:
            for ns, ifname, l in _ends(p, c):
                # up, and its permanent neighbour again (taking the port down flushed it: without it
                # the restored cable would blackhole every packet routed over it)
                system.run(["ip", "-n", ns, "-batch", "-"],
                           input=f"link set {ifname} up\n{commands.neigh_line(p, l)}\n")
        st.cut = [s for s in st.cut if state.cable_of(f, s) not in back]
        _reroute(st, p)
        undone += len(back)
    if link is not None and not undone:
        raise TestbedError(f"testbed {name}: {link} is neither degraded nor cut")
    state.save(st)
    say(f"testbed {name}: {undone} fault(s) undone")
    return undone
