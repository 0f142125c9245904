"""SimGrid as a peer: the same flow set on the same routes, run by SimGrid 3.32.

SimGrid gets a Full zone with explicit routes: one SimGrid host per rank,
one link per directed fabric link the flows use (same capacity), one link
per host memory (shared by the host's on-node copies) and one FATPIPE link
per host that caps each on-node copy at the host's copy rate, as fabscope's
per-flow cap does.  Every link has latency 0 and SimGrid runs CM02 with
cross-traffic off, so both solve max-min sharing of the same resources
(with a latency, CM02 weighs flows by their round-trip latency: see
docs/dynamic.md).

Debian's ``python3-simgrid`` serves the system Python only, so SimGrid runs in
a child process (``/usr/bin/python3`` and :mod:`.simgrid_peer`), fed JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from functools import lru_cache

import numpy as np

from fabscope.dynamic.resources import Paths
from fabscope.errors import FabscopeError

SYSTEM_PYTHON = "/usr/bin/python3"
PEER = os.path.join(os.path.dirname(__file__), "simgrid_peer.py")


@lru_cache(maxsize=1)
def why_unavailable() -> str | None:
    """None when SimGrid can run here, else the reason."""
    if not os.path.exists(SYSTEM_PYTHON):
        return f"{SYSTEM_PYTHON} not found"
    try:
        p = subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid; print(simgrid.simgrid_version)"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:  # pragma: no cover
        return f"{SYSTEM_PYTHON} does not run: {err}"
    if p.returncode:
        return "import simgrid fails in the system Python (install Debian's python3-simgrid)"
    return None


def version() -> str:
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid; print(simgrid.simgrid_version)"],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.strip()


def problem(paths: Paths, msg_path: np.ndarray, src_rank: np.ndarray, dst_rank: np.ndarray,
            size: np.ndarray, rank_host: np.ndarray) -> dict:
    """The JSON problem :mod:`.simgrid_peer` reads (all flows start at time 0)."""
    if np.any(paths.weight != 1):
        raise FabscopeError("SimGrid takes single-path routes; this routing splits flows")
    if np.any(np.asarray(size) != np.round(size)):
        raise FabscopeError("SimGrid sends whole bytes; give integer message sizes")
    ranks = np.unique(np.r_[src_rank, dst_rank])
    host_of = {int(r): i for i, r in enumerate(ranks)}
    links: list[list] = []
    link_id: dict[tuple[str, int], int] = {}

    def link(kind: str, i: int, bw: float, shared: bool = True) -> int:
        k = (kind, i)
        if k not in link_id:
            link_id[k] = len(links)
            links.append([f"{kind}{i}", float(bw), shared])
        return link_id[k]

    routes: dict[tuple[int, int], list[int]] = {}
    for m in range(len(src_rank)):
        s, d = host_of[int(src_rank[m])], host_of[int(dst_rank[m])]
        if (s, d) in routes:
            continue
        p = int(msg_path[m])
        ids = []
        for r in paths.res[paths.indptr[p]:paths.indptr[p + 1]].tolist():
            if r < paths.n_links:
                ids.append(link("L", r, paths.capacity[r]))
            else:
                ids.append(link("M", r - paths.n_links, paths.capacity[r]))
        if np.isfinite(paths.cap[p]):
            ids.append(link("C", int(rank_host[src_rank[m]]), paths.cap[p], shared=False))
        routes[(s, d)] = ids
    return {"hosts": [f"r{int(r)}" for r in ranks], "links": links,
            "routes": [[s, d, ids] for (s, d), ids in routes.items()],
            "comms": [[host_of[int(a)], host_of[int(b)], float(x)] for a, b, x in zip(src_rank, dst_rank, size)],
            "cfg": ["maxmin/precision:1e-12", "surf/precision:1e-12"]}


def fat_tree_problem(fabric, src_host: np.ndarray, dst_host: np.ndarray, size: np.ndarray) -> dict:
    """The same messages on SimGrid's own fat-tree zone (its D-mod-K routes), for a generated two-level tree.

    SimGrid numbers a fat tree's hosts leaf by leaf, as fabscope's ``fat-tree``
    generator does; its links all have one capacity.
    """
    p = fabric.params
    if p.get("generator") != "fat-tree" or len(p.get("m", ())) != 2:
        raise FabscopeError(f"SimGrid's fat-tree zone takes a generated two-level fat tree, not {fabric.name!r}")
    caps = np.unique(fabric.link_capacity)
    if len(caps) != 1:
        raise FabscopeError("SimGrid's fat-tree zone has one link capacity; this fabric has several")
    m, w = [int(x) for x in p["m"]], [int(x) for x in p["w"]]
    lpp = int(p.get("links_per_pair", 1))
    return {"fat_tree": [2, m, w, [1, lpp], float(caps[0])],
            "comms": [[int(a), int(b), float(x)] for a, b, x in zip(src_host, dst_host, size)],
            "cfg": ["maxmin/precision:1e-12", "surf/precision:1e-12"]}


def run(prob: dict, timeout: float = 1800) -> tuple[np.ndarray, float]:
    """Completion time of every communication, and SimGrid's own run time (seconds)."""
    reason = why_unavailable()
    if reason:
        raise FabscopeError(f"SimGrid is not available: {reason}")
    with tempfile.TemporaryDirectory(prefix="fabscope-simgrid-") as tmp:
        path = os.path.join(tmp, "problem.json")
        with open(path, "w") as fh:
            json.dump(prob, fh)
        p = subprocess.run([SYSTEM_PYTHON, PEER, path], capture_output=True, text=True, timeout=timeout)
    if p.returncode:
        tail = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise FabscopeError(f"SimGrid failed (exit {p.returncode}): {tail}")
    out = json.loads(p.stdout)
    return np.array(out["finish"], dtype=float), float(out["seconds"])
