"""Flow-model cases solved by hand, max-min properties on random fabrics and traffic, and the compiled
solver (maxmin.c) held to the numpy reference bit for bit."""

import shutil
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from fabscope.diagnose.pairmodel import PairModel
from fabscope.fabric import Placement
from fabscope.fabric.generators import dragonfly, fat_tree, torus, xgft
from fabscope.model import maxmin as mm
from fabscope.model.maxmin import congestion_count, maxmin
from fabscope.model.simulate import simulate
from fabscope.routing import make_routing
from fabscope.traffic.flows import Traffic


def test_single_bottleneck_shared_equally():
    # three flows on one link of capacity 9: 3 each
    A = csr_matrix(np.ones((1, 3)))
    assert maxmin(A, np.array([9.0])).tolist() == [3.0, 3.0, 3.0]


def test_classic_parking_lot():
    # links L0 (cap 1), L1 (cap 1); flow a crosses both, b only L0, c only L1.
    # Filling: all rise to 1/2, both links full at once -> a = b = c = 0.5.
    A = csr_matrix(np.array([[1, 1, 0], [1, 0, 1]], float))
    assert np.allclose(maxmin(A, np.array([1.0, 1.0])), [0.5, 0.5, 0.5])


def test_two_levels_of_bottleneck():
    # L0 cap 2 carries a,b; L1 cap 10 carries b,c.
    # Level 1: all rise to 1, L0 full (a=b=1) -> freeze a,b.
    # Level 2: c alone on L1 with 10 - 1 = 9 left -> c = 9.
    A = csr_matrix(np.array([[1, 1, 0], [0, 1, 1]], float))
    assert np.allclose(maxmin(A, np.array([2.0, 10.0])), [1.0, 1.0, 9.0])


def test_flow_cap_releases_capacity():
    # one link cap 10, flow a capped at 2 -> b gets 8
    A = csr_matrix(np.ones((1, 2)))
    assert np.allclose(maxmin(A, np.array([10.0]), np.array([2.0, np.inf])), [2.0, 8.0])


def test_fractional_weights():
    # adaptive split: flow a puts 1/2 on L0 and L1 each; b on L0 whole. caps 3, 3.
    # rates r: L0: r_a/2 + r_b <= 3 ; L1: r_a/2 <= 3. Fill equally: 1.5 r = 3 -> r = 2,
    # L0 full, both freeze at 2.
    A = csr_matrix(np.array([[0.5, 1.0], [0.5, 0.0]]))
    assert np.allclose(maxmin(A, np.array([3.0, 3.0])), [2.0, 2.0])


def test_congestion_count_is_capacity_over_busiest_link_count():
    # L0 cap 4 with 4 flows, L1 cap 4 with 1 of them: each gets 1 (ORCS-style)
    A = csr_matrix(np.array([[1, 1, 1, 1], [1, 0, 0, 0]], float))
    assert np.allclose(congestion_count(A, np.array([4.0, 4.0])), [1, 1, 1, 1])


def _random_case(draw_seed, fabric_kind):
    rng = np.random.default_rng(draw_seed)
    if fabric_kind == 0:
        f = xgft((int(rng.integers(2, 5)), int(rng.integers(2, 4))), (1, int(rng.integers(1, 4))), cores=2)
        routing = "dmodk"
    elif fabric_kind == 1:
        f = torus(tuple(int(x) for x in rng.integers(2, 5, 2)), cores=2)
        routing = "dor"
    else:
        f = fat_tree(k=2, levels=3, cores=2)
        routing = "adaptive"
    n = f.n_hosts * 2
    m = int(rng.integers(1, 3 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return f, Placement.block(f, n, 2), Traffic.build("random", src, dst, 1e6), routing


def _solve(f, p, t, routing):
    r = make_routing(f, routing).routes(p.host[t.src], p.host[t.dst])
    hs, hd = p.host[t.src], p.host[t.dst]
    intra = np.flatnonzero(hs == hd)
    res = np.r_[r.link, f.n_links + hs[intra]]
    flw = np.r_[r.flow, intra]
    w = np.r_[r.weight, np.ones(len(intra))]
    cap = np.r_[f.link_capacity, f.host_memory_bw]
    A = csr_matrix((w, (res, flw)), shape=(len(cap), t.n_flows))
    fcap = np.full(t.n_flows, np.inf)
    fcap[intra] = f.host_copy_rate[hs[intra]]
    return A, cap, fcap, maxmin(A, cap, fcap)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 2))
def test_no_link_above_capacity_and_maxmin_certificate(seed, kind):
    f, p, t, routing = _random_case(seed, kind)
    A, cap, fcap, rate = _solve(f, p, t, routing)
    assert np.all(np.isfinite(rate)) and np.all(rate > 0)
    load = A @ rate
    assert np.all(load <= cap * (1 + 1e-9))
    # certificate: every flow is at its cap, or crosses a full resource on which
    # no flow has a larger rate
    full = load >= cap * (1 - 1e-7)
    Ac = A.tocsc()
    Ar = A.tocsr()
    for fl in range(t.n_flows):
        if rate[fl] >= fcap[fl] * (1 - 1e-9):
            continue
        rows = Ac.indices[Ac.indptr[fl]:Ac.indptr[fl + 1]]
        ok = False
        for r_ in rows:
            if not full[r_]:
                continue
            others = Ar.indices[Ar.indptr[r_]:Ar.indptr[r_ + 1]]
            if rate[fl] >= rate[others].max() * (1 - 1e-7):
                ok = True
                break
        assert ok, f"flow {fl} has no bottleneck"


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_rates_unchanged_when_ranks_relabelled(seed):
    # relabelling ranks (each keeps its host) changes no flow's rate
    f, p, t, routing = _random_case(seed, 0)
    perm = np.random.default_rng(seed + 1).permutation(p.n_ranks)   # new label of each old rank
    host2 = np.empty_like(p.host)
    host2[perm] = p.host
    t2 = Traffic.build("relabelled", perm[t.src], perm[t.dst], 1e6)
    r1 = simulate(f, p, t, routing).pairs["bandwidth"]
    r2 = simulate(f, Placement.from_hosts(f, host2), t2, routing).pairs["bandwidth"]
    assert np.allclose(r1, r2)


def _relabel_hosts(f, perm):
    """The same fabric with host i renumbered perm[i] (switches keep their indices)."""
    from fabscope.fabric.model import Fabric

    h = f.n_hosts
    node_map = np.r_[perm, np.arange(h, f.n_nodes)]
    names = np.empty(f.n_nodes, dtype=object)
    names[node_map] = np.array(f.node_names, dtype=object)
    inv = np.argsort(perm)
    return Fabric(name=f.name, node_names=tuple(names), n_hosts=h,
                  link_src=node_map[f.link_src], link_dst=node_map[f.link_dst],
                  link_capacity=f.link_capacity, link_latency=f.link_latency,
                  switch_level=f.switch_level, host_cores=f.host_cores[inv],
                  groups={k: v[inv] for k, v in f.groups.items()}, levels=f.levels, far_label=f.far_label)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([0, 2]))
def test_rates_unchanged_when_hosts_relabelled(seed, kind):
    # the adaptive bound depends on the graph only, so renumbering hosts moves rates with them
    f, p, t, _ = _random_case(seed, kind)
    perm = np.random.default_rng(seed + 2).permutation(f.n_hosts)
    g = _relabel_hosts(f, perm)
    r1 = simulate(f, p, t, "adaptive")
    r2 = simulate(g, Placement.from_hosts(g, perm[p.host]), t, "adaptive")
    assert np.allclose(r1.pairs["bandwidth"], r2.pairs["bandwidth"])
    assert r1.pairs["src_host"].tolist() == r2.pairs["src_host"].tolist()


def test_oversubscribed_leaf_gives_half_rate():
    f = xgft((4, 2), (1, 2))                  # 2 leaves of 4 hosts, 2 spines: 2:1
    p = Placement.block(f, 8, 1)
    t = Traffic.build("cross", [0, 1, 2, 3], [4, 5, 6, 7], 1e6)
    r = simulate(f, p, t, "dmodk")
    assert np.allclose(r.pairs["bandwidth"], f.link_capacity[0] / 2)


# --- the compiled solver (maxmin.c) against the numpy reference -------------------------------------

def _same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _random_problem(seed):
    """A sparse resource-by-flow matrix made for ties: weights and capacities from small sets, so
    several resources fill at one level and flows cross several full ones; zero capacities, columns
    with no entry, flows capped (some at the very level a resource fills)."""
    rng = np.random.default_rng(seed)
    n_res, n_flows = int(rng.integers(0, 40)), int(rng.integers(0, 60))
    dense = rng.random((n_res, n_flows)) < rng.uniform(0.03, 0.3)
    w = np.where(dense, rng.choice([1.0, 0.5, 0.25, 1 / 3, 2.0], (n_res, n_flows)), 0.0)
    w[:, rng.random(n_flows) < 0.15] = 0.0                         # flows on no resource
    capacity = rng.choice([0.0, 1.0, 2.0, 3.0, 6.0, np.inf, rng.uniform(0, 5)], n_res)
    flow_cap = np.where(rng.random(n_flows) < 0.3, rng.choice([0.5, 1.0, 2.0, rng.uniform(0, 3)], n_flows), np.inf)
    return csr_matrix(w), capacity, flow_cap


@pytest.mark.parametrize("seed", range(300))
def test_compiled_rates_are_the_reference_bits(seed):
    A, capacity, flow_cap = _random_problem(seed)
    ref = mm.maxmin_reference(A, capacity, flow_cap)
    assert _same_bits(mm.maxmin(A, capacity, flow_cap), ref)
    assert _same_bits(mm.maxmin(A, capacity), mm.maxmin_reference(A, capacity))
    # the prepared form, solved twice under other capacities: the kept scratch leaves nothing behind
    m = mm.prepare(A)
    for c in (capacity, capacity[::-1].copy(), np.zeros_like(capacity)):
        assert _same_bits(mm.maxmin(m, c, flow_cap), mm.maxmin_reference(A, c, flow_cap))


def test_ties_zero_capacity_and_free_flows_by_hand():
    # rows 0 and 1 fill at 1 together (flow 1 crosses both: frozen once); row 2 has capacity 0;
    # flow 4 crosses nothing (inf), flow 5 crosses nothing but is capped at 0.5
    A = csr_matrix(np.array([[1, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0]], float))
    cap = np.array([2.0, 2.0, 0.0])
    fcap = np.array([np.inf, np.inf, np.inf, np.inf, np.inf, 0.5])
    want = [1.0, 1.0, 1.0, 0.0, np.inf, 0.5]
    assert mm.maxmin(A, cap, fcap).tolist() == want
    assert mm.maxmin_reference(A, cap, fcap).tolist() == want


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
def test_empty_matrices(shape):
    A = csr_matrix(np.zeros(shape))
    got = mm.maxmin(A, np.ones(shape[0]))
    assert _same_bits(got, mm.maxmin_reference(A, np.ones(shape[0])))
    assert got.tolist() == [np.inf] * shape[1]


def test_capacity_of_the_wrong_length_is_refused_before_the_solve():
    A = csr_matrix(np.ones((3, 2)))
    with pytest.raises(ValueError, match="capacity has shape"):
        mm.maxmin(A, np.ones(2))
    with pytest.raises(ValueError, match="flow_cap has shape"):
        mm.maxmin(A, np.ones(3), np.ones(5))


def test_nan_capacity_is_solved_by_the_reference():
    A = csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))
    cap = np.array([np.nan, 2.0])
    assert np.array_equal(mm.maxmin(A, cap), mm.maxmin_reference(A, cap), equal_nan=True)


def test_the_compiled_path_is_taken_where_a_compiler_is(monkeypatch):
    if shutil.which("gcc") or shutil.which("cc"):
        assert mm.available(), mm._load()[1]
    if not mm.available():
        pytest.skip(f"maxmin.c not built: {mm._load()[1]}")
    A, capacity, flow_cap = _random_problem(7)
    ref = mm.maxmin_reference(A, capacity, flow_cap)

    def boom(*a, **k):
        raise AssertionError("the numpy reference ran where the library loads")

    monkeypatch.setattr(mm, "maxmin_reference", boom)
    assert _same_bits(mm.maxmin(A, capacity, flow_cap), ref)


def test_with_the_compiled_path_off_the_reference_answers(monkeypatch):
    A, capacity, flow_cap = _random_problem(11)
    ref = mm.maxmin_reference(A, capacity, flow_cap)
    assert _same_bits(mm.maxmin(A, capacity, flow_cap, compiled=False), ref)
    monkeypatch.setattr(mm, "_load", lambda: (None, "no C compiler (gcc or cc) on PATH"))
    assert not mm.available()
    assert _same_bits(mm.maxmin(A, capacity, flow_cap), ref)
    f = fat_tree(k=4, levels=2)
    pm = PairModel(f, np.array([0, 1, 2]), np.array([5, 6, 2]), scenario=np.array([0, 0, 1]))
    assert np.all(np.isfinite(pm.flow_rates()))


def _pair_models():
    rng = np.random.default_rng(5)
    out = []
    for f, routing in ((fat_tree(k=8, levels=2), "dmodk"), (fat_tree(k=4, levels=3), "adaptive"),
                       (dragonfly(a=4, p=2, h=2, g=9), None), (torus((4, 4, 3)), "dor")):
        n = 3 * f.n_hosts
        hs, hd = rng.integers(0, f.n_hosts, n), rng.integers(0, f.n_hosts, n)     # some on one host
        out.append(PairModel(f, hs, hd, scenario=rng.integers(0, 3, n), pingpong=rng.random(n) < 0.7,
                             routing=routing))
    return out


@pytest.mark.parametrize("pm", _pair_models(), ids=lambda pm: pm.fabric.name)
def test_pair_model_rates_are_the_reference_bits_under_random_capacities(pm):
    f = pm.fabric
    rng = np.random.default_rng(9)
    for trial in range(6):
        factor = np.ones(f.n_links)
        if trial:                                  # a few links cut, or every link its own factor
            pick = rng.random(f.n_links) < (0.05 if trial < 3 else 1.0)
            factor[pick] = rng.choice([0.0, 0.25, 0.5, rng.uniform(0.1, 1)], int(pick.sum()))
        cap = f.link_capacity * factor
        got = pm.flow_rates(cap)
        ref = mm.maxmin_reference(pm.A, np.r_[cap, f.host_memory_bw][pm.res_kind], pm.flow_cap)
        assert _same_bits(got, ref)


def test_pair_model_converts_its_matrix_once(monkeypatch):
    made = []
    real = mm.MaxMinMatrix.__init__

    def counting(self, A):
        made.append(A)
        real(self, A)

    monkeypatch.setattr(mm.MaxMinMatrix, "__init__", counting)
    f = fat_tree(k=4, levels=2)
    pm = PairModel(f, np.arange(8), np.arange(8, 16) % f.n_hosts)
    a = pm.flow_rates()
    b = pm.flow_rates(f.link_capacity * 0.5)
    assert len(made) == 1 and made[0] is pm.A
    assert np.allclose(b, a * 0.5)
    # nor do the bottlenecks, which read the solver's CSC
    from fabscope import sparse

    turned = []
    real_tocsc = sparse._Compressed.tocsc
    monkeypatch.setattr(sparse._Compressed, "tocsc", lambda self: turned.append(self) or real_tocsc(self))
    half = f.link_capacity * 0.5
    flows, res = pm.binding(b, half)
    assert not turned and len(flows)
    assert np.array_equal(pm.bottlenecks(b, half) >= 0, np.isin(np.arange(len(b)), flows))


def test_threads_solving_one_matrix_at_once_each_get_their_rates():
    pm = _pair_models()[0]
    f = pm.fabric
    caps = [f.link_capacity * np.random.default_rng(s).uniform(0.2, 1.0, f.n_links) for s in range(8)]
    want = [pm.flow_rates(c) for c in caps]
    got = [None] * len(caps)

    def run(i):
        for _ in range(3):
            got[i] = pm.flow_rates(caps[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(caps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(_same_bits(g, w) for g, w in zip(got, want))
