"""Torus mappings that tile and fold the application's grid onto the torus, as Rubik does.

The job's routers must form a box of the torus with the same number of slots
on each (a *cell*).  The application grid ``A`` is first *tiled*: each cell
takes a block ``b`` of the grid (``prod(b)`` = slots per cell), which leaves
a grid of blocks ``G = A / b``.  Each axis of ``G`` is then cut into up to
three *pieces* whose sizes multiply to its length, and every piece is laid
along one axis of the box; the pieces on a box axis multiply to its length.
An axis cut in pieces is walked as a boustrophedon (Rubik's ``zigzag``): the
inner piece runs forwards, then back, so neighbours along the axis stay one
hop apart.  Every tiling and folding that fits is scored on (a sample of) the
graph's edges by hop-bytes, and the best one is kept.

A 16x16x16 stencil on a 16x16x16 torus needs no fold (1 hop per edge); a
16x16x32 stencil on an 8x8x16 torus of 8-core nodes tiles 2x2x2 blocks per
node; a 64x64 grid on a 16x16x16 torus folds one axis into two.

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import stencil
>>> from fabscope.mapping.targets import Target
>>> from fabscope.mapping.metrics import evaluate
>>> g = stencil((4, 16), halo=1)                  # the 16 axis folds into two torus axes
>>> m = torus_fold(g, Target.whole(torus((4, 4, 4), cores=1), 64))
>>> evaluate(m, g, links=False).hops_per_edge, m.info["optimal"]
(1.0, True)
"""

from __future__ import annotations

import time
from itertools import permutations, product
from math import prod
from typing import Iterator

import numpy as np

from fabscope.errors import MappingError
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import weighted_sum
from fabscope.mapping.targets import Mapping, Target

__all__ = ["torus_fold", "target_box"]

Piece = tuple[int, int]          # (box axis, size)
Fold = tuple[tuple[Piece, ...], ...]   # per grid axis, its pieces, outer first


def target_box(target: Target) -> tuple[np.ndarray, tuple[int, ...], np.ndarray, int]:
    """``(origin, shape, cell_first_slot, cell_size)`` of a target whose routers fill a box.

    ``cell_first_slot`` is indexed by the box coordinate in C order.
    """
    f = target.fabric
    if f.coords is None:
        raise MappingError(f"fabric {f.name!r} has no coordinates to fold a grid onto")
    host = target.slot_host
    c = f.coords[host].astype(np.int64)
    lo, hi = c.min(axis=0), c.max(axis=0)
    shape = tuple(int(x) for x in hi - lo + 1)
    flat = np.ravel_multi_index(tuple((c - lo).T), shape)
    counts = np.bincount(flat, minlength=prod(shape))
    if np.any(counts == 0) or np.any(counts != counts[0]):
        raise MappingError(f"the job's {target.n_nodes} nodes do not fill a box of the torus with equal slots "
                           f"per router (box {'x'.join(map(str, shape))})")
    order = np.argsort(flat, kind="stable")      # slots grouped by cell, in slot order within a cell
    first = np.empty(prod(shape), np.int64)
    first[flat[order[:: counts[0]]]] = order[:: counts[0]]
    # slots of one cell must be consecutive for first + k to address them
    cell_slots = order.reshape(-1, counts[0])
    if np.any(np.diff(cell_slots, axis=1) != 1) and counts[0] > 1:
        raise MappingError("slots of a router are not consecutive in the job's node list")
    return lo, shape, first, int(counts[0])


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _factorizations(n: int, max_parts: int) -> Iterator[tuple[int, ...]]:
    """Ordered factorizations of ``n`` into 1..max_parts factors > 1 (``(1,)`` for n = 1)."""
    if n == 1:
        yield (1,)
        return
    yield (n,)
    if max_parts > 1:
        for d in _divisors(n)[1:-1]:
            for rest in _factorizations(n // d, max_parts - 1):
                if rest != (1,):
                    yield (d,) + rest


def _folds(G: tuple[int, ...], box: tuple[int, ...], max_parts: int = 3, limit: int = 4000) -> list[Fold]:
    """Every way to lay the grid's axes along the box's axes in pieces (see the module docstring)."""
    out: list[Fold] = []
    nb = len(box)

    def rec(i: int, room: list[int], acc: list[tuple[Piece, ...]]) -> None:
        if len(out) >= limit:
            return
        if i == len(G):
            if all(r == 1 for r in room):
                out.append(tuple(acc))
            return
        for fac in _factorizations(G[i], min(max_parts, nb)):
            if fac == (1,):
                rec(i + 1, room, acc + [((0, 1),)])
                continue
            for axes in permutations(range(nb), len(fac)):
                if all(room[a] % s == 0 for a, s in zip(axes, fac)):
                    new = room.copy()
                    for a, s in zip(axes, fac):
                        new[a] //= s
                    rec(i + 1, new, acc + [tuple(zip(axes, fac))])

    rec(0, list(box), [])
    return out


def _blocks(A: tuple[int, ...], cell: int) -> list[tuple[int, ...]]:
    return [b for b in product(*[_divisors(a) for a in A]) if prod(b) == cell]


def _zigzag_digits(x: np.ndarray, sizes: tuple[int, ...]) -> list[np.ndarray]:
    """Digits of ``x`` in the reflected (boustrophedon) mixed radix of ``sizes``, outer first.

    A digit runs backwards when the plain value of the digits outside it is odd,
    so ``x`` and ``x + 1`` always differ by one in exactly one digit.

    >>> [d.tolist() for d in _zigzag_digits(np.arange(6), (2, 3))]
    [[0, 0, 0, 1, 1, 1], [0, 1, 2, 2, 1, 0]]
    """
    digits = []
    for k, s in enumerate(sizes):
        st = prod(sizes[k + 1:])
        raw = (x // st) % s
        outer = x // (st * s)
        digits.append(np.where(outer % 2 == 1, s - 1 - raw, raw))
    return digits


def _box_coords(g: np.ndarray, fold: Fold, nbox: int) -> list[np.ndarray]:
    """Box coordinate along every box axis of block coordinates ``g`` (one row per grid axis)."""
    coord = [np.zeros(g.shape[1], np.int64) for _ in range(nbox)]
    for i, pieces in enumerate(fold):
        if len(pieces) == 1:
            axis, s = pieces[0]
            if s > 1:
                coord[axis] = coord[axis] * s + g[i]
            continue
        sizes = tuple(s for _, s in pieces)
        for (axis, s), d in zip(pieces, _zigzag_digits(g[i], sizes)):
            coord[axis] = coord[axis] * s + d
    return coord


def _cells(ranks: np.ndarray, A: tuple[int, ...], b: tuple[int, ...], fold: Fold,
           box: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Box coordinate (flat, C order) and position within its cell of each rank."""
    a = np.array(np.unravel_index(ranks, A))                  # (d_a, n)
    bb = np.array(b)[:, None]
    g, inner = a // bb, a % bb
    within = np.ravel_multi_index(tuple(inner), b) if len(b) else np.zeros(len(ranks), np.int64)
    return np.ravel_multi_index(tuple(_box_coords(g, fold, len(box))), box), within


def _score(c: np.ndarray, i_s: np.ndarray, i_d: np.ndarray, kc: np.ndarray, eb: np.ndarray) -> float:
    """Hop-bytes of edges ``(i_s, i_d)`` between points of box coordinates ``c`` (axis, point);
    ``kc``: the ring length of each wrapping axis, 0 where the box does not wrap."""
    hb = 0.0
    for a in range(c.shape[0]):
        ca = c[a]
        d = np.abs(ca.take(i_s) - ca.take(i_d))
        if kc[a]:
            d = np.minimum(d, kc[a] - d)
        hb += weighted_sum(d, eb)
    return hb


def torus_fold(graph: CommGraph, target: Target, sample: int = 20_000, seed: int = 0,
               max_folds: int = 400, coarse: int = 3000, keep: int = 12) -> Mapping:
    """The best tiling and folding of ``graph.grid`` onto the target's box (see the module docstring)."""
    t0 = time.perf_counter()
    if graph.grid is None:
        raise MappingError(f"graph {graph.name!r} has no process grid to fold; use the hierarchical mapping")
    A = tuple(graph.grid)
    lo, box, first, cell = target_box(target)
    if graph.n != target.n_slots:
        raise MappingError(f"folding needs as many ranks as slots: {graph.n} ranks, {target.n_slots} slots")
    f = target.fabric
    rng = np.random.default_rng(seed)
    e = np.arange(graph.n_edges) if graph.n_edges <= sample else rng.choice(graph.n_edges, sample, replace=False)
    es, ed, eb = graph.src[e], graph.dst[e], graph.bytes[e]
    k = np.array(f.dims)
    full = (np.array(box) == k) & np.array(f.periodic)        # the box wraps only where it spans a torus ring
    best: tuple[float, tuple, Fold] | None = None
    # a lower bound per tiling: every edge between two cells costs at least one hop
    tilings = []
    for b in _blocks(A, cell):
        a_s = np.array(np.unravel_index(es, A)) // np.array(b)[:, None]
        a_d = np.array(np.unravel_index(ed, A)) // np.array(b)[:, None]
        tilings.append((float(eb[np.any(a_s != a_d, axis=0)].sum()), b))
    tilings.sort(key=lambda t: t[0])
    # the ranks the sampled edges touch, once: every fold is scored on their block coordinates.
    # Folds are first ranked on a small sub-sample, and the best few rescored on the whole sample.
    ends, inv = np.unique(np.r_[es, ed], return_inverse=True)
    i_s, i_d = inv[: len(es)], inv[len(es):]
    sub = np.arange(len(es)) if len(es) <= coarse else rng.choice(len(es), coarse, replace=False)
    a_ends = np.array(np.unravel_index(ends, A))
    kc = np.where(full, k, 0)
    for bound, b in tilings:
        if best is not None and best[0] <= bound + 1e-9:
            break                                  # no later tiling can do better
        G = tuple(ai // bi for ai, bi in zip(A, b))
        g_ends = a_ends // np.array(b)[:, None]
        folds = sorted(_folds(G, box), key=lambda fd: sum(len(p) for p in fd))[:max_folds]
        if len(sub) < len(es) and len(folds) > keep:
            rough = [_score(np.array(_box_coords(g_ends, fd, len(box))), i_s[sub], i_d[sub], kc, eb[sub])
                     for fd in folds]
            folds = [folds[j] for j in np.argsort(rough, kind="stable")[:keep]]
        for fold in folds:
            hb = _score(np.array(_box_coords(g_ends, fold, len(box))), i_s, i_d, kc, eb)
            if best is None or hb < best[0] - 1e-9:
                best = (hb, b, fold)
            if hb <= bound + 1e-9:
                break                              # this tiling's optimum
    if best is None:
        raise MappingError(f"grid {'x'.join(map(str, A))} does not tile and fold onto a "
                           f"{'x'.join(map(str, box))} box of {cell}-slot routers")
    hb_best, b, fold = best
    cflat, within = _cells(np.arange(graph.n), A, b, fold, box)
    slot = first[cflat] + within
    # optimal when every edge between cells is one hop and no tiling cuts fewer bytes
    optimal = hb_best <= tilings[0][0] + 1e-9
    if optimal and len(e) < graph.n_edges:          # the sample says so: check every edge
        d = np.abs(np.array(np.unravel_index(cflat[graph.src], box)) - np.array(np.unravel_index(cflat[graph.dst], box)))
        d = np.where(full[:, None], np.minimum(d, k[:, None] - d), d).sum(axis=0)
        b_best = np.array(b)[:, None]
        cross = np.any(np.array(np.unravel_index(graph.src, A)) // b_best != np.array(np.unravel_index(graph.dst, A)) // b_best, axis=0)
        optimal = bool(np.all(d[cross] == 1)) and tilings[0][1] == b
    return Mapping(target, slot, "fold", time.perf_counter() - t0,
                   info={"block": list(b), "fold": [[list(p) for p in pcs] for pcs in fold], "box": list(box),
                         "optimal": bool(optimal)})
