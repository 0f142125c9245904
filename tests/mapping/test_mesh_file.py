"""The shipped irregular mesh (bench/data/mesh1024.mtx) reads as the halo exchange it claims to be."""

from pathlib import Path

import numpy as np

from fabscope.fabric.generators import torus
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.targets import Target

MESH = Path(__file__).resolve().parents[2] / "bench" / "data" / "mesh1024.mtx"


def test_mesh_file_is_a_symmetric_planar_halo_exchange():
    g = load_comm(str(MESH))
    assert g.n == 1024 and g.grid is None
    A = g.adjacency.tocsr()
    assert abs(A - A.T).max() == 0                       # every face exchanged both ways
    deg = np.diff(A.indptr)
    assert deg.min() >= 2 and deg.mean() < 6             # planar: fewer than 3 edges per vertex
    assert g.n_edges / 2 < 3 * g.n - 6


def test_topo_beats_the_launcher_order_on_the_mesh():
    g = load_comm(str(MESH))
    t = Target.whole(torus((8, 8, 16), cores=1), g.n)
    best = evaluate(map_ranks(g, t, "topo", objective="hop-bytes"), g, links=False)
    block = evaluate(map_ranks(g, t, "block"), g, links=False)
    assert best.hop_bytes < 0.5 * block.hop_bytes
