"""fabscope's mapper beside Scotch and METIS in one run: same scorer, CPU and peak memory beside wall.

    python bench/bench_mapping_peers.py [--size 4096,65536] [--graph stencil,geometric,lammps] [--fabric torus,fat-tree]
    python bench/bench_mapping_peers.py --busy            # the same placement beside two CPU-bound jobs

Every mapper runs in a child process of its own (so its peak memory is its own), after the graph
and the fabric are loaded and the libraries imported:

* ``fabscope``: ``map_ranks(..., "topo")``, the default objective (busiest link), what
  ``fabscope map`` runs; for graphs without a process grid its start is the multilevel mapper
  (``ml``, docs/mapping.md);
* ``scotch``: Scotch 7 through pyscotch as ``fabscope map --algorithm scotch --scotch-seeds 1``
  sets it up (one seed; on trees two targets, tleaf and archBuild0, the better kept: the ``runs``
  column); ``CPU/run`` is its CPU over its runs;
* ``metis``: METIS (pymetis) as ``fabscope map --algorithm hier`` runs it: recursive partitioning
  along the fabric's levels on trees, recursive coordinate bisection of the job's routers on tori
  (METIS cutting the graph at every step).

Columns: hops/byte (hop-bytes over bytes: router hops on tori, links crossed on trees) and the
busiest directed link in MB under the fabric's own routing (``fabscope.mapping.metrics.evaluate``
for all three); CPU s of the child (``time.process_time``), wall s; peak MB = the child's peak
resident memory above what it held before mapping (``ru_maxrss``).  The last columns compare
fabscope with Scotch in the same run: CPU over Scotch's CPU per run, and the two metrics' ratios
(below 1: fabscope lower).

Cases (graph x fabric x size): 3-D stencils, 3-D random geometric graphs (``geometric:N``,
degree 10, ranks in random order) and a captured application matrix (``lammps``, below); a
16x16x16 torus at one rank per node and a k=16 three-level fat tree at 4 per node for 4,096 ranks;
a 16x16x32 torus and a k=32 fat tree at 8 per node for 65,536.

``lammps``: the matrix ``fabscope profile`` captured of LAMMPS on 64 ranks (bench/data/lammps64.mtx,
how in its header; LAMMPS put its ranks on a 4x4x4 processor grid), tiled onto LAMMPS's grid for
the size (16x16x16 for 4,096, 32x32x64 for 65,536) as weak scaling runs it: every rank sends, to
the rank at the same grid offset, what its counterpart in the capture (its coordinates modulo 4)
sent, message counts too.  Written as a Matrix Market file and read as ``fabscope map --comm``
reads one: no process grid is given to the mappers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))   # this checkout's

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
#: the capture's processor grid, as LAMMPS printed it (ranks in C order)
LAMMPS_GRID = (4, 4, 4)
SIZES = {
    4096: {"stencil": "stencil3d:16x16x16", "geometric": "geometric:4096,degree=10,seed=1", "lammps": (16, 16, 16),
           "torus": ("torus:16x16x16,cores=1", 1), "fat-tree": ("fat-tree:k=16,levels=3", 4)},
    65536: {"stencil": "stencil3d:32x32x64", "geometric": "geometric:65536,degree=10,seed=1", "lammps": (32, 32, 64),
            "torus": ("torus:16x16x32,cores=8", 8), "fat-tree": ("fat-tree:k=32,levels=3", 8)},
}
MAPPERS = ("fabscope", "scotch", "metis")


def lammps_tiled(grid: tuple[int, int, int], path: str) -> str:
    """The 64-rank LAMMPS capture tiled onto processor grid ``grid`` (module docstring), written to ``path``.

    >>> import tempfile; import numpy as np; d = tempfile.mkdtemp()
    >>> from fabscope.traffic.commfiles import read_comm_file
    >>> g, g8 = read_comm_file(os.path.join(DATA, "lammps64.mtx")), read_comm_file(lammps_tiled((8, 4, 4), d + "/x.mtx"))
    >>> g8.n, g8.n_edges == 2 * g.n_edges, bool(g8.bytes.sum() == 2 * g.bytes.sum() and g8.msgs.sum() == 2 * g.msgs.sum())
    (128, True, True)
    >>> g4 = read_comm_file(lammps_tiled((4, 4, 4), d + "/y.mtx"))          # onto its own grid: the capture
    >>> all(np.array_equal(getattr(g4, k), getattr(g, k)) for k in ("src", "dst", "bytes", "msgs"))
    True
    """
    import numpy as np

    from fabscope.csr import gather
    from fabscope.mapping.commgraph import CommGraph
    from fabscope.traffic.commfiles import read_comm_file, write_mtx

    g = read_comm_file(os.path.join(DATA, "lammps64.mtx"))
    cap, big = np.array(LAMMPS_GRID), np.array(grid)
    assert np.all(big % cap == 0), grid
    off = (np.stack(np.unravel_index(g.dst, LAMMPS_GRID), 1) - np.stack(np.unravel_index(g.src, LAMMPS_GRID), 1)) % cap
    off = np.where(off > cap // 2, off - cap, off)                  # periodic: -1 .. 2 on a side of 4
    order = np.argsort(g.src, kind="stable")
    ptr = np.searchsorted(g.src[order], np.arange(g.n + 1))
    n = int(np.prod(big))
    at = np.stack(np.unravel_index(np.arange(n), grid), 1)
    twin = np.ravel_multi_index(tuple((at % cap).T), LAMMPS_GRID)   # each rank's counterpart in the capture
    pos = order[gather(ptr, twin)]
    src = np.repeat(np.arange(n), ptr[twin + 1] - ptr[twin])
    dst = np.ravel_multi_index(tuple(((at[src] + off[pos]) % big).T), grid)
    t = CommGraph.from_coo(f"lammps{n}", n, src, dst, g.bytes[pos], g.msgs[pos])
    write_mtx(path, t)
    write_mtx(path[:-4] + ".msgs.mtx", t, "msgs")
    return path


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def child(comm: str, fabric: str, ppn: int, mapper: str, slots_out: str | None = None) -> dict:
    """Run one mapper in this process and score it (the child's side)."""
    from fabscope.fabric.io import load_fabric
    from fabscope.mapping.api import map_ranks
    from fabscope.mapping.commspec import load_comm
    from fabscope.mapping.metrics import evaluate
    from fabscope.mapping.targets import Target

    f = load_fabric(fabric)
    g = load_comm(comm)
    t = Target.whole(f, g.n, ppn)
    g.adjacency                                             # the graph as every mapper takes it
    import fabscope.mapping.algorithms.multilevel as ml     # imports and the C build are not mapping
    import fabscope.routing.distances  # noqa: F401

    ml._load()
    runs = 1
    if mapper == "scotch":
        from fabscope.mapping.algorithms.scotch import _pyscotch

        _pyscotch()
    import pymetis  # noqa: F401

    rss0 = _rss_mb()
    c0, w0 = time.process_time(), time.perf_counter()
    if mapper == "fabscope":
        m = map_ranks(g, t, "topo")
    elif mapper == "scotch":
        m = map_ranks(g, t, "scotch", scotch_seeds=1)
        runs = len(m.info["tries_hop_bytes"])
    else:
        m = map_ranks(g, t, "hier")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3 - rss0
    e = evaluate(m, g)
    if slots_out:
        with open(slots_out, "wb") as fh:
            fh.write(m.slot.astype("<i8").tobytes())
    return {"mapper": mapper, "algorithm": m.algorithm, "hpb": e.hops_per_byte, "link_mb": e.max_link_load / 1e6,
            "cpu": cpu, "wall": wall, "peak_mb": max(peak, 0.0), "runs": runs}


def _run(comm: str, fabric: str, ppn: int, mapper: str, extra: list[str] | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", comm, fabric, str(ppn), mapper] + (extra or [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return {"mapper": mapper, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def peers(sizes: list[int], graphs: list[str], fabrics: list[str]) -> None:
    import tempfile

    tmp = tempfile.TemporaryDirectory()
    print(f"{'case':<40} {'mapper':<8} {'algorithm':<18} {'hops/B':>7} {'link MB':>8} {'CPU s':>7} "
          f"{'wall s':>7} {'peak MB':>8} {'runs':>4}  vs Scotch: CPU/run  hops  link")
    for n in sizes:
        for gname in graphs:
            for fname in fabrics:
                comm, (fabric, ppn) = SIZES[n][gname], SIZES[n][fname]
                if gname == "lammps":
                    comm = lammps_tiled(comm, os.path.join(tmp.name, f"lammps{n}.mtx"))
                case = f"{gname} {n} on {fabric} x{ppn}"
                res = {m: _run(comm, fabric, ppn, m) for m in MAPPERS}
                s = res["scotch"]
                for m in MAPPERS:
                    r = res[m]
                    if "error" in r:
                        print(f"{case:<40} {m:<8} error: {r['error']}")
                        continue
                    vs = ""
                    if m == "fabscope" and "error" not in s:
                        vs = (f"  {r['cpu'] / (s['cpu'] / s['runs']):>17.2f} {r['hpb'] / s['hpb']:>5.3f} "
                              f"{r['link_mb'] / s['link_mb']:>5.3f}")
                    print(f"{case:<40} {m:<8} {r['algorithm']:<18} {r['hpb']:>7.3f} {r['link_mb']:>8.2f} "
                          f"{r['cpu']:>7.2f} {r['wall']:>7.2f} {r['peak_mb']:>8.1f} {r['runs']:>4}{vs}", flush=True)


def busy(n: int = 4096) -> None:
    """The same topo placement quiet and beside two CPU-bound jobs (byte for byte)."""
    import tempfile

    comm, (fabric, ppn) = SIZES[n]["geometric"], SIZES[n]["torus"]
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "quiet"), os.path.join(d, "busy")
        q = _run(comm, fabric, ppn, "fabscope", [a])
        jobs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            z = _run(comm, fabric, ppn, "fabscope", [b])
        finally:
            for j in jobs:
                j.kill()
                j.wait()
        ha, hb = (hashlib.sha256(open(p, "rb").read()).hexdigest()[:16] for p in (a, b))
    print(f"{comm} on {fabric}: quiet wall {q['wall']:.2f} s, sha256 {ha}; beside two CPU-bound jobs wall "
          f"{z['wall']:.2f} s, sha256 {hb}; identical: {ha == hb}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        comm, fabric, ppn, mapper = sys.argv[2:6]
        print(json.dumps(child(comm, fabric, int(ppn), mapper, sys.argv[6] if len(sys.argv) > 6 else None)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="4096,65536")
    ap.add_argument("--graph", default="stencil,geometric,lammps")
    ap.add_argument("--fabric", default="torus,fat-tree")
    ap.add_argument("--busy", action="store_true", help="only the quiet / busy determinism check")
    a = ap.parse_args()
    if a.busy:
        busy()
        return
    peers([int(x) for x in a.size.split(",")], a.graph.split(","), a.fabric.split(","))


if __name__ == "__main__":
    main()
