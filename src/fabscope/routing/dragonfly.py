"""Dragonfly routing as dragonflies route: minimal local-global-local, Valiant, UGAL.

The rules follow the public descriptions:

* **minimal** (Kim, Dally, Scott, Abts, "Technology-driven, highly-scalable
  dragonfly topology", ISCA 2008, section 4): a flow between groups takes at
  most one global cable: a local hop to the router of its group that holds a
  cable to the destination group, that cable, a local hop to the destination
  router.  Min-hop routing over the graph is not this: it takes two global
  cables where that saves a local hop.
* **valiant** (the same paper, after Valiant and Brebner): a flow between
  groups first goes minimally to a random intermediate group (seeded, neither
  its source nor its destination group), then minimally from the router it
  arrives at to its destination: two global cables, up to five router hops.
  ``via="all"`` draws the group among all ``g``, as Valiant's scheme draws its
  intermediate among all nodes and BookSim2 its intermediate node: a draw of the
  flow's own source or destination group routes it minimally (2 in ``g``), over
  the cable between its two groups that a third group never crosses.
* **ugal-l** / **ugal-g** (Universal Globally-Adaptive Load-balanced routing;
  Jiang, Kim, Dally, "Indirect adaptive routing on large scale interconnection
  networks", ISCA 2009, for the local and global variants): each flow takes
  its minimal path or its Valiant path, whichever is less loaded weighted by
  its router hops: minimal when ``q_min * H_min <= q_val * H_val``.

Which global cable: when groups are joined by several cables, a router that
holds cables to the destination group takes one of its own (no local hop),
the ``x mod k``-th of its ``k`` in link order; a router that holds none takes
the ``x mod k``-th of the ``k`` cables between the two groups in link order
and goes to the router that holds it, which then takes its own pick; ``x`` is a
hash of the destination host and the two groups (:func:`cable_key`).  So every
router's next hop depends on the destination alone, as forwarding tables hold
it; the hash keeps groups from choosing alike.  That is ``minimal``'s (and Valiant's hops').
UGAL's minimal side is a router's spread over its minimal paths instead: each flow between groups
joined by several cables takes every one of them, an even share on each (the local hop to the
router holding it, the cable, the local hop to the destination router), as packets each picking
one would; by one cable a destination, a group shift's flows of one router all met on one cable
and one local link behind it, and UGAL saturated below Valiant (0.24 against 0.53 with 7 cables
a pair of groups).  UGAL in time (:mod:`fabscope.dynamic.ugal`) takes the same minimal side
(``cables="all"``).

The static UGAL (the flow model has no queues): the flows are placed one by
one in an order drawn from ``seed``, each offering ``load`` of its injection
link (1: all of it).  The queue a flow would see on a link is what the link is
offered beyond its capacity, the flows placed on it so far plus this one: a
link offered less than it carries holds no standing queue, one offered more
grows its queue by the excess (a utilisation taken for a queue made UGAL keep
the minimal cable 5/3 as busy as Valiant's, by the hop weights, where a router
with queues fills it to capacity and sends the rest round).  On the Valiant
side, the mean over its intermediate groups (a packet takes one of them, and
is whole on it).  ``ugal-l`` sees the queues a router's own outputs show: the
first router-to-router link of each path and, through credit flow control
(a full buffer downstream stops its upstream link), the links up to the path's
first global cable; ``ugal-g`` sees the busiest router-to-router link of each
path (every queue it would pass).  A flow within a group always routes
minimally.  ``parts=N`` places each flow in N parts, each choosing: towards
the per-packet choice (see docs/routing.md for the saturation against N).

>>> from fabscope.fabric.generators import dragonfly
>>> f = dragonfly(a=4, p=2, h=2, g=9)
>>> r = DragonflyRouting(f, "minimal").routes(np.array([0]), np.array([71]))
>>> [f.node_names[f.link_dst[l]] for l in r.path(0)]
['g00r00', 'g00r03', 'g08r00', 'g08r03', 'g08n007']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.routes import Routes, first_links
from fabscope.routing.split import split_routes

MODES = ("minimal", "valiant", "ugal-l", "ugal-g")
#: the hierarchy level that names a dragonfly's groups (the generator's)
GROUP_LEVEL = "group"
#: most cable picks a spread Valiant flow is split over per intermediate group (see DragonflyRouting.draws)
CABLE_DRAWS = 4


def is_dragonfly(fabric: Fabric) -> bool:
    """Built as a dragonfly (the generator's parameters say so)."""
    return fabric.params.get("generator") == "dragonfly" and GROUP_LEVEL in fabric.groups


@dataclass(frozen=True, eq=False)
class Layout:
    """Where a dragonfly's routers and cables are: groups, local and global links."""

    #: group of each router (switch index)
    group: np.ndarray
    #: index of each router within its group
    local_index: np.ndarray
    #: local[s, j]: link from router s to the j-th router of its group (-1: none or itself)
    local: np.ndarray
    #: global links sorted by (source group, destination group, link id), and their sort keys
    glinks: np.ndarray
    gkeys: np.ndarray
    #: the same links sorted by (source router, destination group, link id), and their keys
    olinks: np.ndarray
    okeys: np.ndarray
    n_groups: int


def layout(fabric: Fabric) -> Layout:
    """Read a dragonfly's groups from its hosts and its cables from the links.

    >>> from fabscope.fabric.generators import dragonfly
    >>> lay = layout(dragonfly(a=4, p=2, h=2, g=9))
    >>> lay.n_groups, lay.group[:5].tolist(), len(lay.glinks)
    (9, [0, 0, 0, 0, 1], 72)
    """
    if GROUP_LEVEL not in fabric.groups:
        raise RoutingError(f"dragonfly routing needs the fabric's groups; {fabric.name!r} has no "
                           f"{GROUP_LEVEL!r} level")
    h, n_sw = fabric.n_hosts, fabric.n_switches
    host_group = np.asarray(fabric.groups[GROUP_LEVEL], dtype=np.int64)
    group = np.full(n_sw, -1, np.int64)
    sw = fabric.host_switch.astype(np.int64) - h
    group[sw] = host_group
    if np.any(group[sw] != host_group):
        i = int(np.flatnonzero(group[sw] != host_group)[0])
        raise RoutingError(f"dragonfly routing: router {fabric.node_names[sw[i] + h]} has hosts of two groups")
    if np.any(group < 0):
        raise RoutingError(f"dragonfly routing: router {fabric.node_names[int(np.flatnonzero(group < 0)[0]) + h]} "
                           "has no host, so no group")
    n_groups = int(group.max()) + 1
    order = np.lexsort((np.arange(n_sw), group))
    counts = np.bincount(group, minlength=n_groups)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    local_index = np.empty(n_sw, np.int64)
    local_index[order] = np.arange(n_sw) - np.repeat(starts, counts)
    rr = np.flatnonzero((fabric.link_src >= h) & (fabric.link_dst >= h))
    a, b = fabric.link_src[rr].astype(np.int64) - h, fabric.link_dst[rr].astype(np.int64) - h
    same = group[a] == group[b]
    local = np.full((n_sw, int(counts.max())), -1, np.int64)
    loc = rr[same][::-1]                      # the lowest link id written last: it wins among parallel cables
    local[a[same][::-1], local_index[b[same][::-1]]] = loc
    gl = rr[~same]
    ga, gb = group[a[~same]], group[b[~same]]
    o = np.lexsort((gl, gb, ga))
    glinks, gkeys = gl[o], (ga * n_groups + gb)[o]
    ra = a[~same]
    o = np.lexsort((gl, gb, ra))
    olinks, okeys = gl[o], (ra * n_groups + gb)[o]
    return Layout(group, local_index, local, glinks, gkeys, olinks, okeys, n_groups)


@dataclass(eq=False)
class DragonflyRouting:
    """Route flows on a dragonfly by ``mode``: minimal, valiant, ugal-l or ugal-g (see the module)."""

    fabric: Fabric
    mode: str = "minimal"
    seed: int = 0
    #: Valiant's choice of intermediate group: "packet" (an even spread over all) or "flow" (one, seeded)
    spread: str = "packet"
    #: UGAL: each flow placed in this many equal parts, each choosing (1: the whole flow chooses once)
    parts: int = 1
    #: UGAL: the share of its injection link each flow offers as the choices are made (1: all of it)
    load: float = 1.0
    #: the minimal path's cable between two groups: "tables" (the one its tables give, see the module;
    #: ``minimal``'s and ``valiant``'s default) or "all" (every cable, an even share each: UGAL's default
    #: minimal side, which UGAL in time runs as a path); None: the mode's default
    cables: str | None = None
    #: Valiant's intermediate groups: "others" (neither the flow's source nor its destination group) or
    #: "all" (any of the g groups, as Valiant's scheme and BookSim2 draw; a draw of the flow's own
    #: group routes minimally)
    via: str = "others"
    name: str = field(init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise RoutingError(f"unknown dragonfly routing {self.mode!r}; choose from {', '.join(MODES)}")
        if self.spread not in ("packet", "flow"):
            raise RoutingError(f"{self.mode}: spread must be packet or flow, got {self.spread!r}")
        if not 1 <= self.parts <= 1024:
            raise RoutingError(f"{self.mode}: parts must be a whole number from 1 to 1024, got {self.parts}")
        if self.cables is None:
            self.cables = "all" if self.mode.startswith("ugal") else "tables"
        if self.cables not in ("tables", "all"):
            raise RoutingError(f"{self.mode}: cables must be tables or all, got {self.cables!r}")
        if self.mode == "valiant" and self.cables == "all":
            raise RoutingError("valiant: cables=all is a minimal side's (minimal, ugal-l, ugal-g); Valiant's "
                               "hops take the pair's pick of cable")
        if self.via not in ("others", "all"):
            raise RoutingError(f"{self.mode}: via must be others or all, got {self.via!r}")
        if self.via == "all" and self.mode != "valiant":
            raise RoutingError(f"{self.mode}: via=all is valiant's (UGAL's Valiant side goes through a third group)")
        if not 0 < self.load <= 1:
            raise RoutingError(f"{self.mode}: load must be a share of the injection link in (0, 1], got {self.load}")
        self.name = self.mode

    @cached_property
    def lay(self) -> Layout:
        return layout(self.fabric)

    # ---- paths as columns of link ids (-1: no hop) ------------------------------------------
    def _local(self, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Link from router s to router t of its group; -1 where s == t."""
        lay = self.lay
        link = lay.local[s, lay.local_index[t]]
        miss = (link < 0) & (s != t)
        if miss.any():
            i = int(np.flatnonzero(miss)[0])
            h = self.fabric.n_hosts
            raise RoutingError(f"dragonfly routing: routers {self.fabric.node_names[s[i] + h]} and "
                               f"{self.fabric.node_names[t[i] + h]} of one group are not joined")
        return np.where(s == t, -1, link)

    def _cable(self, s: np.ndarray, to_group: np.ndarray, key: np.ndarray, own_first: bool = True) -> np.ndarray:
        """The global cable router ``s`` sends by towards ``to_group`` (see the module: its own first,
        unless not ``own_first``: then the pair's pick, whoever holds it)."""
        lay = self.lay
        g = lay.n_groups
        key = cable_key(key, lay.group[s] * g + to_group)
        ok = s * g + to_group
        lo, hi = np.searchsorted(lay.okeys, ok), np.searchsorted(lay.okeys, ok, side="right")
        own = hi > lo
        out = lay.olinks[np.minimum(lo + key % np.maximum(hi - lo, 1), len(lay.olinks) - 1)] if len(lay.olinks) \
            else np.zeros(len(s), np.int64)
        gk = lay.group[s] * g + to_group
        glo, ghi = np.searchsorted(lay.gkeys, gk), np.searchsorted(lay.gkeys, gk, side="right")
        none = ghi == glo
        if none.any():
            i = int(np.flatnonzero(none)[0])
            raise RoutingError(f"dragonfly routing: no global cable from group {int(lay.group[s[i]])} "
                               f"to group {int(to_group[i])}")
        via = lay.glinks[np.minimum(glo + key % np.maximum(ghi - glo, 1), len(lay.glinks) - 1)]
        return np.where(own & own_first, out, via)

    def _to_group(self, s: np.ndarray, to_group: np.ndarray, key: np.ndarray, own_first: bool = True):
        """Columns [local, global] from router s into ``to_group``, and the router it arrives at."""
        h = self.fabric.n_hosts
        x = self.fabric.link_src[self._cable(s, to_group, key, own_first)].astype(np.int64) - h
        c = self._cable(x, to_group, key)      # the router holding it takes its own pick: by destination
        return [self._local(s, x), c], self.fabric.link_dst[c].astype(np.int64) - h

    def _minimal(self, s: np.ndarray, t: np.ndarray, key: np.ndarray) -> list[np.ndarray]:
        """Columns local-global-local from router s to router t (one local column within a group)."""
        lay = self.lay
        inter = lay.group[s] != lay.group[t]
        cols = [np.full(len(s), -1, np.int64) for _ in range(3)]
        i = np.flatnonzero(~inter)
        cols[1][i] = self._local(s[i], t[i])
        i = np.flatnonzero(inter)
        (l0, c), y = self._to_group(s[i], lay.group[t[i]], key[i])
        cols[0][i], cols[1][i], cols[2][i] = l0, c, self._local(y, t[i])
        return cols

    def _minimal_spread(self, s: np.ndarray, t: np.ndarray, key: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """UGAL's minimal side: ``(owner, weight, cols)``, each flow between groups over every cable
        joining its two groups, an even share on each (each packet picks one, as a router spreads
        over its minimal paths): the local hop to the router holding the cable, the cable, the local
        hop to the destination router; ``cols`` 3 rows by sub-path.  A flow within a group, or
        between groups joined by one cable, keeps its one minimal path (:meth:`_minimal`'s); so does
        every flow with ``cables="tables"``."""
        if self.cables == "tables":
            return np.arange(len(s)), np.ones(len(s)), np.stack(self._minimal(s, t, key))
        lay, f = self.lay, self.fabric
        g, h, n = lay.n_groups, f.n_hosts, len(s)
        gs, gt = lay.group[s], lay.group[t]
        gk = gs * g + gt
        glo, ghi = np.searchsorted(lay.gkeys, gk), np.searchsorted(lay.gkeys, gk, side="right")
        reps = np.where(gs != gt, np.maximum(ghi - glo, 1), 1)
        owner = np.repeat(np.arange(n), reps)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(reps) - reps, reps)
        cols = np.full((3, len(owner)), -1, np.int64)
        one = reps[owner] == 1
        i = np.flatnonzero(one)
        cols[:, i] = np.stack(self._minimal(s[owner[i]], t[owner[i]], key[owner[i]]))
        i = np.flatnonzero(~one)
        c = lay.glinks[glo[owner[i]] + j[i]]
        x, y = f.link_src[c].astype(np.int64) - h, f.link_dst[c].astype(np.int64) - h
        cols[0, i], cols[1, i], cols[2, i] = self._local(s[owner[i]], x), c, self._local(y, t[owner[i]])
        return owner, 1.0 / reps[owner], cols

    def _valiant(self, s: np.ndarray, t: np.ndarray, key: np.ndarray, mid: np.ndarray) -> list[np.ndarray]:
        """Columns through group ``mid`` (five: local, global, local, global, local); minimal where mid < 0.

        Out of the intermediate group by the pair's pick of cable, not the arrival router's own: the
        generator lays a group's cables to consecutive groups on neighbouring ports, so the router a
        path arrives at from one group mostly holds a cable to the next, and by their own cables the
        paths of a group shift came into the destination group at one router (9 flows' worth on one
        local link of a 64-port dragonfly, against 2.4 by the pick).  The classic Valiant path has
        that local hop (five router-to-router hops)."""
        cols = [np.full(len(s), -1, np.int64) for _ in range(5)]
        i = np.flatnonzero(mid >= 0)
        first, y = self._to_group(s[i], mid[i], key[i])
        (l2, c2), z = self._to_group(y, self.lay.group[t[i]], key[i], own_first=False)
        rest = [l2, c2, self._local(z, t[i])]
        for k, col in enumerate(first + rest):
            cols[k][i] = col
        j = np.flatnonzero(mid < 0)
        for k, col in enumerate(self._minimal(s[j], t[j], key[j])):
            cols[k + 1][j] = col
        return cols

    def _subpaths(self, gs: np.ndarray, gt: np.ndarray, rng: np.random.Generator):
        """Valiant's intermediate groups: ``(owner, mid, weight)`` per sub-path, ``owner`` indexing the
        flows.  ``spread="packet"``: every group other than the flow's two, each with an even share (each
        packet draws its own, as in the papers; a flow of many packets spreads evenly);
        ``spread="flow"``: one group per flow drawn from the seed.  ``via="all"``: among all ``g``
        groups, a draw of the flow's own two taking the minimal path (``mid`` -1), as Valiant's scheme
        draws its intermediate among all and BookSim2 its intermediate node.  A flow within a group
        (or with no third group) gets one sub-path, ``mid`` -1: minimal."""
        g, n = self.lay.n_groups, len(gs)
        lo, hi = np.minimum(gs, gt), np.maximum(gs, gt)
        between = (gs != gt) & (g >= 3)
        draw = g if self.via == "all" else g - 2
        if self.spread == "flow":
            m = rng.integers(0, max(draw, 1), n)
            reps = np.ones(n, np.int64)
            owner = np.arange(n)
        else:
            reps = np.where(between, draw, 1)
            owner = np.repeat(np.arange(n), reps)
            m = np.arange(len(owner)) - np.repeat(np.cumsum(reps) - reps, reps)
        if self.via == "all":                  # the flow's own groups: minimal
            m = np.where((m == gs[owner]) | (m == gt[owner]), -1, m)
        else:
            m = m + (m >= lo[owner])           # skip the flow's two groups, lower first
            m = m + (m >= hi[owner])
        mid = np.where(between[owner], m, -1)
        return owner, mid, 1.0 / reps[owner]

    def candidates(self, src: np.ndarray, dst: np.ndarray):
        """Each (source host, destination host)'s minimal and Valiant router-to-router links:
        ``(short, owner, mid, share, val)``: ``short`` UGAL's minimal sub-paths as ``(owner, share,
        cols)``, 3 rows by sub-path (-1: no hop; :meth:`_minimal_spread`), ``val`` 5 rows by Valiant
        sub-path, each sub-path of pair ``owner`` through group ``mid`` (-1: minimal) with its
        ``share`` of the flow; the sub-paths as :meth:`routes` draws them from the seed."""
        f = self.fabric
        h = f.n_hosts
        s = f.host_switch[np.asarray(src, np.int64)].astype(np.int64) - h
        t = f.host_switch[np.asarray(dst, np.int64)].astype(np.int64) - h
        key = np.asarray(dst, np.int64)
        _, owner, mid, w, val = self._candidates(s, t, key, np.random.default_rng(self.seed))
        return self._minimal_spread(s, t, key), owner, mid, w, val

    @cached_property
    def draws(self) -> int:
        """Cable draws per intermediate group of a spread Valiant flow: a packet picks among the cables
        between two groups too, so with several a flow's share through a group is split over this
        many picks (keys), up to :data:`CABLE_DRAWS`; 1 where groups are joined by one cable."""
        lay = self.lay
        if self.spread != "packet" or not len(lay.gkeys):
            return 1
        return int(min(CABLE_DRAWS, np.bincount(lay.gkeys).max()))

    def _candidates(self, s: np.ndarray, t: np.ndarray, key: np.ndarray, rng: np.random.Generator):
        owner, mid, w = self._subpaths(self.lay.group[s], self.lay.group[t], rng)
        k = self.draws
        if k > 1:                              # each through-group sub-path once per draw, keyed apart
            split = mid >= 0
            reps = np.where(split, k, 1)
            draw = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
            owner, mid, w = np.repeat(owner, reps), np.repeat(mid, reps), np.repeat(w / reps, reps)
            vkey = key[owner] + draw * (int(key.max()) + 1)
        else:
            vkey = key[owner]
        val = np.stack(self._valiant(s[owner], t[owner], vkey, mid))
        return np.stack(self._minimal(s, t, key)), owner, mid, w, val

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        f = self.fabric
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n, h = len(src), f.n_hosts
        act = np.flatnonzero(src != dst)
        s = f.host_switch[src[act]].astype(np.int64) - h
        t = f.host_switch[dst[act]].astype(np.int64) - h
        key = dst[act]
        up = first_links(f, src[act], dst[act]).astype(np.int64)
        if self.mode == "minimal" and self.cables == "all":
            owner, w, m = self._minimal_spread(s, t, key)
        elif self.mode == "minimal":
            m, owner, w = np.stack(self._minimal(s, t, key)), np.arange(len(act)), np.ones(len(act))
        else:
            rng = np.random.default_rng(self.seed)     # here only: minimal draws nothing (numpy.random unloaded)
            _, owner, mid, w, m = self._candidates(s, t, key, rng)
            if self.mode != "valiant":
                between = np.bincount(owner, weights=mid >= 0, minlength=len(act)) > 0
                mown, mw, short = self._minimal_spread(s, t, key)
                x = self._ugal((mown, mw, short), m, owner, w, between, self.load * f.link_capacity[up], rng)
                keep = x[owner] > 0
                mins = np.flatnonzero(x[mown] < 1)
                pad = np.full((1, len(mown)), -1, np.int64)
                m = np.concatenate([np.concatenate([pad, short, pad])[:, mins], m[:, keep]], axis=1)
                w = np.r_[(mw * (1.0 - x[mown]))[mins], (w * x[owner])[keep]]
                owner = np.r_[mown[mins], owner[keep]]
        up = up[owner]
        down = _host_downlinks(f, dst[act])[owner]
        m = np.concatenate([up[None], m, down[None]])          # hops x sub-paths
        hops = np.zeros(n)
        np.add.at(hops, act[owner], w * (m >= 0).sum(axis=0))
        hop, i = np.nonzero(m >= 0)            # hop-major, each hop's flows ascending (as a walk lists them)
        flow, link, wt = act[owner[i]], m[hop, i], w[i]
        if len(owner) > len(act):              # sub-paths share links: one entry per (flow, link)
            return split_routes(n, flow, link, wt, hops)
        return Routes(n, flow, link.astype(np.int32), wt, hops)

    def _ugal(self, short: tuple[np.ndarray, np.ndarray, np.ndarray], val: np.ndarray, owner: np.ndarray,
              w: np.ndarray, between: np.ndarray, offered: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Per flow, the share that takes its Valiant sub-paths (the rest goes minimally): the flows are
        placed in a seeded order, in ``parts`` equal parts each (one round of all flows per part), each
        part minimal or Valiant by the queue it would see weighted by router hops (see the module);
        ``short``: the minimal sub-paths as ``(owner, weight, cols)`` (:meth:`_minimal_spread`);
        ``offered``: each flow's rate as offered, bytes/s."""
        n = len(between)
        cap = self.fabric.link_capacity
        used = np.zeros(self.fabric.n_links)              # offered over capacity, of the flows placed so far
        taken = np.zeros(n)
        # the rows each mode sees: ugal-l its source group's links and first global cable (rows 0-1 of
        # both the minimal and the Valiant columns), ugal-g every router-to-router link
        seen_rows = 2 if self.mode == "ugal-l" else None

        def by_flow(own, cols, wt):
            starts = np.r_[0, np.cumsum(np.bincount(own, minlength=n))]
            order = np.argsort(own, kind="stable")
            return starts, cols[:, order], wt[order]

        ms, ml, mw = by_flow(*short[::2], short[1])
        vs, vl, vw = by_flow(owner, val, w)

        def sides(subs, ws, part):
            """(queue, hops) of a side's sub-paths, each the mean over them by their shares: the part
            counted whole on each (a packet is whole on the one it takes)"""
            ok = subs >= 0
            lk = np.where(ok, subs, 0)
            # a link's standing queue: what it is offered beyond its capacity, this part included
            seen = np.where(ok, np.maximum(used[lk] + part / cap[lk] - 1.0, 0.0), 0.0)[:seen_rows]
            return (seen.max(axis=0) * ws).sum(), (ok.sum(axis=0) * ws).sum(), ok, lk

        share = 1.0 / self.parts
        for _ in range(self.parts):
            for i in rng.permutation(n).tolist():
                part = share * offered[i]
                sub, ws = ml[:, ms[i]:ms[i + 1]], mw[ms[i]:ms[i + 1]]
                if between[i]:
                    qm, hm, ok, lk = sides(sub, ws, part)
                    vsub, vws = vl[:, vs[i]:vs[i + 1]], vw[vs[i]:vs[i + 1]]
                    qv, hv, vok, vlk = sides(vsub, vws, part)
                    if qm * hm > qv * hv:
                        taken[i] += share
                        np.add.at(used, vsub[vok], (part * vws / cap[vlk])[vok])   # spread over the sub-paths
                        continue
                if len(ws) == 1:
                    p = sub[:, 0]
                    p = p[p >= 0]
                    used[p] += part / cap[p]
                else:
                    ok = sub >= 0
                    np.add.at(used, sub[ok], (part * ws / cap[np.where(ok, sub, 0)])[ok])
        return taken


def cable_key(key: np.ndarray, pair: np.ndarray) -> np.ndarray:
    """The key a group chooses among its cables to another by: the destination host and the pair
    of groups (``pair = from * g + to``), hashed.  By the destination alone, every group sent a
    host's flows by cables of one index, which the generator lays out on neighbouring ports:
    Valiant's paths to a host all came into its group at one or two routers.

    >>> (cable_key(np.full(8, 7), np.arange(8)) % 4).tolist()     # one host, eight pairs of groups
    [3, 2, 2, 3, 1, 0, 3, 1]
    """
    x = (key.astype(np.uint64) * np.uint64(0x9E3779B1) + pair.astype(np.uint64) * np.uint64(0x85EBCA77))
    x &= np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x2C1B3C6D)) & np.uint64(0x7FFFFFFF)
    return x.astype(np.int64)


def _host_downlinks(fabric: Fabric, dst: np.ndarray) -> np.ndarray:
    """The link into each destination host from its switch (the reverse of its first port)."""
    indptr, order = fabric.host_uplinks
    return order[indptr[dst]].astype(np.int64) ^ 1
