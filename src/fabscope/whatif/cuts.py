"""What if a cable fails: which pairs lose bandwidth, and by how much.

A cut is ``node[port]`` (the cable at that port) or ``node`` (every cable of
a switch).  :func:`cut_cables` returns the fabric without them, its
forwarding tables (if any) carried over with the cut links' entries
emptied.  :func:`whatif` runs a pattern on the fabric before and after:
the routing after is the same engine on the cut fabric, as the subnet
manager would rerun it (``ftree`` without roots on a fabric that is no
longer a pure fat tree falls back to ``minhop``, as OpenSM's does).
Imported tables are what the subnet manager rewrites: then the new tables
given (``lft_after``, e.g. re-read after OpenSM rerouted in ibsim), or the
engine named by ``reroute``, or else the fabscope engine that reproduces
the imported tables exactly (ftree, updn, minhop or dor: see
:func:`tables_engine`); only when none does, min-hop, OpenSM's default,
stands in, and the report says so.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.traffic.patterns import shift
>>> f = fat_tree(k=2, levels=2)                     # 2 leaves of 2 hosts, 2 spines
>>> g, gone = cut_cables(f, ["s1-0000[3]"])         # one of leaf 0's two uplinks
>>> g.n_links, gone
(14, ['s1-0000[3] -- s2-0000[1]'])
>>> w = whatif(f, ["s1-0000[3]"], Placement.block(f, 4, ppn=1), shift(4, 1e6, k=2), routing="minhop")
>>> w.n_losing, round(w.worst_loss, 2)   # all 4 flows cross leaf 0's one remaining cable, 2 each way
(4, 0.5)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from fabscope.units import format_rate, plural, rate_digits, rate_unit
from fabscope.errors import FabricError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.result import Result
from fabscope.traffic.flows import Traffic

_CUT = re.compile(r"^\s*\"?([^\"\[\]]+?)\"?\s*(?:\[(\d+)\])?\s*$")


def parse_cut(spec: str) -> tuple[str, int | None]:
    """``'L12[17]'`` -> ``('L12', 17)``; ``'L12'`` -> ``('L12', None)``.

    >>> parse_cut('"L12"[17]'), parse_cut("dirA-line01")
    (('L12', 17), ('dirA-line01', None))
    """
    m = _CUT.match(spec)
    if not m:
        raise FabricError(f"cannot read cut {spec!r}: write node[port], e.g. L12[17], or a switch name")
    return m.group(1), int(m.group(2)) if m.group(2) else None


def cut_cables(fabric: Fabric, cuts: Sequence[str]) -> tuple[Fabric, list[str]]:
    """The fabric without the cables ``cuts`` name, and a description of each cable cut."""
    drop = np.zeros(fabric.n_links // 2, bool)
    for spec in cuts:
        node, port = parse_cut(spec)
        if node not in fabric.node_index:
            raise FabricError(f"cut {spec!r}: no node {node!r} in fabric {fabric.name!r}")
        v = fabric.node_index[node]
        hit = fabric.link_src == v
        if port is not None:
            hit &= fabric.link_src_port == port
            if not hit.any():
                raise FabricError(f"cut {spec!r}: {node} has no cable on port {port}")
        elif v < fabric.n_hosts:
            raise FabricError(f"cut {spec!r}: name a host's port, e.g. {node}[1]")
        drop[np.flatnonzero(hit) // 2] = True
    keep_c = np.flatnonzero(~drop)
    keep = np.sort(np.r_[2 * keep_c, 2 * keep_c + 1])
    host_left = np.bincount(fabric.link_src[keep][fabric.link_src[keep] < fabric.n_hosts], minlength=fabric.n_hosts)
    if np.any(host_left == 0):
        h = int(np.flatnonzero(host_left == 0)[0])
        raise FabricError(f"the cuts leave host {fabric.node_names[h]!r} without a cable; every pair with it "
                          "would lose everything")
    gone = [_cable_name(fabric, 2 * int(c)) for c in np.flatnonzero(drop)]
    new_id = np.full(fabric.n_links, -1, np.int64)
    new_id[keep] = np.arange(len(keep))
    # a host port whose cable is cut is no destination any more: its table column and LID go
    ports_left = ~drop[fabric.terminal_uplink // 2]
    lft = None
    if fabric.lft is not None:
        lft = np.where(fabric.lft >= 0, new_id[np.maximum(fabric.lft, 0)], -1).astype(np.int32)[:, ports_left]
    tlid = None if fabric.terminal_lid is None or fabric.single_port else fabric.terminal_lid[ports_left]
    g = replace(fabric, link_src=fabric.link_src[keep], link_dst=fabric.link_dst[keep],
                link_capacity=fabric.link_capacity[keep], link_latency=fabric.link_latency[keep],
                link_src_port=fabric.link_src_port[keep], link_dst_port=fabric.link_dst_port[keep],
                lft=lft, terminal_lid=tlid, params={**fabric.params, "cut": list(gone)})
    return g, gone


def link_map(fabric: Fabric, cut: Fabric) -> np.ndarray:
    """``new[i]``: the id in ``cut`` (made by :func:`cut_cables` from ``fabric``) of link ``i``, -1 if cut.

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2)
    >>> g, _ = cut_cables(f, ["s1-0000[3]"])
    >>> m = link_map(f, g)
    >>> int((m < 0).sum()), bool(np.all(g.link_src[m[m >= 0]] == f.link_src[m >= 0]))
    (2, True)
    """
    # the cut fabric keeps the other links, ends and ports unchanged: match them by those
    key = lambda f: (f.link_src.astype(np.int64) * f.n_nodes + f.link_dst) * 4096 + f.link_src_port  # noqa: E731
    new_keys = key(cut)
    order = np.argsort(new_keys, kind="stable")
    old = key(fabric)
    pos = np.clip(np.searchsorted(new_keys[order], old), 0, len(order) - 1)
    found = new_keys[order][pos] == old
    return np.where(found, order[pos], -1)


def _cable_name(f: Fabric, i: int) -> str:
    a, b = f.node_names[f.link_src[i]], f.node_names[f.link_dst[i]]
    return f"{a}[{int(f.link_src_port[i])}] -- {b}[{int(f.link_dst_port[i])}]"


@dataclass(frozen=True, eq=False)
class WhatIf:
    before: Result
    after: Result
    cut: list[str]
    routing_after: str
    #: per pair (same order in both results): bandwidth before and after, bytes/s
    bw_before: np.ndarray
    bw_after: np.ndarray
    #: per pair, after the cut with only the cut cables' flows moved to their new paths (None: not known)
    bw_own: np.ndarray | None = None

    @property
    def loss(self) -> np.ndarray:
        """Fraction of its bandwidth each pair loses (negative: gains)."""
        return 1 - self.bw_after / self.bw_before

    @property
    def n_losing(self) -> int:
        return int(np.sum(self.loss > 1e-6))

    @property
    def worst_loss(self) -> float:
        return float(self.loss.max(initial=0.0))

    def lines(self, top: int = 15) -> list[str]:
        """A plain-text report: summaries by class before and after, then the pairs that lose most."""
        rows = list(zip(self.before.summary(scale=1.0), self.after.summary(scale=1.0)))
        unit, size = rate_unit(max((r.max for pair in rows for r in pair), default=0.0))   # one unit a table
        out = [f"cut: {', '.join(self.cut)}   routing after: {self.routing_after}",
               f"{'class':<14}{'pairs':>7}  {f'before Max/Avg/Min {unit}':>26}  {f'after Max/Avg/Min {unit}':>26}"]
        for b, a in rows:
            out.append(f"{b.label:<14}{b.count:>7}  "
                       + " ".join(f"{rate_digits(x / size):>8}" for x in (b.max, b.avg, b.min)) + "  "
                       + " ".join(f"{rate_digits(x / size):>8}" for x in (a.max, a.avg, a.min)))
        loss = self.loss
        out.append(f"{self.n_losing} of {plural(len(loss), 'pair')} lose"
                   + ("s" if len(loss) == 1 else "") + " bandwidth"
                   + (f"; worst loses {100 * self.worst_loss:.0f}%" if self.n_losing else ""))
        total = float(self.bw_before.sum())
        if self.bw_own is not None and total > 0:
            own = 1 - float(self.bw_own.sum()) / total
            whole = 1 - float(self.bw_after.sum()) / total
            out.append(f"aggregate lost: {100 * own:.2f}% with only the cut cables' flows moved to their new "
                       f"paths (the cut's own loss), {100 * whole:.2f}% with the whole fabric rerouted "
                       f"({100 * (whole - own):+.2f}% from rerouting the rest)")
        p = self.before.pairs
        for i in np.argsort(-loss, kind="stable")[:top]:
            if loss[i] <= 1e-6:
                break
            out.append(f"  {p['src_host'][i]} -> {p['dst_host'][i]}: {format_rate(self.bw_before[i])} -> "
                       f"{format_rate(self.bw_after[i])} (-{100 * loss[i]:.0f}%)")
        return out


#: engines tried, in this order, to explain imported tables
SM_ENGINES = ("ftree", "updn", "minhop", "dor")


def tables_engine(fabric: Fabric) -> str | None:
    """The first of :data:`SM_ENGINES` whose tables equal the fabric's own, entry for entry.

    >>> from dataclasses import replace
    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.routing import make_routing
    >>> f = fat_tree(k=4, levels=3)
    >>> tables_engine(replace(f, lft=make_routing(f, "minhop").lft))   # ftree differs here, updn matches
    'updn'
    >>> tables_engine(replace(f, lft=make_routing(f, "ftree").lft))
    'ftree'
    """
    from fabscope.errors import RoutingError
    from fabscope.routing import make_routing

    if fabric.lft is None:
        return None
    for name in SM_ENGINES:
        try:
            r = make_routing(fabric, name)
        except RoutingError:
            continue
        lft = getattr(r, "lft", None)
        if lft is not None and np.array_equal(lft, fabric.lft):
            return name
    return None


#: a computed engine's subnet-manager counterpart, which reroutes a fabric it cannot route
SM_COUNTERPART = {"dmodk": "ftree"}


def reroute(fabric: Fabric, name: str, check: tuple[np.ndarray, np.ndarray] | None = None):
    """The routing OpenSM's engine ``name`` gives the (cut) fabric, and a label saying which it is.

    ``check``: (source hosts, destination hosts) the routing must route.  An engine that cannot
    route the cut fabric hands over as a subnet manager would: ftree, on what is no longer a pure
    fat tree, to min-hop.  D-mod-K is computed, not run by a subnet manager: a cut fabric is
    rerouted by its counterpart, OpenSM's ftree, even where the textbook rule could still route it.

    >>> from fabscope.fabric.generators import fat_tree
    >>> g, _ = cut_cables(fat_tree(k=4, levels=2), ["s1-0000[5]"])
    >>> r, label = reroute(g, "dmodk", (np.arange(16), np.arange(16)[::-1]))
    >>> r.name, label.split(" (")[0]
    ('minhop', 'minhop')
    >>> print(label)
    minhop (dmodk cannot route the cut fabric, and OpenSM's ftree, its subnet-manager counterpart, falls back to minhop: switch s2-0000 has no route to h0000 (from h0015); not a pure fat tree: s1-0001 has 4 up port groups where s1-0000 has 3)
    >>> g, _ = cut_cables(fat_tree(k=4, levels=2), ["s2-0000"])      # a whole top switch: still a pure tree
    >>> print(reroute(g, "dmodk")[1])
    ftree (the subnet manager's counterpart of dmodk, which reroutes the cut fabric)
    """
    from fabscope.errors import RoutingError
    from fabscope.routing import make_routing, parse_engine
    from fabscope.routing.ftree import FtreeRefused

    base = parse_engine(name)[0]
    nxt = SM_COUNTERPART.get(base)
    try:
        r = make_routing(fabric, name)
        if check is not None:
            r.routes(*check)
    except FtreeRefused as err:
        return make_routing(fabric, "minhop"), f"minhop (OpenSM's ftree falls back: {err.why})"
    except RoutingError as err:
        why = str(err).removeprefix(f"{base}: ")
        if nxt is None:
            return make_routing(fabric, "minhop"), (f"minhop (standing in for the subnet manager: {base} "
                                                    f"cannot route the cut fabric: {why})")
    else:
        # The textbook rule may still compute what a cut leaves (a whole top switch gone), but no subnet
        # manager runs it: OpenSM reroutes with its own engine, whose routes differ there or which falls back.
        if nxt is None or not fabric.params.get("cut"):
            return r, name
        why = None
    r, label = reroute(fabric, nxt, check)
    if r.name == nxt:
        return r, (f"{nxt} (the subnet manager's counterpart of {base}, which "
                   + ("reroutes the cut fabric)" if why is None else f"cannot route the cut fabric: {why})"))
    fallback = label.split(": ", 1)[-1].rstrip(")") + ")"
    if why is None:
        return r, (f"{r.name} (OpenSM's {nxt}, the subnet manager's counterpart of {base}, falls back to "
                   f"{r.name}: {fallback}")
    return r, (f"{r.name} ({base} cannot route the cut fabric, and OpenSM's {nxt}, its subnet-manager "
               f"counterpart, falls back to {r.name}: {why}; {fallback}")


def short_label(label: str) -> str:
    """A :func:`reroute` label without the reasons, to count cables by how they were rerouted.

    >>> short_label("minhop (OpenSM's ftree falls back: not a pure fat tree: s1 has 4 up port groups)")
    "minhop (OpenSM's ftree falls back)"
    >>> short_label("dmodk")
    'dmodk'
    """
    head = label.split(":", 1)[0]
    return head + ")" if "(" in head and ":" in label else head


class KeptRoutes:
    """Routing of a cut fabric that keeps every flow's route from before the cut, except the flows
    that crossed a cut cable: those take ``after``'s routes.  What the cut cable's own flows lose,
    apart from what rerouting the whole fabric does to everyone else.

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.routing import make_routing
    >>> f = fat_tree(k=4, levels=2)
    >>> g, _ = cut_cables(f, ["s1-0000[5]"])
    >>> kept = KeptRoutes(make_routing(f, "dmodk"), make_routing(g, "minhop"), link_map(f, g))
    >>> r = kept.routes(np.array([0, 4]), np.array([5, 9]))
    >>> bool(np.all(r.link >= 0)), r.n_flows
    (True, 2)
    """

    def __init__(self, before, after, new_id: np.ndarray) -> None:
        self.before, self.after, self.new_id = before, after, new_id
        self.name = f"{after.name} for the cut cables' flows, the rest as before"

    def routes(self, src: np.ndarray, dst: np.ndarray):
        return self._kept(src, dst, False)

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray):
        """Between host ports of the cut fabric (``after``'s), each found in ``before``'s by its cable."""
        return self._kept(src, dst, True)

    def _before_terminals(self, t: np.ndarray) -> np.ndarray:
        fb, fa = self.before.fabric, self.after.fabric
        if fb.single_port and fa.single_port:
            return t
        ok = self.new_id >= 0
        old = np.full(fa.n_links, -1, np.int64)
        old[self.new_id[ok]] = np.flatnonzero(ok)
        term_of = np.full(fb.n_links, -1, np.int64)
        term_of[fb.terminal_uplink] = np.arange(fb.n_terminals)
        return term_of[old[fa.terminal_uplink[t]]]

    def _kept(self, src: np.ndarray, dst: np.ndarray, terminals: bool):
        from fabscope.routing.routes import Routes, terminal_routes

        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if terminals:
            rb = terminal_routes(self.before, self._before_terminals(src), self._before_terminals(dst))
        else:
            rb = self.before.routes(src, dst)
        nl = self.new_id[rb.link]
        hit = np.zeros(len(src), bool)
        hit[rb.flow[nl < 0]] = True
        keep = ~hit[rb.flow]
        moved = np.flatnonzero(hit)
        flow, link, weight = [rb.flow[keep]], [nl[keep]], [rb.weight[keep]]
        hops = np.asarray(rb.hops, dtype=float).copy()
        if len(moved):
            ra = (terminal_routes(self.after, src[moved], dst[moved]) if terminals
                  else self.after.routes(src[moved], dst[moved]))
            flow.append(moved[ra.flow])
            link.append(ra.link)
            weight.append(ra.weight)
            hops[moved] = ra.hops
        f = np.concatenate(flow)
        order = np.argsort(f, kind="stable")           # each flow's hops stay in order
        return Routes(len(src), f[order], np.concatenate(link)[order].astype(np.int64),
                      np.concatenate(weight)[order], hops.astype(rb.hops.dtype))


def whatif(fabric: Fabric, cuts: Sequence[str], placement: Placement, traffic: Traffic,
           routing: str | None = None, lft_after: np.ndarray | None = None,
           fabric_after: Fabric | None = None, reroute_with: str | None = None) -> WhatIf:
    """Run ``traffic`` before and after cutting ``cuts`` (see the module docstring).

    ``reroute_with``: the subnet manager's engine for imported tables (default: :func:`tables_engine`).
    """
    from fabscope.model.simulate import simulate
    from fabscope.routing import default_engine, make_routing

    name = routing or default_engine(fabric)
    if fabric_after is None:
        after_f, gone = cut_cables(fabric, cuts)
    else:
        after_f, gone = fabric_after, list(cuts)
    if name.split(":")[0] == "tables":
        if lft_after is not None or (fabric_after is not None and fabric_after.lft is not None):
            table = lft_after if lft_after is not None else after_f.lft
            router, label = make_routing(after_f, "tables", lft=table), "tables (rerouted)"
        else:
            engine = reroute_with or tables_engine(fabric)
            if engine is None:
                router, label = make_routing(after_f, "minhop"), ("minhop (standing in for the subnet manager: "
                                                                  "no fabscope engine reproduces these tables)")
            else:
                router, label = reroute(after_f, engine)
                if not reroute_with:         # the engine may have handed over (ftree to min-hop): say whose tables
                    label += (" (the engine that reproduces the imported tables)" if router.name == engine
                              else f"; {engine} reproduces the imported tables")
    else:
        check = (placement.host[traffic.src].astype(np.int64), placement.host[traffic.dst].astype(np.int64))
        router, label = reroute(after_f, name, check)
    before_router = make_routing(fabric, name)
    before = simulate(fabric, placement, traffic, before_router)
    own = None
    if fabric_after is None:
        kept = KeptRoutes(before_router, router, link_map(fabric, after_f))
        own = np.asarray(simulate(after_f, placement, traffic, kept).pairs["bandwidth"], float)
    else:                            # same hosts by name, maybe in another fabric: place ranks by name
        placement = Placement.from_hostlist(after_f, [fabric.host_names[h] for h in placement.host])
    after = simulate(after_f, placement, traffic, router, meta={"rerouted_by": label})
    return WhatIf(before, after, gone, label, np.asarray(before.pairs["bandwidth"], float),
                  np.asarray(after.pairs["bandwidth"], float), own)
