"""Simulated annealing of hop-bytes (+anneal): the compiled loop equals the Python reference step for step,
it lowers hop-bytes where swaps stop, and it never hands back a busier link than the tolerance allows."""

from pathlib import Path

import numpy as np
import pytest

from fabscope.fabric.generators import fat_tree, torus
from fabscope.mapping.algorithms.anneal import _compiled, _load, _Problem, anneal, anneal_reference
from fabscope.mapping.algorithms.baselines import random
from fabscope.mapping.algorithms.refine import TOLERANCE, refine_hops
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commgraph import random_sparse
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.targets import Mapping, Target

needs_cc = pytest.mark.skipif(_load()[0] is None, reason=f"anneal.c not built: {_load()[1]}")
MESH = Path(__file__).resolve().parents[2] / "bench" / "data" / "mesh1024.mtx"


@needs_cc
@pytest.mark.parametrize("fabric, ppn, n", [
    (lambda: torus((4, 4, 4), cores=1), 1, 64),         # one rank per node, every slot full
    (lambda: fat_tree(k=4, levels=3), 4, 50),           # 16 nodes x 4 slots, 14 left free
    (lambda: torus((4, 4), cores=4), 3, 40),            # 16 nodes x 3 slots
])
@pytest.mark.parametrize("seed", [0, 7])
def test_compiled_loop_equals_the_reference(fabric, ppn, n, seed):
    f = fabric()
    g = random_sparse(n, degree=3, seed=seed + 1)
    t = Target.whole(f, n, ppn)
    m = random(n, t, seed)
    p = _Problem(m, g)
    t0, t1 = 3.0 * p.unit, 0.01 * p.unit
    best_c, slot_c, done = _compiled(p, m.slot, t0, t1, 20_000, seed)
    best_py, slot_py = anneal_reference(p, m.slot, t0, t1, 20_000, seed)
    assert done == 20_000
    assert np.array_equal(slot_c, slot_py)
    assert best_c == pytest.approx(best_py, rel=1e-12)
    assert len(np.unique(slot_c)) == n and np.isin(slot_c, np.arange(t.n_slots)).all()
    assert evaluate(Mapping(t, slot_c, "x", 0.0), g, links=False).hop_bytes == pytest.approx(best_c)


@needs_cc
def test_anneal_goes_below_where_swaps_stop_on_the_mesh():
    # T4 of docs/mapping.md: the irregular mesh on an 8x8x16 torus, one rank per node
    g = load_comm(str(MESH))
    t = Target.whole(torus((8, 8, 16), cores=1), g.n, 1)
    m0 = map_ranks(g, t, "hier")
    swapped = evaluate(refine_hops(m0, g, seed=0), g, links=False).hop_bytes
    m = anneal(m0, g, seed=0, steps=4_000_000)
    assert m.info["stages"][-1]["kept"] and m.algorithm == "hier+anneal"
    assert evaluate(m, g, links=False).hop_bytes < 0.9 * swapped


@needs_cc
def test_anneal_gives_back_its_input_when_the_busiest_link_rises():
    # T6's case: annealing lowers hop-bytes but crowds a host link; beyond the tolerance the input returns
    g = load_comm(str(MESH))
    t = Target.whole(torus((4, 4, 8), cores=8), g.n, 8)
    m0 = map_ranks(g, t, "hier")
    m = anneal(m0, g, seed=0, steps=2_000_000)
    st = m.info["stages"][-1]
    loose = anneal(m0, g, seed=0, steps=2_000_000, link_tolerance=None)
    if st["kept"]:
        assert evaluate(m, g).max_link_load <= evaluate(m0, g).max_link_load * (1 + TOLERANCE) + 1e-9
    else:
        assert np.array_equal(m.slot, m0.slot) and "busiest link rose" in st["why"]
        assert st["found_hop_bytes"] < evaluate(m0, g, links=False).hop_bytes
    assert loose.info["stages"][-1]["kept"]


def test_jobs_too_large_are_not_annealed(monkeypatch):
    import fabscope.mapping.algorithms.anneal as A

    monkeypatch.setattr(A, "MAX_NODES", 8)
    g = random_sparse(64, degree=3, seed=1)
    m0 = random(64, Target.whole(torus((4, 4, 4), cores=1), 64), 0)
    m = A.anneal(m0, g)
    assert np.array_equal(m.slot, m0.slot) and "64 nodes > 8" in m.info["stages"][-1]["why"]
