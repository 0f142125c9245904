"""Allreduce in the switches (SHARP-style), as a program the dynamic engine runs.

Mellanox's SHARP (Graham et al., "Scalable Hierarchical Aggregation Protocol (SHArP): a hardware
architecture for efficient data reduction", COMHPC 2016) reduces in the switches: every rank sends
its vector to its leaf switch, each switch of a *reduction tree* adds what its children send and
passes the sum to its parent, and the root sends the result back down the same tree.  Each tree
cable carries the vector once each way, so the time is about ``2 * (depth + 1)`` hops of latency
plus the vector over one link: flat in the number of ranks, rising only with the tree's depth.

Here the tree is the one whose root is the switch nearest (fewest hops, then lowest index) to
the farthest switch of the job's hosts, every other switch of it joined to the neighbour one hop
nearer the root (the lowest link id among equal ones).  The vector goes in ``chunk``-byte pieces,
pipelined: a switch passes piece ``k`` on in the step after it has all of piece ``k``, while it
takes in piece ``k + 1``.  The switches run as extra ranks of the program (an "up" and a "down"
one per switch; the root does both), their messages crossing one cable each; a message between a
rank and its leaf pays the MPI overhead ``alpha`` (its first piece; the host streams the others),
a piece between switches ``switch_latency`` at every switch.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> f = fat_tree(k=4, levels=2)
>>> run = allreduce_sharp(f, Placement.block(f, 8, ppn=1), 1e6)
>>> run.depth, run.program.params["algorithm"]
(2, 'sharp')
>>> bool(1e6 / f.link_capacity[0] < run.makespan < 1.3e6 / f.link_capacity[0])   # about one link's time
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.dynamic.outcome import Outcome
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths, check_capacity
from fabscope.errors import TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.model.latency import DEFAULT_ALPHA, DEFAULT_FLIT
from fabscope.routing.distances import switch_distances
from fabscope.routing.routes import first_links

#: the most pieces a vector is cut into (a bound on the program's size)
MAX_PIECES = 256


@dataclass
class SharpRun:
    program: Program
    outcome: Outcome
    #: switches of the reduction tree (node ids), its root first, and each one's parent (-1: the root)
    switches: np.ndarray
    parent: np.ndarray
    #: switch levels from the leaves to the root (1: one switch holds every rank)
    depth: int
    engine: str

    @property
    def makespan(self) -> float:
        return self.outcome.makespan


def reduction_tree(fabric: Fabric, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(switches, parent link, depth)`` of the tree over the switches of ``hosts`` (see the module):
    node ids with the root first, the link from each to its parent (-1 for the root), and the levels.

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=4, levels=2)
    >>> sw, up, depth = reduction_tree(f, np.arange(8))        # two leaves under one spine
    >>> [f.node_names[s] for s in sw], depth
    (['s2-0000', 's1-0000', 's1-0001'], 2)
    """
    h = fabric.n_hosts
    dist = switch_distances(fabric)
    leaves = np.unique(fabric.host_switch[np.asarray(hosts, np.int64)].astype(np.int64) - h)
    far = dist[:, leaves].astype(np.int64)
    if np.any(far < 0):
        raise TrafficError("the job's hosts are not all joined: no reduction tree spans them")
    root = int(np.argmin(far.max(axis=1)))
    indptr, order = fabric.out_links
    parent: dict[int, int] = {root: -1}
    for leaf in leaves.tolist():
        s = leaf
        while s not in parent:
            out = order[indptr[s + h]:indptr[s + h + 1]]
            nxt = fabric.link_dst[out].astype(np.int64) - h
            ok = (nxt >= 0) & (dist[np.maximum(nxt, 0), root] == dist[s, root] - 1)
            link = int(out[ok].min())
            parent[s] = link
            s = int(fabric.link_dst[link]) - h
    sw = np.array(list(parent), np.int64)
    return sw + h, np.array([parent[s] for s in sw.tolist()], np.int64), int(far[root].max()) + 1


def allreduce_sharp(fabric: Fabric, placement: Placement, size: float, *, chunk: float = 16384.0,
                    alpha: float = DEFAULT_ALPHA, switch_latency: float = 1e-7, flit: float = DEFAULT_FLIT,
                    engine: str = "auto") -> SharpRun:
    """Run an allreduce of ``size`` bytes over the placement's ranks, reduced in the switches."""
    n = placement.n_ranks
    if n < 2:
        raise TrafficError("allreduce needs at least 2 ranks")
    if not size > 0 or not np.isfinite(size) or not chunk > 0 or not np.isfinite(chunk):
        raise TrafficError(f"allreduce:sharp needs a size and a chunk > 0, got {size:g} and {chunk:g}")
    pieces = int(min(MAX_PIECES, max(1, np.ceil(size / chunk))))
    piece = size / pieces
    h = fabric.n_hosts
    host = placement.host.astype(np.int64)
    switches, up_link, depth = reduction_tree(fabric, host)
    n_sw = len(switches)
    slot = {int(s): i for i, s in enumerate(switches.tolist())}
    # ranks: 0..n-1 the job's, then each switch's up agent, then its down agent (the root's up agent does both)
    up_of = {s: n + i for s, i in slot.items()}
    down_of = {s: (n + n_sw + i if i else n) for s, i in slot.items()}
    n_all = n + 2 * n_sw
    children: dict[int, list[tuple[int, int]]] = {s: [] for s in slot}    # switch -> (child, link up to it)
    for s, link in zip(switches.tolist(), up_link.tolist()):
        if link >= 0:
            children[int(fabric.link_dst[link])].append((s, link))
    rank_link = first_links(fabric, host, host).astype(np.int64)          # each rank's host uplink
    leaf_of = fabric.link_dst[rank_link].astype(np.int64)
    ranks_at: dict[int, list[int]] = {s: [] for s in slot}
    for r, s in enumerate(leaf_of.tolist()):
        ranks_at[s].append(r)
    ops: list[list[list[tuple]]] = [[] for _ in range(n_all)]
    for r in range(n):
        s = int(leaf_of[r])
        ops[r] = [[("send", up_of[s], piece, k) for k in range(pieces)]
                  + [("recv", down_of[s], k) for k in range(pieces)]]
    for s in slot:
        kids = [up_of[c] for c, _ in children[s]] + ranks_at[s]
        down_kids = [down_of[c] for c, _ in children[s]] + ranks_at[s]
        link = int(up_link[slot[s]])
        if link < 0:                                    # the root: sums come in, results go out
            ops[up_of[s]] = [[("recv", c, k) for c in kids if k < pieces]
                             + [("send", c, piece, k - 1) for c in down_kids if k >= 1] for k in range(pieces + 1)]
            continue
        p = int(fabric.link_dst[link])
        ops[up_of[s]] = [[("recv", c, k) for c in kids if k < pieces]
                         + ([("send", up_of[p], piece, k - 1)] if k >= 1 else []) for k in range(pieces + 1)]
        ops[down_of[s]] = [([("recv", down_of[p], k)] if k < pieces else [])
                           + [("send", c, piece, k - 1) for c in down_kids if k >= 1] for k in range(pieces + 1)]
    prog = Program.from_ops("allreduce", ops, algorithm="sharp", size=size, ranks=n, pieces=pieces, depth=depth)
    # each message crosses one cable: the rank's host link, or a tree cable (up, or its reverse down)
    node = np.r_[host, np.repeat(switches, 2)]      # the node each program rank sits on
    node[n:n + n_sw], node[n + n_sw:] = switches, switches
    a, b = node[prog.src], node[prog.dst]
    link = _link_between(fabric, a, b, rank_link, host, prog.src, prog.dst, n)
    # the MPI overhead is paid once, by a rank's first piece each way; the NIC streams the rest
    piece_no = np.where(prog.src < n, prog.step_round[prog.recv_step], prog.step_round[prog.send_step] - 1)
    host_side = (prog.src < n) | (prog.dst < n)
    key = link * 2 + (host_side & (piece_no == 0))
    uniq_key, msg_path = np.unique(key, return_inverse=True)
    uniq, pays = uniq_key // 2, uniq_key % 2 == 1
    cap = fabric.link_capacity[uniq]
    lat = np.where(pays, alpha, np.where(fabric.link_src[uniq] < h, 0.0, switch_latency)) \
        + fabric.link_latency[uniq] + flit / cap
    capacity = np.r_[fabric.link_capacity, fabric.host_memory_bw].astype(float)
    paths = Paths(fabric.link_src[uniq].astype(np.int64), fabric.link_dst[uniq].astype(np.int64),
                  np.arange(len(uniq) + 1, dtype=np.int64), uniq.astype(np.int64), np.ones(len(uniq)),
                  np.full(len(uniq), np.inf), lat, np.ones(len(uniq)), capacity, fabric.n_links, "reduction tree")
    outcome, used = _run(prog, paths, msg_path, engine)
    return SharpRun(prog, outcome, switches, up_link, depth, used)


def _link_between(fabric: Fabric, a: np.ndarray, b: np.ndarray, rank_link: np.ndarray, host: np.ndarray,
                  src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """The cable each message crosses: a rank's uplink (or its reverse, down to it), or the
    switch-to-switch link from node ``a`` to node ``b``."""
    out = np.full(len(a), -1, np.int64)
    up = src < n
    out[up] = rank_link[src[up]]
    down = dst < n
    out[down] = rank_link[dst[down]] ^ 1
    rest = np.flatnonzero(out < 0)
    if len(rest):
        indptr, order = fabric.out_links
        for i in rest.tolist():
            cand = order[indptr[a[i]]:indptr[a[i] + 1]]
            out[i] = int(cand[fabric.link_dst[cand] == b[i]].min())
    return out


def _run(prog: Program, paths: Paths, msg_path: np.ndarray, engine: str) -> tuple[Outcome, str]:
    from fabscope.dynamic import fast

    if engine in ("auto", "c") and fast.available():
        return fast.run_program(prog, paths, msg_path), "c"
    if engine == "c":
        raise TrafficError(f"the compiled engine is not available: {fast.why_not()}")
    from fabscope.dynamic.engine import run_program

    check_capacity(paths.capacity)
    res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    return run_program(prog, paths.capacity, res, wts, paths.cap, paths.latency, msg_path.tolist()), "python"
