"""Applications on the testbed: `fabscope map`'s placement makes halo2d and the FFT transpose faster.

A 16-host 2-level tree with one up-link per leaf (`fat-tree:k=4,levels=2,up=1`: 4 leaves of 4 hosts,
each leaf's traffic to the others on one cable), links at 40 Mbit or what this machine forwards now
(`--rate auto:40Mbit`).  The job's node list goes round the leaves: the host of grid rank (i, j) of
the 4x4 kernels is on leaf (i + j) mod 4, so block, the launcher's default (rank i on the i-th host of
the list), puts every grid row and column across the four leaves, as a round-robin allocation can.
(On the hosts in order, block puts each FFT row on one leaf, already the best placement there is;
on a list with two hosts of each leaf, then the other two, the model put map only 1.2x faster than
block for the FFT, and the testbed measured them equal: 123.9 and 123.6 ms.)  Per
kernel: a run under block; `fabscope map --comm` of that run (its own traffic) places the ranks by
topology, and `--algorithm random` twice (seeds 1, 2); each placement is run with `measure --testbed
--hostfile`, and `fabscope compare` puts the four runs' measured time per iteration beside the
model's.  Asserted: the model predicts map faster than block and both random runs by more than
:data:`APART`, and the testbed measures map faster than each; block and a random run are measured
in the predicted order where the model tells them apart by more than :data:`APART` (the two random
runs are not ordered: they are the same kind of placement).  Every run must record itself link-bound
(its `testbed` line); if one is not, the kernel is run again at half the rate, and skipped with the
reason if it still is not.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess

import pytest

from fabscope.testbed import linkbound, system

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed,
              pytest.mark.mpi, pytest.mark.slow]

NAME = "ap2"
FABRIC = "fat-tree:k=4,levels=2,up=1"
KERNELS = {"halo2d": ["--size", "64KiB", "--periodic", "no"], "fft-transpose": ["--size", "32KiB"]}
LOOP = ["--iterations", "10", "--warmup", "1"]
#: two runs whose predicted times differ by less than this factor are not ordered by the test: measured/predicted
#: varied from 1.01 to 1.33 between the runs of one kernel here (TCP's losses where several hosts' flows meet at
#: one shaper; the model is max-min fluid), so closer predictions do not say which run is faster
APART = 1.25
#: the job's node list (host indices, 4 leaves of 4): grid rank (i, j) on a host of leaf (i + j) mod 4
ORDER = tuple(4 * ((i + j) % 4) + i for i in range(4) for j in range(4))
PLACEMENTS = ("block", "map", "random1", "random2")


def fabscope(*args: str) -> subprocess.CompletedProcess:
    """``fabscope ARGS`` in this process, as test_e2e runs its commands: no interpreter start and imports for
    each of a kernel's 4 measures, 3 maps and compare (seconds each on a busy machine); exit status 0 asserted."""
    from fabscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    p = subprocess.CompletedProcess(["fabscope", *args], rc, out.getvalue(), err.getvalue())
    assert p.returncode == 0, f"fabscope {' '.join(args)}:\n{p.stdout}\n{p.stderr}"
    return p


def bring_up(rate: float | None):
    from fabscope.testbed.lifecycle import down, up
    from fabscope.testbed.names import parse_rate

    down(NAME)
    return up(NAME, FABRIC, rate, max_rate=parse_rate("40Mbit"))


@pytest.fixture(scope="module")
def testbed():
    from fabscope.testbed.lifecycle import down

    try:
        yield bring_up(None)
    finally:
        down(NAME)


def run_kernel(kernel: str, work) -> dict[str, str]:
    """The four runs of ``kernel`` (block, map, random1, random2); their files."""
    from fabscope.testbed import state

    nodes = work / "nodes.txt"
    hosts = state.load_fabric(NAME).host_names
    nodes.write_text("".join(hosts[i] + "\n" for i in ORDER))
    files = {p: str(work / f"{kernel}-{p}.jsonl") for p in PLACEMENTS}
    hosts = {"block": str(nodes)}
    opts = [*KERNELS[kernel], *LOOP]
    fabscope("measure", "--testbed", NAME, "--hostfile", hosts["block"], "--timeout", "300", kernel, *opts,
             "--out", files["block"])
    for p, alg in (("map", ["--algorithm", "topo"]), ("random1", ["--algorithm", "random", "--seed", "1"]),
                   ("random2", ["--algorithm", "random", "--seed", "2"])):
        hosts[p] = str(work / f"{kernel}-{p}.hosts")
        fabscope("map", "--fabric", NAME, "--nodes", str(nodes), "--comm", files["block"], *alg, "-o", hosts[p])
        fabscope("measure", "--testbed", NAME, "--hostfile", hosts[p], "--timeout", "300", kernel, *opts,
                 "--out", files[p])
    return files


def not_link_bound(files: dict[str, str]) -> list[str]:
    out = []
    for p, f in files.items():
        rec = linkbound.records(f)
        assert rec, f"{f}: no testbed record"
        if not rec[-1]["link_bound"]:
            out.append(f"{p}: {rec[-1]['why']}")
    return out


def compared(kernel: str, work, files: dict[str, str], rate: float) -> tuple[dict[str, float], list[str]]:
    """``fabscope compare`` of the placements' runs: the predicted times, and every measured order that
    disagrees with a prediction apart by APART (map against each other placement, block against each
    random one)."""
    out = work / f"{kernel}-compare.json"
    p = fabscope("compare", *files.values(), "--fabric", NAME, "--json", str(out))
    print(f"\n{kernel} on {NAME} at {rate * 8 / 1e6:g} Mbit:\n{p.stdout}")
    assert "measured ms" in p.stdout and "predicted ms" in p.stdout
    rows = {r["path"]: r for r in json.loads(out.read_text())["rows"]}
    meas = {p: rows[f]["measured_median"] for p, f in files.items()}
    pred = {p: rows[f]["predicted"] for p, f in files.items()}
    pairs = [("map", other) for other in ("block", "random1", "random2")]
    pairs += [(a, b) for a, b in (("block", "random1"), ("block", "random2"), ("random1", "block"),
                                  ("random2", "block")) if pred[b] > APART * pred[a]]
    return pred, [f"{kernel}: {a} / {b} measured {meas[a]:.4f} / {meas[b]:.4f} s, predicted {pred[a]:.4f} / "
                  f"{pred[b]:.4f} s" for a, b in pairs if not meas[a] < meas[b]]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_map_placement_is_faster_and_predicted_so(testbed, work, kernel):
    st = testbed
    files = run_kernel(kernel, work)
    why = not_link_bound(files)
    if why:   # the machine is busier than at up: once more at half the rate
        st = bring_up(st.rate / 2)
        files = run_kernel(kernel, work)
        why = not_link_bound(files)
        if why:
            pytest.skip(f"{kernel} at {st.rate * 8 / 1e6:g} Mbit not link-bound: {'; '.join(why)}")
    pred, wrong = compared(kernel, work, files, st.rate)
    for other in ("block", "random1", "random2"):
        assert pred[other] > APART * pred["map"], f"{kernel}: the model does not tell map from {other}: {pred}"
    if wrong:
        # link-bound, but TCP's losses where several hosts' flows meet at one shaper can slow one run by half
        # again on a busy machine (halo2d beside a CPU-bound job and the other test lane: random1 measured 1.56x
        # its prediction, block 1.11x, the order of a pair predicted 1.33x apart reversed): the runs once more,
        # whose orders must all hold
        print(f"once more: {'; '.join(wrong)}")
        files = run_kernel(kernel, work)
        why = not_link_bound(files)
        if why:
            pytest.skip(f"{kernel} at {st.rate * 8 / 1e6:g} Mbit not link-bound the second time: {'; '.join(why)}")
        pred, wrong = compared(kernel, work, files, st.rate)
    assert not wrong, "; ".join(wrong)
