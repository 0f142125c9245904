"""Communication graphs: closed-form edge counts, files, bad input."""

import numpy as np
import pytest

from fabscope.errors import TrafficError
from fabscope.traffic.commfiles import read_comm_file, write_mtx
from fabscope.mapping.commgraph import pencils, random_sparse, ring, stencil, tree
from fabscope.mapping.commspec import load_comm


@pytest.mark.parametrize("dims", [(4, 5), (3, 4, 5), (16, 16, 32)])
def test_periodic_stencil_has_2d_edges_per_rank(dims):
    g = stencil(dims, halo=8)
    n = int(np.prod(dims))
    assert g.n == n and g.n_edges == 2 * len(dims) * n
    assert g.total_bytes == 8 * 2 * len(dims) * n


def test_open_stencil_edge_count():
    # a 4x5 mesh: (4-1)*5 + 4*(5-1) = 31 undirected edges, both ways
    assert stencil((4, 5), periodic=False).n_edges == 62
    # mixed: periodic in x only -> 4*5 + 4*4 undirected
    assert stencil((4, 5), periodic=(True, False)).n_edges == 2 * (20 + 16)


def test_pencils_rows_and_columns():
    g = pencils(4, 8, size=1)
    # each rank: 7 row peers + 3 column peers
    assert g.n_edges == 32 * (7 + 3)
    out = np.bincount(g.src, minlength=32)
    assert (out == 10).all()


def test_ring_tree_random():
    assert ring(5).n_edges == 10
    assert tree(15, arity=2).n_edges == 28
    g = random_sparse(50, degree=3, seed=1)
    assert (g.src != g.dst).all() and g.n == 50
    assert np.array_equal(random_sparse(50, degree=3, seed=1).dst, g.dst)


def test_spec_parsing():
    g = load_comm("stencil3d:4x4x8,halo=1KiB,periodic=1x1x0")
    assert g.n == 128 and g.bytes.max() == 1024
    assert load_comm("fft:4x4").n == 16
    with pytest.raises(TrafficError, match="unknown communication graph"):
        load_comm("nosuch:4")
    with pytest.raises(TrafficError, match="stencil3d takes 3"):
        load_comm("stencil3d:4x4")


def test_matrix_files_round_trip(tmp_path):
    g = stencil((3, 3), halo=5)
    p = tmp_path / "g.mtx"
    write_mtx(str(p), g)
    h = read_comm_file(str(p))
    assert np.array_equal(h.src, g.src) and np.array_equal(h.bytes, g.bytes)


@pytest.mark.parametrize("text,msg", [
    ("0,1\n1,0,3\n", "square"),
    ("0,1,2\n1,0,3\n", "square"),
    ("0,-1\n1,0\n", "negative entry at row 1, column 2"),
    ("0,x\n1,0\n", "not a row of numbers"),
])
def test_bad_csv(tmp_path, text, msg):
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(TrafficError, match=msg):
        read_comm_file(str(p))


def test_bad_mtx(tmp_path):
    p = tmp_path / "m.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 -4\n")
    with pytest.raises(TrafficError, match="negative"):
        read_comm_file(str(p))
    p.write_text("%%MatrixMarket matrix coordinate real general\n3 4 1\n1 2 4\n")
    with pytest.raises(TrafficError, match="3x4"):
        read_comm_file(str(p))


def test_size_must_match_job():
    with pytest.raises(TrafficError, match="has 16 ranks, the job has 8"):
        load_comm("ring:16", n_ranks=8)
