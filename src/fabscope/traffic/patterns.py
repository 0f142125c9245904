"""The seeds' traffic patterns, each a function returning :class:`Traffic`.

Ranks are numbered 0..n-1; a :class:`~fabscope.fabric.Placement` puts them on
hosts.  Randomness comes only through ``seed``.

>>> t = random_pairs(8, size=1e6, seed=7)
>>> t.n_flows, sorted(set(t.src.tolist())) == list(range(8))
(8, True)
>>> random_pairs(10, 1e6, seed=1).src[:5].tolist()   # as fabscope-bench random-pairs --seed 1 pairs them
[0, 1, 2, 3, 7]
"""

from __future__ import annotations

from itertools import combinations
from math import prod
from typing import Sequence

import numpy as np

from fabscope.errors import TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.traffic.draws import msg_rounds, random_pairs_rounds, ring_order
from fabscope.traffic.flows import Traffic


def random_pairs(n_ranks: int, size: float, seed: int = 0, rounds: int = 1) -> Traffic:
    """Seed 000: ranks paired at random, each pair ping-pongs (both directions).

    The pairs and rounds are fabscope-bench's random-pairs test's with the same
    ``--seed`` and ``--rounds`` (:mod:`.draws`); each round is a scenario.  With
    an odd count one rank sits out.
    """
    if n_ranks < 2:
        raise TrafficError(f"random-pairs needs at least 2 ranks, got {n_ranks}")
    if rounds < 1:
        raise TrafficError(f"random-pairs needs rounds >= 1, got {rounds}")
    drawn = random_pairs_rounds(n_ranks, seed, rounds)
    src = np.concatenate([a for a, _ in drawn])
    dst = np.concatenate([b for _, b in drawn])
    scen = np.repeat(np.arange(rounds), [len(a) for a, _ in drawn])
    return Traffic.build("random-pairs", src, dst, size, pingpong=True, scenario=scen, seed=seed, rounds=rounds)


def _leaves(fabric: Fabric, placement: Placement, nodes_per_leaf: int, pattern: str) -> list[np.ndarray]:
    """Ranks of the first ``nodes_per_leaf`` nodes of each leaf the job uses (one rank per node)."""
    if "leaf" not in fabric.groups:
        raise TrafficError(f"{pattern} needs a fabric with leaf switches; {fabric.name!r} has none")
    host = placement.host
    first_rank = {}
    for r, h in enumerate(host.tolist()):
        first_rank.setdefault(h, r)
    leaf = fabric.groups["leaf"]
    out: dict[int, list[int]] = {}
    for h in sorted(first_rank):
        out.setdefault(int(leaf[h]), []).append(first_rank[h])
    full = [np.array(v[:nodes_per_leaf]) for _, v in sorted(out.items()) if len(v) >= nodes_per_leaf]
    if len(full) < 2:
        sizes = sorted((len(v) for v in out.values()), reverse=True)
        fit = sizes[1] if len(sizes) >= 2 else 0
        hint = (f"; the second fullest leaf has {fit}: try {pattern}:nodes_per_leaf={fit}"
                if 1 <= fit < nodes_per_leaf else "")
        raise TrafficError(f"{pattern} needs at least 2 leaves with {nodes_per_leaf} nodes of the job; "
                           f"the job has {len(full)}{hint}")
    return full


def leaf_offset(fabric: Fabric, placement: Placement, offset: int, size: float, nodes_per_leaf: int = 8) -> Traffic:
    """Seed 000: leaf i talks to leaf i+offset where (i // offset) is even; the N-th
    node of one leaf ping-pongs with the N-th node of the other.

    Offset 1 pairs leaves 1-2, 3-4, ...; offset 2: 1-3, 2-4, 5-7, 6-8; offset 4:
    1-5, 2-6, 3-7, 4-8, 9-13, ...  Leaves left without a partner sit out.
    """
    if offset < 1:
        raise TrafficError(f"leaf-offset needs an offset >= 1, got {offset}")
    leaves = _leaves(fabric, placement, nodes_per_leaf, "leaf-offset")
    src, dst = [], []
    for i in range(len(leaves)):
        j = i + offset
        if (i // offset) % 2 == 0 and j < len(leaves):
            src.append(leaves[i])
            dst.append(leaves[j])
    if not src:
        raise TrafficError(f"leaf-offset {offset} pairs no leaves among the job's {len(leaves)}")
    return Traffic.build("leaf-offset", np.concatenate(src), np.concatenate(dst), size, pingpong=True,
                         offset=offset, nodes_per_leaf=nodes_per_leaf)


def leaf_pairs(fabric: Fabric, placement: Placement, size: float, nodes_per_leaf: int = 8,
               concurrent: bool = True) -> Traffic:
    """Seed 000's all-pairs test: every two leaves, the N-th node of one with the N-th of the other.

    The seed does not say how the 2,211 leaf pairs were scheduled.  Run one at
    a time, no routing can make 8 flows between two leaves collide much, yet
    the measured matrix shows far pairs at 1826 MB/s; so by default the pairs
    run as a round-robin tournament (the circle method), every leaf busy in
    every round, like the leaf-to-leaf offset test.  Each round is a scenario.
    ``concurrent=False`` runs each pair alone.
    """
    leaves = _leaves(fabric, placement, nodes_per_leaf, "leaf-pairs")
    n = len(leaves)
    if concurrent:
        rounds = _round_robin(n)
    else:
        rounds = [[p] for p in combinations(range(n), 2)]
    src, dst, scen = [], [], []
    for k, matches in enumerate(rounds):
        for i, j in matches:
            src.append(leaves[i])
            dst.append(leaves[j])
            scen.append(np.full(nodes_per_leaf, k))
    return Traffic.build("leaf-pairs", np.concatenate(src), np.concatenate(dst), size, pingpong=True,
                         scenario=np.concatenate(scen), nodes_per_leaf=nodes_per_leaf, n_leaves=n,
                         concurrent=concurrent)


def _round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Rounds of a tournament of n players: every pair meets once (circle method).

    >>> sorted(p for r in _round_robin(5) for p in r) == list(combinations(range(5), 2))
    True
    """
    players = list(range(n)) + ([-1] if n % 2 else [])
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        pairs = [(players[i], players[m - 1 - i]) for i in range(m // 2)]
        rounds.append([(min(a, b), max(a, b)) for a, b in pairs if a >= 0 and b >= 0])
        players = [players[0], players[-1]] + players[1:-1]
    return rounds


def host_hops(fabric: Fabric, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Router/switch hops between the switches of hosts ``a`` and ``b`` (0: same switch)."""
    if fabric.coords is not None:
        return fabric.coord_hops(a, b)
    from fabscope.routing.distances import switch_distances

    h = fabric.n_hosts
    return switch_distances(fabric)[fabric.host_switch[a] - h, fabric.host_switch[b] - h].astype(np.int64)


def partner_hops(fabric: Fabric, placement: Placement, hops: int, size: float, seed: int = 0,
                 order: str = "random") -> Traffic:
    """Seed 002: pair every rank with a partner ``hops`` router hops away (as many as a
    greedy matching finds), all pairs ping-pong at once.

    ``order="random"``: ranks in a random order, each with a random free partner at that
    distance.  ``order="bench"``: fabscope-bench's ``hops`` test (csrc/pairs.c): in rank order,
    each free rank with the first free higher rank at that distance, so that ``simulate`` models
    the pairs ``measure hops`` ran (on a torus or mesh whose hosts are numbered as its ``--dims``
    lay nodes out, row-major: the fabrics' own numbering).
    """
    if order not in ("random", "bench"):
        raise TrafficError(f"partner-hops order must be random or bench, got {order!r}")
    n = placement.n_ranks
    free = np.ones(n, bool)
    src, dst = [], []
    if order == "bench":
        for r in range(n):
            if not free[r]:
                continue
            rest = np.arange(r + 1, n)
            rest = rest[free[rest]]
            if not len(rest):
                continue
            near = rest[host_hops(fabric, placement.host[np.full(len(rest), r)], placement.host[rest]) == hops]
            if len(near):
                p = int(near[0])
                free[[r, p]] = False
                src.append(r)
                dst.append(p)
    else:
        rng = np.random.default_rng(seed)
        for r in rng.permutation(n):
            if not free[r]:
                continue
            cand = np.flatnonzero(free & (host_hops(fabric, placement.host[np.full(n, r)], placement.host) == hops))
            cand = cand[cand != r]
            if len(cand):
                p = int(rng.choice(cand))
                free[[r, p]] = False
                src.append(r)
                dst.append(p)
    if not src:
        raise TrafficError(f"no two ranks of the job are {hops} hops apart")
    return Traffic.build("partner-hops", src, dst, size, pingpong=True, hops=hops, seed=seed,
                         unmatched=int(free.sum()), order=order)


def bisection(n_ranks: int, size: float, seed: int = 0, samples: int = 1) -> Traffic:
    """Random bisections: each sample splits the ranks in halves and pairs them across
    at random, both directions at once.  Averaging the pairs' bandwidth over many
    samples gives the effective bisection bandwidth."""
    if n_ranks < 2:
        raise TrafficError("bisection needs at least 2 ranks")
    rng = np.random.default_rng(seed)
    m = n_ranks // 2
    src, dst, scen = [], [], []
    for s in range(samples):
        p = rng.permutation(n_ranks)
        src.append(p[:m])
        dst.append(p[m:2 * m])
        scen.append(np.full(m, s))
    return Traffic.build("bisection", np.concatenate(src), np.concatenate(dst), size, pingpong=True,
                         scenario=np.concatenate(scen), seed=seed, samples=samples)


def shift(n_ranks: int, size: float, k: int = 1) -> Traffic:
    """Every rank i sends to rank (i + k) mod n.

    >>> shift(4, 1.0, 5).dst.tolist(), shift(4, 1.0, -1).dst.tolist()     # k is taken modulo n
    ([1, 2, 3, 0], [3, 0, 1, 2])
    """
    k = int(k) % max(n_ranks, 1)   # a Python int first: k = 10**308 is a shift like any other
    r = np.arange(n_ranks)
    return Traffic.build("shift", r, (r + k) % n_ranks, size, k=k)


def permutation(n_ranks: int, size: float, seed: int = 0) -> Traffic:
    """Every rank sends to one other rank, a random permutation without fixed points
    (random matching, one direction)."""
    rng = np.random.default_rng(seed)
    p = rng.permutation(n_ranks)
    return Traffic.build("permutation", p, np.roll(p, 1), size, seed=seed)


def all_to_all(n_ranks: int, size: float) -> Traffic:
    """Every rank sends ``size`` bytes to every other rank at once."""
    s, d = np.divmod(np.arange(n_ranks * n_ranks), n_ranks)
    keep = s != d
    return Traffic.build("all-to-all", s[keep], d[keep], size)


def ring(n_ranks: int, size: float, order: str = "natural", seed: int = 0) -> Traffic:
    """HPCC ring (seed 001): each rank exchanges with both neighbours of a ring in
    natural rank order or a random order (fabscope-bench's random-ring order, :mod:`.draws`)."""
    p = np.arange(n_ranks) if order == "natural" else ring_order(n_ranks, seed)
    return Traffic.build(f"{order}-ring", np.r_[p, p], np.r_[np.roll(p, -1), np.roll(p, 1)], size,
                         order=order, seed=seed)


def bucket_brigade(n_ranks: int, size: float) -> Traffic:
    """Seed 004: rank i passes to rank i+1 down the line (8 B small, 1 MB large)."""
    r = np.arange(n_ranks - 1)
    return Traffic.build("bucket-brigade", r, r + 1, size)


def random_messaging(n_ranks: int, seed: int = 0, low: int = 100, high: int = 1000) -> Traffic:
    """Seed 004: the ranks form a random cycle, each sends a message of a random size in
    [low, high] bytes to its successor: the first iteration of fabscope-bench's random-msg
    with the same ``--seed`` (:mod:`.draws`)."""
    if n_ranks < 2:
        raise TrafficError(f"random-messaging needs at least 2 ranks, got {n_ranks}")
    if not 0 < low <= high <= 1 << 50:
        raise TrafficError(f"random-messaging: low={low}, high={high}: give 0 < low <= high <= 2^50 bytes")
    order, size = next(msg_rounds(n_ranks, seed, 1, low, high))
    return Traffic.build("random-messaging", order, np.roll(order, -1), size, seed=seed)


def stencil(dims: Sequence[int], size: float, periodic: bool = True) -> Traffic:
    """2D/3D halo exchange: rank at grid point x sends ``size`` to each neighbour."""
    dims = tuple(int(d) for d in dims)
    n = prod(dims)
    idx = np.arange(n)
    coords = np.array(np.unravel_index(idx, dims)).T
    src, dst = [], []
    for ax, k in enumerate(dims):
        for step in (1, -1):
            c = coords.copy()
            c[:, ax] += step
            if periodic:
                c[:, ax] %= k
                ok = np.ones(n, bool) if k > 2 or step == 1 else np.zeros(n, bool)
                ok &= k > 1
            else:
                ok = (c[:, ax] >= 0) & (c[:, ax] < k)
            src.append(idx[ok])
            dst.append(np.ravel_multi_index(tuple(c[ok].T), dims))
    return Traffic.build(f"stencil{len(dims)}d", np.concatenate(src), np.concatenate(dst), size,
                         dims=list(dims), periodic=periodic)
