"""fabscope's dynamic engine against SimGrid 3.32 on identical routes: every completion time.

SimGrid runs in the system Python (Debian's python3-simgrid), fed the same
resources: one link per directed fabric link, host memories, FATPIPE caps for
on-node copies; CM02, cross-traffic off, latency 0 (see fabscope.dynamic.peer).
"""

import numpy as np
import pytest

from fabscope.dynamic import peer
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree, torus

pytestmark = pytest.mark.skipif(peer.why_unavailable() is not None,
                                reason=f"SimGrid unavailable: {peer.why_unavailable()}")


def _matching(n, seed, sizes):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    a, b = perm[0:n - n % 2:2], perm[1:n - n % 2:2]
    src, dst = np.r_[a, b], np.r_[b, a]
    size = np.round(rng.choice(sizes, len(src)) * rng.uniform(0.5, 2.0, len(src)))
    return src, dst, size


@pytest.mark.parametrize("case", ["fat-tree", "torus", "itasca-8ppn"])
@pytest.mark.parametrize("seed", [1, 2])
def test_completion_times_equal_simgrid(case, seed, itasca_fabric):
    if case == "fat-tree":
        f, ppn, n = fat_tree(k=8, levels=2), 1, 64
    elif case == "torus":
        f, ppn, n = torus((4, 4, 4)), 1, 64
    else:
        f, ppn, n = itasca_fabric, 8, 512     # 64 nodes on 4 leaves: on-node, leaf, near-set pairs
    pl = Placement.block(f, n, ppn=ppn)
    src, dst, size = _matching(n, seed, [2e3, 5e4, 1e6])
    prog = Program.from_arrays("matching", n, src, dst, size, np.zeros(len(src), int))
    run = run_program_on(f, pl, prog, latency=False)
    ours = run.outcome.msg_end
    theirs, _ = peer.run(peer.problem(run.paths, run.msg_path, src, dst, size, pl.host))
    assert len(np.unique(np.round(ours, 12))) > 3          # sizes and sharing give many distinct times
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    if case == "itasca-8ppn":
        assert np.any(pl.host[src] == pl.host[dst])         # on-node copies were compared too


@pytest.mark.parametrize("k", [4, 8])
def test_dmodk_equals_simgrids_own_fat_tree_zone(k):
    """SimGrid's fat-tree zone routes by D-mod-K itself: fabscope's dmodk gives the same completion times."""
    f = fat_tree(k=k, levels=2)
    n = f.n_hosts
    pl = Placement.block(f, n, ppn=1)
    src, dst, size = _matching(n, 3, [5e4, 1e6])
    prog = Program.from_arrays("matching", n, src, dst, size, np.zeros(len(src), int))
    run = run_program_on(f, pl, prog, "dmodk", latency=False)
    theirs, _ = peer.run(peer.fat_tree_problem(f, pl.host[src], pl.host[dst], size))
    assert len(np.unique(np.round(run.outcome.msg_end, 12))) > 3
    np.testing.assert_allclose(run.outcome.msg_end, theirs, rtol=1e-6)


def test_fat_tree_zone_refuses_other_fabrics():
    with pytest.raises(Exception, match="two-level fat tree"):
        peer.fat_tree_problem(torus((2, 2, 2)), [0], [1], [1.0])
