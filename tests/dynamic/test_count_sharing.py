"""``sharing="count"`` (``simulate --dynamic --model congestion``): the static congestion rule at every event."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from fabscope.cli import main
from fabscope.dynamic.engine import run_program
from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.model.maxmin import congestion_count
from fabscope.fabric.generators import fat_tree, torus, xgft

FABRICS = [lambda: fat_tree(k=4, levels=2, up=2), lambda: torus((3, 4)), lambda: xgft([4, 3], [1, 2], cores=2)]


def _two_flows(sharing):
    # a (10 B) crosses link 0 (1 B/s) and link 1 (10 B/s); b (45 B) crosses link 1 only.
    prog = Program.from_arrays("t", 4, np.arange(2), 2 + np.arange(2), [10.0, 45.0], [0, 0])
    out = run_program(prog, np.array([1.0, 10.0]), [[0, 1], [1]], [[1.0, 1.0], [1.0]], [np.inf, np.inf],
                      [0.0, 0.0], [0, 1], sharing=sharing)
    return out.msg_end.tolist()


def test_count_leaves_unused_share_to_no_one():
    # max-min: a at 1 B/s, b takes the other 9: b ends at 5 s, a at 10 s.
    assert _two_flows("maxmin") == pytest.approx([10.0, 5.0])
    # count: link 1 carries 2 flows, 5 B/s each; a is held to 1 B/s by link 0, b stays at 5: ends at 9 s.
    assert _two_flows("count") == pytest.approx([10.0, 9.0])


def test_count_first_allocation_equals_static_rule():
    rng = np.random.default_rng(3)
    n_res, n = 6, 9
    paths = [sorted(rng.choice(n_res, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(n)]
    caps = rng.uniform(1, 10, n_res)
    prog = Program.from_arrays("t", 2 * n, np.arange(n), n + np.arange(n), np.full(n, 1e-3), np.zeros(n, int))
    out = run_program(prog, caps, paths, [[1.0] * len(p) for p in paths], [np.inf] * n, [0.0] * n,
                      list(range(n)), sharing="count")
    A = csr_matrix((np.ones(sum(map(len, paths))), ([r for p in paths for r in p],
                    [i for i, p in enumerate(paths) for _ in p])), shape=(n_res, n))
    rate = congestion_count(A, caps)
    # the first message to end, ends at its size over its static congestion rate
    first = int(np.argmin(out.msg_end))
    assert out.msg_end[first] == pytest.approx(1e-3 / rate[first])
    assert out.msg_end.min() == pytest.approx(min(1e-3 / rate))


def test_cli_dynamic_congestion_records_model(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc = main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "1", "--dynamic", "--iterations", "2",
               "--model", "congestion", "-o", str(out)])
    assert rc == 0
    assert "congestion sharing" in capsys.readouterr().out
    import json

    meta = json.loads(out.read_text())["meta"]
    assert meta["model"] == "congestion" and meta["engine"] in ("c", "python")


@pytest.mark.parametrize("make", [
    lambda: pg.pingpong(np.arange(0, 16, 2), np.arange(1, 16, 2) * 3 % 16, 2**20, 5, n_ranks=16),
    lambda: pg.allreduce_ring(16, 2**20),
    lambda: pg.alltoall_pairwise(16, 5e4),
    lambda: Program.from_arrays("mixed", 16, [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
                                [9, 10, 11, 12, 9, 14, 15, 10, 10, 11, 12, 13], np.linspace(1e5, 2e6, 12),
                                np.zeros(12, int)),
])
def test_compiled_count_sharing_equals_python_reference(make):
    from fabscope.dynamic import fast

    if not fast.available():
        pytest.skip(f"no compiled engine: {fast.why_not()}")
    f = FABRICS[0]()
    prog = make()
    pl = Placement.block(f, prog.n_ranks, ppn=1)
    py = run_program_on(f, pl, prog, engine="python", sharing="count").outcome
    c = run_program_on(f, pl, prog, engine="c", sharing="count").outcome
    np.testing.assert_allclose(c.msg_end, py.msg_end, rtol=1e-12)
    assert py.refills == c.refills
    if prog.name == "mixed":                                 # where a flow held back elsewhere leaves bandwidth
        mm = run_program_on(f, pl, prog, engine="c").outcome
        assert not np.allclose(mm.msg_end, c.msg_end)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(FABRICS) - 1), st.integers(2, 20), st.integers(0, 10**6))
def test_count_rates_at_every_event_are_the_static_rule(fi, n_msgs, seed):
    f = FABRICS[fi]()
    rng = np.random.default_rng(seed)
    n_ranks = min(f.n_hosts, 12)
    pl = Placement.block(f, n_ranks, ppn=1)
    src = rng.integers(0, n_ranks, n_msgs)
    dst = (src + rng.integers(1, n_ranks, n_msgs)) % n_ranks
    size = rng.choice([1e3, 5e4, 1e6], n_msgs) * rng.uniform(0.5, 1.5, n_msgs)
    prog = Program.from_arrays("random", n_ranks, src, dst, size, rng.integers(0, 3, n_msgs))
    states = []
    run = run_program_on(f, pl, prog, engine="python", sharing="count",
                         observer=lambda t, rate: states.append((t, dict(rate))))
    paths, mp = run.paths, run.msg_path
    for t, rate in states:
        flows = sorted(rate)
        if not flows:
            continue
        rows = [int(paths.res[k]) for g in flows for k in range(paths.indptr[mp[g]], paths.indptr[mp[g] + 1])]
        cols = [j for j, g in enumerate(flows) for _ in range(paths.indptr[mp[g]], paths.indptr[mp[g] + 1])]
        w = [float(paths.weight[k]) for g in flows for k in range(paths.indptr[mp[g]], paths.indptr[mp[g] + 1])]
        A = csr_matrix((w, (rows, cols)), shape=(len(paths.capacity), len(flows)))
        r = np.array([rate[g] for g in flows])
        assert np.all(A @ r <= paths.capacity * (1 + 1e-9)), f"over capacity at t={t}"
        assert np.allclose(r, congestion_count(A, paths.capacity, paths.cap[mp[flows]]), rtol=1e-12)
    assert np.allclose(run.outcome.delivered, size, rtol=1e-9)


def test_itasca_leaf_pairs_equal_under_both_sharings(tmp_path, capsys):
    """docs/dynamic.md, "Seed 000's tables in time": Itasca's leaf-pair matrix at one rank per node
    is the same under max-min and congestion sharing (equal flows, one a node), and not flat: the far
    pairs spread below the near-set blocks, so the equality is not that of a uniform rate."""
    from fabscope.result import Result

    bw = {}
    for model in ("maxmin", "congestion"):
        out = tmp_path / f"{model}.json"
        assert main(["simulate", "--fabric", "itasca", "--ppn", "1", "--pattern", "leaf-pairs", "--dynamic",
                     "--iterations", "1", "--model", model, "-o", str(out)]) == 0
        bw[model] = np.asarray(Result.read_json(out).pairs["bandwidth"])
    capsys.readouterr()
    assert len(bw["maxmin"]) == 17688
    assert bw["maxmin"].min() < 0.8 * bw["maxmin"].max()
    np.testing.assert_allclose(bw["congestion"], bw["maxmin"], rtol=1e-9)
