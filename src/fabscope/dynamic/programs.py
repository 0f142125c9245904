"""The programs the benchmarks and MPI libraries run, as :class:`Program` rounds.

Each function mirrors a test of fabscope-bench (csrc/) or an algorithm MPI
libraries use for a collective; the algorithm's name goes into the program's
``params`` and from there into the result.

>>> p = pingpong([0], [1], 1e6, iterations=3, warmup=1)
>>> p.n_messages, p.params["iterations"]
(8, 3)
>>> allreduce_ring(4, 8e6).n_messages             # 2 (n - 1) rounds of n messages of size / n
24
>>> alltoall_bruck(5, 100.0).params["algorithm"], alltoall_bruck(5, 100.0).n_messages
('bruck', 15)
>>> bench_pairing(10, seed=1).tolist()      # fabscope-bench's random pairs, as its C code draws them
[6, 5, 8, 4, 3, 1, 0, 9, 2, 7]
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabscope.dynamic.program import Program
from fabscope.dynamic.sizes import check_counts
from fabscope.errors import TrafficError
from fabscope.traffic.draws import msg_rounds, random_pairing, ring_order

COLLECTIVES = {
    "allreduce": ("ring", "recursive-doubling", "rail", "rail-tree", "sharp"),
    "alltoall": ("pairwise", "bruck"),
    "bcast": ("binomial",),
}

def bench_pairing(n_ranks: int, seed: int = 1, round_: int = 0) -> np.ndarray:
    """``partner[r]`` as fabscope-bench's random-pairs test draws it (csrc/draws.c, one algorithm with
    :mod:`fabscope.traffic.draws`): the same pairs as a measured run with the same ``--seed`` (its
    default is 1); -1 sits out."""
    return random_pairing(n_ranks, seed, round_)


def _pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) == 0:
        raise TrafficError("no pairs to run")
    if np.any(a == b):
        raise TrafficError("a rank cannot ping-pong with itself")
    ranks = np.sort(np.concatenate([a, b]))     # not np.unique: in NumPy 2.4 it imports numpy.ma (30-70 ms)
    if np.any(ranks[1:] == ranks[:-1]):
        raise TrafficError("a rank sits in two pairs")
    return np.minimum(a, b), np.maximum(a, b)


def pingpong(a, b, size: float, iterations: int, warmup: int = 2, n_ranks: int | None = None,
             jitter: float = 0.0, seed: int = 0, start_offset: float = 0.0) -> Program:
    """Pairs ``(a[i], b[i])`` ping-pong ``warmup + iterations`` times, all at once, the lower rank
    sending first (fabscope-bench's pair kernel: csrc/pairs.c, fb_pair_run).

    ``jitter`` (seconds): before each of its pings the lower rank waits a time drawn uniformly
    in [0, jitter) (seeded by ``seed``), its first one included: noise that keeps real pairs
    from running in lock-step (system noise, MPI progress), paid in every iteration's time.
    ``start_offset`` (seconds): only the first ping waits, uniformly in [0, start_offset): the
    pairs start out of phase (as real ones, released by a barrier, do not start at once) and
    keep whatever phases the sharing leaves them.  Both 0: lock-step.
    """
    if iterations < 1 or warmup < 0:
        raise TrafficError(f"ping-pong needs iterations >= 1 and warmup >= 0, got {iterations}, {warmup}")
    for name, v in (("jitter", jitter), ("start offset", start_offset)):
        if not v >= 0 or not np.isfinite(v):
            raise TrafficError(f"ping-pong {name} must be a finite time >= 0, got {v}")
    first, second = _pairs(a, b)
    n = int(max(first.max(), second.max())) + 1 if n_ranks is None else n_ranks
    k = 2 * (iterations + warmup)
    check_counts("ping-pong", len(first) * k, 2 * len(first) * k, n)     # before the arrays are made
    rnd = np.repeat(np.arange(k), len(first))
    odd = (rnd % 2).astype(bool)
    f, s = np.tile(first, k), np.tile(second, k)
    extra = {k: v for k, v in (("jitter", float(jitter)), ("start_offset", float(start_offset))) if v > 0}
    if extra:
        extra["phase_seed"] = seed
    prog = Program.from_arrays("ping-pong", n, np.where(odd, s, f), np.where(odd, f, s), np.full(len(rnd), size),
                               rnd, iterations=iterations, warmup=warmup, size=size, pairs=len(first), **extra)
    if jitter > 0:
        prog = with_jitter(prog, jitter, seed, ~odd)
    if start_offset > 0:
        prog = with_jitter(prog, start_offset, seed + 1, rnd == 0, add=True)
    return prog


def with_jitter(prog: Program, jitter: float, seed: int, which: np.ndarray, add: bool = False) -> Program:
    """``prog`` with a delay drawn uniformly in [0, jitter) before the sending step of each message
    ``which`` selects (the sender waits that long after its previous step ends; ``add``: on top of
    the delay it has).

    >>> p = with_jitter(pingpong([0], [1], 1e6, 2, 0), 1e-3, 7, np.array([True, False] * 2))
    >>> int((p.step_delay > 0).sum()), bool(p.step_delay.max() < 1e-3)
    (2, True)
    """
    from dataclasses import replace

    delay = np.array(prog.step_delay, dtype=float)
    steps = prog.send_step[np.asarray(which, bool)]
    draw = np.random.default_rng(seed).uniform(0.0, jitter, len(steps))
    delay[steps] = delay[steps] + draw if add else draw
    return replace(prog, step_delay=delay)


def window(a, b, size: float, iterations: int, window: int = 64, warmup: int = 2,
           n_ranks: int | None = None) -> Program:
    """fabscope-bench's ``bw``: per iteration ``window`` non-blocking sends, then a 4-byte ack."""
    first, second = _pairs(a, b)
    n = int(max(first.max(), second.max())) + 1 if n_ranks is None else n_ranks
    its = iterations + warmup
    check_counts("bw", len(first) * (window + 1) * its, 2 * len(first) * (window + 1) * its, n)
    rounds = []
    for _ in range(its):
        rounds.append((np.repeat(first, window), np.repeat(second, window), size))
        rounds.append((second, first, 4.0))
    return Program.from_rounds("bw", n, rounds, iterations=iterations, warmup=warmup, window=window, size=size)


def random_messaging(n_ranks: int, iterations: int, seed: int = 0, low: int = 100, high: int = 1000,
                     warmup: int = 0) -> Program:
    """Seed 004's Random Messaging as fabscope-bench runs it: each iteration (``warmup`` untimed
    ones first) the ranks form a random cycle; each sends a message of random size in [low, high]
    to its successor.  The cycles and sizes are the benchmark's with the same ``--seed``."""
    check_counts("random-messaging", n_ranks * (warmup + iterations), 2 * n_ranks * (warmup + iterations), n_ranks)
    rounds = [(o, np.roll(o, -1), b.astype(float))
              for o, b in msg_rounds(n_ranks, seed, warmup + iterations, low, high)]
    return Program.from_rounds("random-messaging", n_ranks, rounds, iterations=iterations, warmup=warmup,
                               seed=seed)


def bucket_brigade(n_ranks: int, size: float, iterations: int = 1) -> Program:
    """Seed 004's Bucket Brigade: rank r receives from r-1, then passes to r+1 (pipelined)."""
    check_counts("bucket-brigade", (n_ranks - 1) * iterations, 2 * (n_ranks - 1) * iterations, n_ranks)
    r = np.arange(n_ranks - 1)
    src = np.tile(r, iterations)
    it = np.repeat(np.arange(iterations), n_ranks - 1)
    # rank r's steps: receive of iteration i (round 2i+... ) then send; round = 2 i + position keeps order
    rnd = it * n_ranks + src
    return Program.from_arrays("bucket-brigade", n_ranks, src, src + 1, np.full(len(src), size), rnd,
                               iterations=iterations, size=size)


def ring(n_ranks: int, size: float, iterations: int = 1, order: str = "natural", seed: int = 0) -> Program:
    """HPCC rings (seed 001): every rank exchanges with both neighbours at once, per iteration."""
    check_counts(f"{order}-ring", 2 * n_ranks * iterations, 4 * n_ranks * iterations, n_ranks)
    p = np.arange(n_ranks) if order == "natural" else ring_order(n_ranks, seed)
    src = np.r_[p, p]
    dst = np.r_[np.roll(p, -1), np.roll(p, 1)]
    return Program.from_rounds(f"{order}-ring", n_ranks, [(src, dst, size)] * iterations,
                               iterations=iterations, size=size, order=order)


def allreduce_ring(n_ranks: int, size: float) -> Program:
    """Ring allreduce: reduce-scatter then allgather, 2 (n - 1) rounds of ``size / n`` to the right."""
    r = np.arange(n_ranks)
    rounds = [(r, (r + 1) % n_ranks, size / n_ranks)] * (2 * (n_ranks - 1))
    return Program.from_rounds("allreduce", n_ranks, rounds, algorithm="ring", size=size)


def allreduce_recursive_doubling(n_ranks: int, size: float) -> Program:
    """Recursive doubling: in round k rank r exchanges the whole vector with r xor 2^k.  With n not
    a power of two the ranks above the largest power first hand their data down, and get the
    result back at the end (as MPICH does)."""
    p2 = 1 << (n_ranks.bit_length() - 1)
    extra = np.arange(p2, n_ranks)
    rounds = []
    if len(extra):
        rounds.append((extra, extra - p2, size))
    r = np.arange(p2)
    k = 1
    while k < p2:
        rounds.append((r, r ^ k, size))
        k <<= 1
    if len(extra):
        rounds.append((extra - p2, extra, size))
    if not rounds:
        raise TrafficError("allreduce needs at least 2 ranks")
    return Program.from_rounds("allreduce", n_ranks, rounds, algorithm="recursive-doubling", size=size)


def allreduce_rail(n_ranks: int, size: float, ppn: int | None) -> Program:
    """Rail-aligned hierarchical allreduce, as NCCL- and UCC-style stacks run it on rail-optimised
    GPU pods: ``ppn`` ranks on each of ``N = n_ranks / ppn`` nodes, numbered node by node (rank
    ``node * ppn + i`` is local rank ``i``: the block placement).

    1. reduce-scatter on the node: ``ppn - 1`` rounds, local rank ``i`` sends ``size / ppn`` to
       local rank ``i + 1 mod ppn`` (on-node copies);
    2. ``ppn`` independent ring allreduces of ``size / ppn`` each, ring ``i`` joining local rank
       ``i`` of every node: ``2 (N - 1)`` rounds of ``size / (ppn N)`` to the same local rank
       of the next node (under ``--ports rank`` or ``rail`` ring ``i`` stays on NIC and rail
       ``i``);
    3. allgather on the node: as step 1.

    ``2 n (ppn - 1) + 2 n (N - 1)`` messages of ``n = n_ranks``; ``ppn = 1`` is the flat ring,
    ``ppn = n_ranks`` the ring on one node.

    >>> p = allreduce_rail(8, 8e6, ppn=2)         # 4 nodes of 2: 2*8*1 + 2*8*3
    >>> p.n_messages, sorted(set(p.bytes.tolist()))
    (64, [1000000.0, 4000000.0])
    >>> allreduce_rail(8, 8e6, ppn=1).n_messages == allreduce_ring(8, 8e6).n_messages == 112
    True
    >>> allreduce_rail(6, 1.0, ppn=4)
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: allreduce:rail needs the same ranks on every node: 6 ranks do not make nodes of 4
    """
    n_nodes = _nodes(n_ranks, ppn, "rail")
    r = np.arange(n_ranks)
    node, local = np.divmod(r, ppn)
    on_node = (r, node * ppn + (local + 1) % ppn, size / ppn)
    across = (r, (node + 1) % n_nodes * ppn + local, size / n_ranks)
    rounds = [on_node] * (ppn - 1) + [across] * (2 * (n_nodes - 1)) + [on_node] * (ppn - 1)
    if not rounds:
        raise TrafficError("allreduce needs at least 2 ranks")
    return Program.from_rounds("allreduce", n_ranks, rounds, algorithm="rail", size=size, ppn=ppn)


def _nodes(n_ranks: int, ppn: int | None, algorithm: str) -> int:
    """The node count of ``n_ranks`` ranks, ``ppn`` on each (refused when they do not make whole nodes)."""
    if ppn is None:
        raise TrafficError(f"allreduce:{algorithm} needs the ranks per node (the placement's)")
    if ppn < 1 or n_ranks % ppn:
        raise TrafficError(f"allreduce:{algorithm} needs the same ranks on every node: "
                           f"{n_ranks} ranks do not make nodes of {ppn}")
    return n_ranks // ppn


#: allreduce:rail-tree cuts each rail's share into pieces of about this many bytes ...
TREE_PIECE = 1 << 18
#: ... and into no more than this many
TREE_MAX_PIECES = 64


def allreduce_rail_tree(n_ranks: int, size: float, ppn: int | None, pieces: int | None = None,
                        trees: int = 2) -> Program:
    """Rail-aligned tree allreduce: the on-node phases of :func:`allreduce_rail`, and between them,
    for each local rank ``i``, pipelined binary-tree allreduces of ``size / ppn`` joining local rank
    ``i`` of every node (as NCCL's tree algorithm runs between nodes; here on every rail).

    The ``N`` nodes form a binary tree in breadth-first order (position ``k``'s parent is
    ``(k - 1) // 2``, depth ``D = floor(log2 N)``).  With ``trees=2`` (NCCL's double binary tree)
    each half of the vector has its own tree, the second the mirror of the first (node ``N-1-k``
    at position ``k``): the interior nodes of one are leaves of the other, so no node sends a
    piece down to two children in both.  Each tree's share goes in ``C`` pieces (``pieces``;
    default its share over 256 KiB, 1 to 64): a node at depth ``d`` sends piece ``c`` up in round
    ``D - d + c`` (once its children's piece ``c`` has arrived: they sent it the round before) and
    down in round ``D + d + c`` (its parent sent it the round before), so the reduction and the
    broadcast flow at once, one piece a round along every tree cable: ``2 D + C - 1`` rounds
    between the on-node phases instead of the ring's ``2 (N - 1)``.

    >>> p = allreduce_rail_tree(8, 8e6, ppn=2, pieces=4)   # 4 nodes of 2: D = 2, 2*2 + 4 - 1 = 7 tree rounds
    >>> int(p.step_round.max()) + 1, sorted(set(p.bytes.tolist()))
    (9, [500000.0, 4000000.0])
    >>> allreduce_rail_tree(8, 1.0, ppn=8).n_messages == allreduce_rail(8, 1.0, ppn=8).n_messages   # one node
    True
    """
    n_nodes = _nodes(n_ranks, ppn, "rail-tree")
    if trees not in (1, 2):
        raise TrafficError(f"allreduce:rail-tree runs 1 or 2 trees, not {trees}")
    share = size / ppn
    c = int(pieces) if pieces is not None else int(min(TREE_MAX_PIECES, max(1, -(-share / trees // TREE_PIECE))))
    if c < 1:
        raise TrafficError(f"allreduce:rail-tree needs at least one piece, got {c}")
    r = np.arange(n_ranks)
    node, local = np.divmod(r, ppn)
    on_node = (r, node * ppn + (local + 1) % ppn, share)
    rounds = [on_node] * (ppn - 1)
    if n_nodes > 1:
        kid = np.arange(1, n_nodes)                        # every position but the root's, with its parent's
        up = (kid - 1) // 2
        depth = np.floor(np.log2(kid + 1)).astype(np.int64)
        top = int(depth.max())
        i = np.arange(ppn)
        # tree cable (kid, up) of every rail, in each tree: ranks node * ppn + i
        nodes = [np.arange(n_nodes), n_nodes - 1 - np.arange(n_nodes)][:trees]
        a = np.concatenate([(at[kid][:, None] * ppn + i).ravel() for at in nodes])
        b = np.concatenate([(at[up][:, None] * ppn + i).ravel() for at in nodes])
        d = np.tile(np.repeat(depth, ppn), trees)
        for t in range(2 * top + c - 1):
            piece_up = t - (top - d)                       # the kid, at depth d, sends piece t - (D - d) up
            go_up = (piece_up >= 0) & (piece_up < c)
            piece_down = t - (top + d - 1)                 # its parent, at depth d - 1, sends it down
            go_down = (piece_down >= 0) & (piece_down < c)
            rounds.append((np.r_[a[go_up], b[go_down]], np.r_[b[go_up], a[go_down]], share / trees / c))
    rounds += [on_node] * (ppn - 1)
    rounds = [x for x in rounds if len(x[0])]
    if not rounds:
        raise TrafficError("allreduce needs at least 2 ranks")
    return Program.from_rounds("allreduce", n_ranks, rounds, algorithm="rail-tree", size=size, ppn=ppn, pieces=c,
                               trees=trees)


def alltoall_pairwise(n_ranks: int, size: float) -> Program:
    """Pairwise exchange: in round k rank r sends ``size`` to r + k and receives from r - k."""
    r = np.arange(n_ranks)
    rounds = [(r, (r + k) % n_ranks, size) for k in range(1, n_ranks)]
    return Program.from_rounds("alltoall", n_ranks, rounds, algorithm="pairwise", size=size)


def alltoall_bruck(n_ranks: int, size: float) -> Program:
    """Bruck: ceil(log2 n) rounds; in round k rank r sends to r + 2^k the blocks whose index has
    bit k set (``size`` bytes each)."""
    r = np.arange(n_ranks)
    rounds = []
    k = 1
    while k < n_ranks:
        blocks = int(np.count_nonzero(np.arange(n_ranks) & k))
        rounds.append((r, (r + k) % n_ranks, size * blocks))
        k <<= 1
    return Program.from_rounds("alltoall", n_ranks, rounds, algorithm="bruck", size=size)


def bcast_binomial(n_ranks: int, size: float, root: int = 0) -> Program:
    """Binomial tree broadcast: in round k the ranks that have the data (relative rank < 2^k)
    send it to relative rank + 2^k."""
    rounds = []
    k = 1
    while k < n_ranks:
        rel = np.arange(min(k, n_ranks - k))
        rounds.append(((rel + root) % n_ranks, (rel + k + root) % n_ranks, size))
        k <<= 1
    if not rounds:
        raise TrafficError("broadcast needs at least 2 ranks")
    return Program.from_rounds("bcast", n_ranks, rounds, algorithm="binomial", size=size, root=root)


def collective(name: str, algorithm: str | None, n_ranks: int, size: float, ppn: int | None = None) -> Program:
    """``allreduce`` / ``alltoall`` / ``bcast`` by algorithm (default: the first listed in COLLECTIVES);
    ``ppn``: ranks per node, for the algorithms that follow the nodes (``rail``, ``rail-tree``)."""
    if name not in COLLECTIVES:
        raise TrafficError(f"unknown collective {name!r}; choose from {', '.join(COLLECTIVES)}")
    algo = algorithm or COLLECTIVES[name][0]
    if algo not in COLLECTIVES[name]:
        raise TrafficError(f"{name} has no algorithm {algo!r}; choose from {', '.join(COLLECTIVES[name])}")
    if n_ranks < 2:
        raise TrafficError(f"{name} needs at least 2 ranks")
    if algo == "sharp":             # its messages run between switches: fabscope.dynamic.innetwork
        raise TrafficError("allreduce:sharp reduces in the switches and needs the fabric: "
                           "fabscope.dynamic.innetwork.allreduce_sharp runs it")
    return {
        ("allreduce", "ring"): allreduce_ring, ("allreduce", "recursive-doubling"): allreduce_recursive_doubling,
        ("alltoall", "pairwise"): alltoall_pairwise, ("alltoall", "bruck"): alltoall_bruck,
        ("bcast", "binomial"): bcast_binomial,
        ("allreduce", "rail"): partial(allreduce_rail, ppn=ppn),
        ("allreduce", "rail-tree"): partial(allreduce_rail_tree, ppn=ppn),
    }[(name, algo)](n_ranks, size)


def replay_matrix(path: str, n_ranks: int | None = None) -> Program:
    """A communication matrix (CSV or Matrix Market, as :mod:`fabscope.traffic.commfiles` reads
    them): entry (i, j) is sent as its message count of equal messages (one when no counts),
    the k-th messages of every channel in round k."""
    from fabscope.traffic.commfiles import read_comm_file

    g = read_comm_file(path)
    n = g.n if n_ranks is None else n_ranks
    if g.n > n:
        raise TrafficError(f"{path}: the matrix has {g.n} ranks, the job {n}")
    counts = np.maximum(np.round(np.asarray(g.msgs, dtype=float)).astype(np.int64), 1)
    src = np.repeat(g.src, counts)
    dst = np.repeat(g.dst, counts)
    size = np.repeat(np.asarray(g.bytes, float) / counts, counts)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rnd = np.arange(len(src)) - np.repeat(starts, counts)
    keep = size > 0
    return Program.from_arrays("replay", n, src[keep], dst[keep], size[keep], rnd[keep], source=path)


def replay_trace(path: str, n_ranks: int | None = None) -> Program:
    """A trace of timed messages: CSV lines ``time,src,dst,bytes`` (seconds, ranks, bytes; ``#``
    comments, an optional header line); each message is posted at its time by both ends."""
    from fabscope.numbers import number
    from fabscope.textio import read_lines

    rows = []
    for ln, line in read_lines(path, "message trace", TrafficError):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cells = [c.strip() for c in line.replace(";", ",").split(",")]
        try:
            t, s, d, b = float(cells[0]), int(cells[1]), int(cells[2]), float(cells[3])
        except (ValueError, IndexError):
            if not rows and ln == 1:       # a header line
                continue
            raise TrafficError(f"{path}:{ln}: {line[:40]!r} is not 'time,src,dst,bytes'") from None
        for what, v in (("time", t), ("bytes", b)):
            number(v, f"{path}:{ln}: {what}", 0, error=TrafficError)
        for what, v in (("src", s), ("dst", d)):        # rank -1 would be the last rank
            number(v, f"{path}:{ln}: {what}", 0, (n_ranks or 1 << 24) - 1, integer=True, error=TrafficError)
        rows.append((t, s, d, b))
    if not rows:
        raise TrafficError(f"{path}: the trace holds no message")
    a = np.array(rows)
    n = int(a[:, 1:3].max()) + 1 if n_ranks is None else n_ranks
    return Program.timed("trace", n, a[:, 0], a[:, 1].astype(np.int64), a[:, 2].astype(np.int64), a[:, 3],
                         source=path)
