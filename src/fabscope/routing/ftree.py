"""Fat-tree routing as OpenSM 3.3.23's ``ftree`` engine computes it.

Not D-mod-K (:mod:`fabscope.routing.tree`): OpenSM balances by counters as it goes.

1. Ranks: breadth-first distance from the roots (the switches named, or
   else the switches farthest from every host, found by ranking up from the
   leaves and reversing).  Hosts must all hang off switches of the leaf rank;
   without named roots each rank must look alike (same number of up and down
   port groups, same cables per group): otherwise OpenSM falls back to minhop,
   and so does this engine refuse, in one line.
2. Ports to the same neighbour form a *port group*, up, down or sideways.
3. Indexing: tuples handed out breadth-first from the first leaf in GUID
   order; every switch's up and down groups are sorted by their remote's tuple.
4. Routing, destination by destination (leaves in tuple order, each leaf's
   hosts in port order, then "dummy" destinations filling each leaf up to the
   largest leaf): from the destination's leaf go up the least-loaded up group
   (counter of destinations routed down it; ties by tuple), its least-loaded
   cable, counting it, and from every switch reached go down to every switch
   not yet routed to that destination by the cable least used upwards
   (``fabric_route_downgoing_by_going_up`` / ``..._upgoing_by_going_down``);
   the other up groups get uncounted routes.  Groups are re-sorted by their
   counters with the same bubble sorts as OpenSM, so ties fall the same way.

Switch GUIDs: :func:`fabscope.routing.tables.switch_guid_rank`; host GUIDs:
host index order (ibsim's for fabrics fabscope exports).

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> r = FatTreeRouting(f)
>>> [f.link_name(l) for l in r.routes([0], [3]).path(0)][1:3]
['s1-0000[4] -> s2-0001[1]', 's2-0001[2] -> s1-0001[4]']
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.routes import Routes
from fabscope.routing.tables import TableRouting, switch_guid_rank

NO = 255          # OpenSM's OSM_NO_PATH for hops and ports
TUPLE_LEN = 8
UP, SAME, DOWN = 0, 1, 2


class _Port:
    __slots__ = ("port", "link", "cu", "cd")

    def __init__(self, port: int, link: int) -> None:
        self.port, self.link, self.cu, self.cd = port, link, 0, 0


class _Group:
    __slots__ = ("owner", "remote", "host", "ports", "cu", "cd")

    def __init__(self, owner: int, remote: int, host: bool) -> None:
        self.owner, self.remote, self.host = owner, remote, host
        self.ports: list[_Port] = []
        self.cu = self.cd = 0


class FtreeRefused(RoutingError):
    """OpenSM's ftree would not route this fabric (it falls back to minhop); ``why`` says what."""

    why: str = ""


def _fail(fabric: Fabric, why: str) -> RoutingError:
    err = FtreeRefused(f"ftree: OpenSM's ftree would not route {fabric.name!r} ({why}; it falls back to minhop)")
    err.why = why
    return err


@dataclass(eq=False)
class FatTreeRouting:
    """OpenSM's ``ftree`` on ``fabric``; ``roots``: switch names (default: the top rank)."""

    fabric: Fabric
    roots: Sequence[str] | None = None
    name: str = "ftree"
    _tables: TableRouting | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.lft = _ftree_tables(self.fabric, self.roots)
        self._tables = TableRouting(self.fabric, self.lft, name=self.name)

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return self._tables.routes(src, dst)

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return self._tables.terminal_routes(src, dst)


def _bfs(nbrs: list[list[int]], sources: Sequence[int], n: int) -> np.ndarray:
    rank = np.full(n, -1, np.int64)
    q = deque()
    for s in sources:
        if rank[s] < 0:
            rank[s] = 0
            q.append(s)
    while q:
        u = q.popleft()
        for v in nbrs[u]:
            if rank[v] < 0:
                rank[v] = rank[u] + 1
                q.append(v)
    return rank


def _ftree_tables(f: Fabric, roots: Sequence[str] | None) -> np.ndarray:
    from fabscope.routing.updn import switch_indices

    h, S = f.n_hosts, f.n_switches
    gid = switch_guid_rank(f)
    sw_order = np.argsort(gid, kind="stable").tolist()
    # each switch's cables in port order: (port, link id, remote node)
    src = f.link_src.astype(np.int64)
    out = np.flatnonzero(src >= h)
    out = out[np.lexsort((out, f.link_src_port[out], src[out]))]
    ports: list[list[tuple[int, int, int]]] = [[] for _ in range(S)]
    for l in out.tolist():
        ports[int(src[l]) - h].append((int(f.link_src_port[l]), l, int(f.link_dst[l])))
    sw_nbrs = [[v - h for _, _, v in ps if v >= h] for ps in ports]
    has_host = [any(v < h for _, _, v in ps) for ps in ports]
    # 1. ranks
    if roots:
        root_ids = switch_indices(f, roots, "ftree roots")
        rank = _bfs(sw_nbrs, root_ids, S)
    else:
        up = _bfs(sw_nbrs, [s for s in sw_order if has_host[s]], S)
        top = int(up.max()) if len(up) else 0
        rank = _bfs(sw_nbrs, [s for s in sw_order if up[s] == top], S)
    ranked = rank >= 0
    max_rank = int(rank.max(initial=0))
    if max_rank == 0 and S > 1:
        raise _fail(f, "all switches rank as roots")
    host_of_link_sw = f.terminal_switch - h
    if roots:
        leaf_rank = int(rank[host_of_link_sw[0]])
    else:
        leaf_rank = max_rank
    if not 2 <= leaf_rank + 1 <= 8:
        raise _fail(f, f"tree rank {leaf_rank + 1} outside 2..8")
    for t in range(f.n_terminals):
        s = int(host_of_link_sw[t])
        if rank[s] != leaf_rank:
            raise _fail(f, f"host {f.terminal_label(t)} hangs off {f.node_names[h + s]} at rank {int(rank[s])}, "
                           f"not the leaf rank {leaf_rank}")
    # 2. port groups
    down: list[list[_Group]] = [[] for _ in range(S)]
    upg: list[list[_Group]] = [[] for _ in range(S)]
    sib: list[list[_Group]] = [[] for _ in range(S)]
    for s in range(S):
        if not ranked[s]:
            continue
        index: dict[tuple[int, int], _Group] = {}
        for port, link, v in ports[s]:
            if v < h:
                g = _Group(s, v, True)          # one group per host port (per remote LID)
                down[s].append(g)
                g.ports.append(_Port(port, link))
                continue
            r = v - h
            if not ranked[r]:
                continue
            d = UP if rank[s] > rank[r] else SAME if rank[s] == rank[r] else DOWN
            g = index.get((d, r))
            if g is None:
                g = index[(d, r)] = _Group(s, r, False)
                (upg if d == UP else sib if d == SAME else down)[s].append(g)
            if not any(p.port == port for p in g.ports):
                g.ports.append(_Port(port, link))
    is_leaf = [has_host[s] and ranked[s] for s in range(S)]
    # 3. indexing
    empty = (NO,) * TUPLE_LEN
    tup = [empty] * S
    by_tuple: dict[tuple[int, ...], int] = {}
    first = next(s for s in sw_order if is_leaf[s])
    t0 = [NO] * TUPLE_LEN
    t0[0] = int(rank[first])
    for i in range(1, leaf_rank + 1):
        t0[i] = 0
    tup[first] = tuple(t0)
    by_tuple[tup[first]] = first

    def new_tuple(frm: tuple[int, ...], going_down: bool) -> tuple[int, ...]:
        t = list(frm)
        if going_down:
            t[0] += 1
            var = frm[0] + 1
        else:
            t[0] -= 1
            var = frm[0]
        for i in range(NO):
            t[var] = i
            if tuple(t) not in by_tuple:
                return tuple(t)
        raise _fail(f, "more than 255 ports in one direction")

    key = lambda g: tup[g.remote]  # noqa: E731
    q = deque([first])
    while q:
        s = q.popleft()
        if rank[s] < leaf_rank:
            for g in down[s]:
                if g.host or tup[g.remote] != empty:
                    continue
                tup[g.remote] = new_tuple(tup[s], True)
                by_tuple[tup[g.remote]] = g.remote
                q.append(g.remote)
            down[s].sort(key=key)
        if rank[s] != 0 and (rank[first] != 0 or not is_leaf[s]):
            for g in upg[s]:
                if tup[g.remote] != empty:
                    continue
                tup[g.remote] = new_tuple(tup[s], False)
                by_tuple[tup[g.remote]] = g.remote
                q.append(g.remote)
            upg[s].sort(key=key)
    # leaf array: switches of the leaf rank by tuple, from the first to the last with hosts
    at_leaf = sorted((s for s in range(S) if ranked[s] and rank[s] == leaf_rank), key=lambda s: tup[s])
    real = [i for i, s in enumerate(at_leaf) if is_leaf[s]]
    if not real or real[0] >= real[-1]:
        raise _fail(f, "fewer than two leaf switches")
    leaves = at_leaf[real[0]:real[-1] + 1]
    max_cn = max(sum(g.host for g in down[s]) for s in leaves)
    if not roots:
        _validate(f, sw_order, rank, ranked, leaf_rank, down, upg)
    # 4. routing
    mincd = [0] * S
    changed = [False] * S

    def cmp_tuple(a: _Group, b: _Group) -> int:
        ta, tb = tup[a.remote], tup[b.remote]
        return (ta > tb) - (ta < tb)

    def cmp_up(a: _Group, b: _Group) -> int:
        if a.cu != b.cu:
            return 1 if a.cu > b.cu else -1
        return cmp_tuple(a, b)

    def cmp_down(a: _Group, b: _Group) -> int:
        if a.cd != b.cd:
            return 1 if a.cd > b.cd else -1
        if mincd[a.remote] > mincd[b.remote]:
            return 1
        return cmp_tuple(a, b)

    def bubble(arr: list[_Group], cmp) -> None:
        n = len(arr)
        i, swapped = 0, True
        while swapped:
            swapped = False
            for j in range(1, n - i):
                if cmp(arr[j], arr[j - 1]) < 0:
                    arr[j - 1], arr[j] = arr[j], arr[j - 1]
                    swapped = True
            i += 1

    def least_up(g: _Group) -> _Port:
        ps = g.ports
        best = ps[0]
        for p in ps[1:]:
            if p.cu < best.cu:
                best = p
        return best

    def least_down(g: _Group) -> _Port:
        ps = g.ports
        best = ps[0]
        for p in ps[1:]:
            if p.cd < best.cd:
                best = p
        return best

    # remote switch of each down group in its current order (-1: a host), kept in step with the sorts
    host_below = [any(g.host for g in down[s]) for s in range(S)]
    only_hosts = [bool(down[s]) and all(g.host for g in down[s]) for s in range(S)]

    def remotes(s: int) -> list[int]:
        return [-1 if g.host else g.remote for g in down[s]]

    down_remote = [remotes(s) for s in range(S)]

    lft = np.full((S, f.n_terminals), -1, np.int32)
    terminal_of_down = {int(l): t for t, l in enumerate(f.terminal_downlink.tolist())}

    def route(leaf: int, host: int | None, keep: bool, link: int = -1) -> None:
        """Route one destination (``host`` None: a dummy) reached from ``leaf`` by ``link``;
        ``keep``: store its entries."""
        hops = [NO] * (S + 1)                     # hops[-1]: where a host group looks, never a candidate
        tab = [-1] * S
        tab[leaf] = link
        dummy = host is None

        def upgoing(s: int, prev: int | None, cur: int) -> bool:
            groups = down[s]
            if not groups:
                return False
            if changed[s]:
                bubble(groups, cmp_up)
                down_remote[s] = remotes(s)
                changed[s] = False
            if sib[s]:
                bubble(sib[s], cmp_up)
            elif only_hosts[s]:                   # a leaf: nothing below to route
                return True
            created = host_below[s]
            # a group whose remote already has as short a route is skipped (hops only ever shrink, so
            # the test made here first stays true): pick out the others at once
            c1 = cur + 1
            ks = [k for k, r in enumerate(down_remote[s]) if hops[r] > c1]
            if not dummy and sib[s]:
                ks += list(range(len(groups), len(groups) + len(sib[s])))
            for k in ks:
                g = groups[k] if k < len(groups) else sib[s][k - len(groups)]
                if g.host:
                    continue
                if prev is not None and g.remote == prev:
                    continue
                if not g.ports:
                    continue
                r = g.remote
                if hops[r] != NO and cur + 1 >= hops[r]:
                    continue
                pmin = least_up(g)
                tab[r] = pmin.link ^ 1
                hops[r] = cur + 1
                routed = upgoing(r, None, cur + 1)
                created |= routed
                if routed:
                    pmin.cu += 1
                    g.cu += 1
                    changed[s] = True
            return created

        def downgoing(s: int, prev: int | None, main: bool, cur: int) -> bool:
            created = upgoing(s, prev, cur)
            if rank[s] == 0:
                return created
            ups = upg[s]
            if not ups:
                return created
            bubble(ups, cmp_down)
            gmin = ups[0]
            pmin = least_down(gmin) if gmin.ports else None
            if main and pmin is not None:
                r = gmin.remote
                gmin.cd += 1
                pmin.cd += 1
                if gmin.cd == mincd[r] + 1:
                    mincd[r] = min((g.cd for g in down[r]), default=1 << 30)
                if tab[r] < 0 or cur + 1 < hops[r]:
                    tab[r] = pmin.link ^ 1
                    hops[r] = cur + 1
                created |= downgoing(r, s, main, cur + 1)
            for i in range(1 if main else 0, len(ups)):
                g = ups[i]
                r = g.remote
                if tab[r] >= 0 and cur + 1 >= hops[r]:
                    continue
                if not g.ports:
                    continue
                p = least_down(g)
                tab[r] = p.link ^ 1
                hops[r] = cur + 1
                created |= downgoing(r, s, False, cur + 1)
            if sib[s]:
                bubble(sib[s], cmp_down)
            for g in list(sib[s]):
                r = g.remote
                if tab[r] >= 0 and cur + 1 >= hops[r]:
                    continue
                p = least_down(g)
                tab[r] = p.link ^ 1
                hops[r] = cur + 1
                routed = downgoing(r, s, False, cur + 1)
                created |= routed
                if routed and main and pmin is not None:
                    gmin.cd += 1
                    pmin.cd += 1
            return created

        hops[leaf] = 1
        downgoing(leaf, None, True, 1)
        if keep:
            for s in range(S):
                if tab[s] >= 0:
                    lft[s, host] = tab[s]

    for leaf in leaves:
        n_routed = 0
        for g in list(down[leaf]):
            if not g.host:
                continue
            # every host port is a destination (its own LID) with its own entries
            route(leaf, terminal_of_down[g.ports[0].link], True, g.ports[0].link)
            n_routed += 1
        for _ in range(max_cn - n_routed):
            route(leaf, None, False)
    return lft


def _validate(f: Fabric, sw_order, rank, ranked, leaf_rank, down, upg) -> None:
    """``fabric_validate_topology``: without roots every rank must look alike."""
    h = f.n_hosts
    tree_rank = leaf_rank + 1
    ref: dict[int, int] = {}
    for s in sw_order:
        if not ranked[s]:
            continue
        r = int(rank[s])
        if r not in ref:
            ref[r] = s
            continue
        a = ref[r]
        bad = None
        if len(upg[a]) != len(upg[s]):
            bad = f"{len(upg[s])} up port groups where {f.node_names[h + a]} has {len(upg[a])}"
        elif r != tree_rank - 1 and len(down[a]) != len(down[s]):
            bad = f"{len(down[s])} down port groups where {f.node_names[h + a]} has {len(down[a])}"
        elif upg[a] and any(len(g.ports) != len(upg[a][0].ports) for g in upg[s]):
            bad = "up port groups of unequal size"
        elif down[a] and r != tree_rank - 1 and down[s] and len(down[s][0].ports) != len(down[a][0].ports):
            bad = "down port groups of unequal size"
        if bad:
            raise _fail(f, f"not a pure fat tree: {f.node_names[h + s]} has {bad}")
