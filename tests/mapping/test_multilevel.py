"""Multilevel mapping (ml, topo's start for graphs without a process grid): every rank gets a slot of
its own whatever the slot count (free slots, a tail block); the levels hold a start mapping exactly;
the same seed gives the same mapping; and it is no worse than Scotch on the shapes of the bench."""

import numpy as np
import pytest

import fabscope.mapping.algorithms.multilevel as ml
from fabscope.fabric.generators import fat_tree, itasca, torus
from fabscope.mapping.algorithms.baselines import random
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commgraph import geometric, random_sparse
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.targets import Target

needs_cc = pytest.mark.skipif(ml._load()[0] is None, reason=f"multilevel.c not built: {ml._load()[1]}")


@needs_cc
@pytest.mark.parametrize("fabric, n, ppn", [
    (lambda: torus((4, 4, 4), cores=1), 64, 1),          # every slot full, 2**6 places
    (lambda: torus((3, 5, 2), cores=1), 30, 1),          # a tail at most levels, odd dimensions
    (lambda: torus((4, 4), cores=3), 41, 3),             # 48 slots, 7 free
    (lambda: fat_tree(k=4, levels=3), 50, 4),            # 64 slots, 14 free
    (lambda: itasca(), 200, 8),
])
def test_every_rank_gets_its_own_slot(fabric, n, ppn):
    t = Target.whole(fabric(), n, ppn)
    g = random_sparse(n, degree=4, seed=2)
    for start in ("auto", None):
        m = ml.multilevel(g, t, seed=3, start=start)
        assert len(np.unique(m.slot)) == n
        assert m.slot.min() >= 0 and m.slot.max() < t.n_slots


@needs_cc
@pytest.mark.parametrize("fabric, n, ppn", [(lambda: torus((3, 5, 2), cores=2), 55, 2),
                                            (lambda: fat_tree(k=4, levels=3), 50, 4)])
def test_the_levels_hold_the_start_mapping(monkeypatch, fabric, n, ppn):
    """With no annealing steps, coarsening along the start's sibling places and projecting back
    gives the start itself: the levels represent it exactly, tail and free slots included."""
    monkeypatch.setattr(ml, "STEPS_COARSE", 0)
    t = Target.whole(fabric(), n, ppn)
    g = random_sparse(n, degree=4, seed=1)
    start = random(n, t, seed=5)
    m = ml.multilevel(g, t, seed=0, steps_per_vertex=0, start=start)
    assert np.array_equal(m.slot, start.slot)
    assert m.algorithm == "random+ml"


@needs_cc
def test_same_seed_same_mapping_and_the_seed_matters():
    t = Target.whole(torus((8, 8, 8), cores=1), 512)
    g = geometric(512, degree=8, seed=4)
    a, b, c = (ml.multilevel(g, t, seed=s) for s in (1, 1, 2))
    assert np.array_equal(a.slot, b.slot)
    assert not np.array_equal(a.slot, c.slot)


@needs_cc
def test_annealing_each_level_lowers_hop_bytes():
    t = Target.whole(torus((8, 8, 8), cores=1), 512)
    g = geometric(512, degree=8, seed=4)
    start = random(512, t, seed=0)
    m = ml.multilevel(g, t, seed=0, start=start)
    assert evaluate(m, g, links=False).hop_bytes < 0.5 * evaluate(start, g, links=False).hop_bytes


def test_morton_order_keeps_blocks_together():
    t = Target.whole(torus((4, 4, 4), cores=1), 64)
    order = ml.slot_order(t)
    c = t.fabric.coords[t.slot_host[order]]
    for size in (2, 4, 8):        # every aligned block of the order is a box of that many routers
        blocks = c.reshape(64 // size, size, 3)
        ext = blocks.max(axis=1) - blocks.min(axis=1) + 1
        assert (ext.prod(axis=1) == size).all()


@needs_cc
@pytest.mark.parametrize("fabric, n, ppn", [(lambda: torus((8, 8, 8), cores=1), 512, 1),
                                            (lambda: torus((4, 4, 4), cores=8), 512, 8),
                                            (lambda: fat_tree(k=8, levels=3), 512, 4)])
def test_topo_no_worse_than_scotch_on_hop_bytes(fabric, n, ppn):
    from fabscope.mapping.algorithms.scotch import available

    if not available():
        pytest.skip("pyscotch not installed")
    t = Target.whole(fabric(), n, ppn)
    g = geometric(n, degree=10, seed=1)
    ours = evaluate(map_ranks(g, t, "topo", objective="hop-bytes"), g, links=False).hop_bytes
    theirs = evaluate(map_ranks(g, t, "scotch", scotch_seeds=1), g, links=False).hop_bytes
    assert ours <= theirs


def _rebalance_dense(A, part, sizes):
    """The rebalancing pass as it was, with a dense candidates x parts table (the reference)."""
    from scipy.sparse import csr_matrix

    part = part.copy()
    k = len(sizes)
    for _ in range(4):
        over = np.bincount(part, minlength=k) - sizes
        if not np.any(over):
            return part
        cand = np.flatnonzero(over[part] > 0)
        M = csr_matrix((np.ones(len(part)), (np.arange(len(part)), part)), shape=(len(part), k))
        conn = (A[cand] @ M).toarray()
        own = conn[np.arange(len(cand)), part[cand]]
        room = np.flatnonzero(over < 0)
        best = room[np.argmax(conn[:, room], axis=1)]
        gain = conn[np.arange(len(cand)), best] - own
        for i in np.argsort(-gain, kind="stable"):
            v, p = cand[i], part[cand[i]]
            if over[p] <= 0:
                continue
            q = best[i] if over[best[i]] < 0 else room[np.argmax(over[room] < 0)]
            if over[q] >= 0:
                continue
            part[v] = q
            over[p] -= 1
            over[q] += 1
    return part


def test_sparse_rebalancing_chooses_as_the_dense_one_did():
    from fabscope.mapping.algorithms.hierarchical import _rebalance

    rng = np.random.default_rng(0)
    checked = 0
    for t in range(60):
        n, k = int(rng.integers(10, 120)), int(rng.integers(2, 10))
        A = random_sparse(n, degree=3, seed=t, size=1).adjacency.tocsr()
        A.data = rng.integers(1, 4, len(A.data)).astype(float)     # ties and unequal weights
        A = (A + A.T).tocsr()
        sizes = np.bincount(rng.integers(0, k, n), minlength=k)
        if (sizes == 0).any():
            continue
        part = rng.integers(0, k, n)
        assert np.array_equal(_rebalance(A, part, sizes), _rebalance_dense(A, part, sizes))
        checked += 1
    assert checked > 30


def test_topo_without_a_compiler_falls_back_to_metis(monkeypatch):
    monkeypatch.setattr(ml, "_load", lambda: (None, "no C compiler"))
    t = Target.whole(torus((4, 4, 4), cores=1), 64)
    g = random_sparse(64, degree=4, seed=2)
    m = map_ranks(g, t, "topo")
    assert m.algorithm.startswith("hier") and len(np.unique(m.slot)) == 64
    assert m.info["stages"][0] == {"step": "ml", "kept": False, "why": "not compiled"}


def test_topo_keeps_the_ranks_in_order_when_they_are_already_local():
    """A captured matrix has no process grid, but an application's own rank order is often local
    (LAMMPS's processor grid in C order, bench_mapping_peers' lammps case): on a torus of that grid's
    shape the ranks in order are one hop an edge, which ml alone does not find (2.16 hops a byte)."""
    import dataclasses

    from fabscope.mapping.commgraph import stencil

    g = dataclasses.replace(stencil((8, 8, 8), halo=1), grid=None, periodic=None)
    t = Target.whole(torus((8, 8, 8), cores=1), g.n, 1)
    assert evaluate(map_ranks(g, t, "ml"), g).hops_per_byte > 1.5
    m = map_ranks(g, t, "topo")
    assert evaluate(m, g).hops_per_byte == 1.0
    # in random order the ranks are not local: ml is kept
    perm = np.random.default_rng(3).permutation(g.n)
    r = dataclasses.replace(g, src=perm[g.src], dst=perm[g.dst])
    assert map_ranks(r, t, "topo").algorithm.startswith("ml")
    # nor on a tree, where the ranks in order spread over the fabric lower the busiest link alone:
    # the busiest-link objective must not buy that with hop-bytes
    ft = Target.whole(fat_tree(k=8, levels=3), g.n, 4)
    assert evaluate(map_ranks(r, ft, "topo"), r).hops_per_byte <= evaluate(map_ranks(r, ft, "ml"), r).hops_per_byte * 1.01


def test_link_loads_in_chunks_are_the_whole_sums(monkeypatch):
    """link_loads routes LOAD_CHUNK flows at a time (its temporaries follow the chunk): the same loads."""
    import fabscope.mapping.metrics as metrics

    f = fat_tree(k=8, levels=3)
    g = geometric(512, degree=8, seed=2)
    m = map_ranks(g, Target.whole(f, g.n, 1), "block")
    h = m.host
    whole = metrics.link_loads(f, h[g.src], h[g.dst], g.bytes)
    monkeypatch.setattr(metrics, "LOAD_CHUNK", 97)
    assert np.array_equal(metrics.link_loads(f, h[g.src], h[g.dst], g.bytes), whole)
    t = torus((8, 8, 8), cores=1)
    m = map_ranks(g, Target.whole(t, g.n, 1), "block")
    h = m.host
    monkeypatch.setattr(metrics, "LOAD_CHUNK", 1 << 30)
    whole = metrics.link_loads(t, h[g.src], h[g.dst], g.bytes)
    monkeypatch.setattr(metrics, "LOAD_CHUNK", 97)
    assert np.allclose(metrics.link_loads(t, h[g.src], h[g.dst], g.bytes), whole, rtol=1e-12)


@needs_cc
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_level_that_finds_no_better_placement_stops_early_with_the_same_answer(seed):
    """Ranks in order on a torus of the stencil's shape are optimal (every edge one hop): no sweep
    of the finest level finds a better placement, so it stops after half its sweeps, and the
    mapping is the one the full schedule returns."""
    from fabscope.mapping.algorithms.baselines import block
    from fabscope.mapping.commgraph import stencil

    t = Target.whole(torus((16, 16), cores=1), 256)
    g = stencil((16, 16), halo=1)
    start = block(256, t)
    m = ml.multilevel(g, t, seed=seed, start=start)
    full = ml.multilevel(g, t, seed=seed, start=start, patience=0)
    assert np.array_equal(m.slot, full.slot)
    sweeps = ml.STEPS_PER_VERTEX
    assert full.info["steps"][-1] == sweeps * 256                  # the whole schedule
    assert m.info["steps"][-1] == int(sweeps * ml.PATIENCE) * 256 - 1
    assert sum(m.info["steps"]) < sum(full.info["steps"])
    assert evaluate(m, g, links=False).hop_bytes == evaluate(start, g, links=False).hop_bytes


@needs_cc
def test_patience_changes_no_bench_like_answer():
    """Where the levels keep finding better placements (an irregular graph from METIS' start on a
    tree, from matching on a torus) the patient run gives the same mapping as the full schedule."""
    g = geometric(1024, degree=10, seed=1)
    for t in (Target.whole(torus((8, 8, 16), cores=1), 1024), Target.whole(fat_tree(k=8, levels=3), 1024, 8)):
        a = ml.multilevel(g, t, seed=0)
        b = ml.multilevel(g, t, seed=0, patience=0)
        assert np.array_equal(a.slot, b.slot)
