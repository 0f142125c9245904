"""Write bench/data/mesh1024.mtx: the halo exchange of a 1,024-cell irregular 2D mesh (Matrix Market).

    python bench/make_mesh.py [--n 1024] [--seed 1] [-o bench/data/mesh1024.mtx]

Cells are the vertices of a Delaunay triangulation of random points in a plate
with two round holes (triangles over a hole dropped), numbered by x then y as a
mesh generator's sweep would.  Each mesh edge is a pair of messages whose bytes
follow the edge's length (64 KiB for the mean length), as a face's halo does.
The file is small and shipped, so the mapping figures are reproducible.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.spatial import Delaunay

HOLES = ((0.3, 0.35, 0.12), (0.7, 0.6, 0.18))     # (x, y, radius) in a 1 x 0.8 plate


def mesh(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pts = np.zeros((0, 2))
    while len(pts) < n:
        p = rng.random((4 * n, 2)) * [1.0, 0.8]
        out = np.ones(len(p), bool)
        for x, y, r in HOLES:
            out &= np.hypot(p[:, 0] - x, p[:, 1] - y) > r
        pts = np.vstack([pts, p[out]])
    pts = pts[:n]
    pts = pts[np.lexsort((pts[:, 1], np.round(pts[:, 0], 2)))]     # a sweep along x
    tri = Delaunay(pts).simplices
    cen = pts[tri].mean(axis=1)
    keep = np.ones(len(tri), bool)
    for x, y, r in HOLES:
        keep &= np.hypot(cen[:, 0] - x, cen[:, 1] - y) > r
    tri = tri[keep]
    e = np.sort(np.vstack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=1)
    e = np.unique(e, axis=0)
    length = np.hypot(*(pts[e[:, 0]] - pts[e[:, 1]]).T)
    nbytes = np.maximum(1, np.rint(65536 * length / length.mean())).astype(np.int64)
    return e[:, 0], e[:, 1], nbytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="bench/data/mesh1024.mtx")
    a = ap.parse_args()
    i, j, b = mesh(a.n, a.seed)
    with open(a.output, "w") as fh:
        fh.write("%%MatrixMarket matrix coordinate integer general\n")
        fh.write(f"% halo exchange of an irregular {a.n}-cell 2D mesh (bench/make_mesh.py --n {a.n} --seed {a.seed}):\n")
        fh.write("% bytes sent from row rank to column rank\n")
        fh.write(f"{a.n} {a.n} {2 * len(i)}\n")
        for s, d, v in zip(np.r_[i, j].tolist(), np.r_[j, i].tolist(), np.r_[b, b].tolist()):
            fh.write(f"{s + 1} {d + 1} {v}\n")
    print(f"wrote {a.output}: {a.n} ranks, {2 * len(i)} messages")


if __name__ == "__main__":
    main()
