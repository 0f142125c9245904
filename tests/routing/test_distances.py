"""Switch hop distances without SciPy (routing/distances.hop_distances) equal SciPy's shortest paths."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from fabscope.fabric.generators import (
    director,
    dragonfly,
    fat_tree,
    itasca,
    torus,
    xgft,
)
from fabscope.routing import distances
from fabscope.routing.distances import hop_distances, switch_distances, switch_links


def scipy_distances(n, src, dst):
    g = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    d = shortest_path(g, method="D", unweighted=True, directed=True)
    d[np.isinf(d)] = -1
    return d.astype(np.int16)


@pytest.mark.parametrize("make", [
    itasca, director, lambda: fat_tree(k=4, levels=3), lambda: torus((4, 5, 3)), lambda: torus((6,), periodic=False),
    lambda: dragonfly(a=4, p=2, h=2, g=9), lambda: xgft((4, 4, 3), (1, 2, 2)),
], ids=["itasca", "director", "fat-tree", "torus", "line", "dragonfly", "xgft"])
def test_fabrics_as_scipy(make):
    f = make()
    h = f.n_hosts
    sl = switch_links(f)
    want = scipy_distances(f.n_switches, f.link_src[sl] - h, f.link_dst[sl] - h)
    distances._cached.cache_clear()
    got = switch_distances(f)
    assert got.dtype == np.int16 and not got.flags.writeable
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 140).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n))),
    st.sampled_from([8, 64, 1 << 25]))
def test_random_directed_graphs_as_scipy(graph, chunk):
    """Directed graphs with loops, parallel edges, unreachable parts; small chunks split the in-edges."""
    n, edges = graph
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    old = distances._CHUNK_BYTES
    distances._CHUNK_BYTES = chunk
    try:
        got = hop_distances(n, src, dst)
    finally:
        distances._CHUNK_BYTES = old
    np.testing.assert_array_equal(got, scipy_distances(n, src, dst))


def test_long_chain_passes_int8_and_word_edges():
    """A directed chain of 200 nodes: distances up to 199, sources in four 64-bit words."""
    n = 200
    got = hop_distances(n, np.arange(n - 1), np.arange(1, n))
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(got, np.where(j >= i, j - i, -1))


@pytest.mark.parametrize("spec,engine,modules", [
    ("torus:4x4x4", "dor", {"dor", "distances"}), ("fat-tree:k=4,levels=3", "dmodk", {"tree"}),
    ("itasca", "minhop", {"tables", "distances"})])
def test_make_routing_imports_the_engine_it_builds(spec, engine, modules):
    """make_routing imports the asked engine's module (and what it uses), not every engine's."""
    import subprocess
    import sys

    code = ("import sys\nfrom fabscope.fabric.io import load_fabric\nfrom fabscope.routing import make_routing\n"
            f"make_routing(load_fabric({spec!r}), {engine!r})\n"
            "print(' '.join(sorted(m.split('.')[2] for m in sys.modules if m.startswith('fabscope.routing.'))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert set(p.stdout.split()) == modules | {"routes"}
