"""Start-up of the commands on a small input: CPU seconds of each whole process beside
``python -c 'import numpy'`` measured in the same run (the ratio is the figure; aim: under 2).

    python bench/bench_startup.py [--repeat 5]

Inputs (in a temporary folder): a synthetic measured result of a 2-level k=4 fat tree
(``fabscope.diagnose.synthetic``, the diagnose tests' kind of input) for ``compare`` and
``diagnose``; a 2-rank fabscope-bench ping-pong (``fabscope measure --np 2 pingpong``, built
with the MPI ``fabscope doctor`` finds) for ``analyze``, skipped without MPI; ``simulate`` of a
permutation on the same fat tree; and ``--help`` of the program and of ``measure``.  Each
command runs ``--repeat`` times; the least CPU (user + system, of the child and its own
children) is printed, with the median wall seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FABRIC = "fat-tree:k=4,levels=2"


def _cpu(cmd: list[str], cwd: str) -> tuple[float, float, int]:
    """(CPU s, wall s, exit code) of one run of ``cmd``."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, wall, p.returncode


def _inputs(d: str) -> dict[str, list[str]]:
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.synthetic import as_result, synthetic
    from fabscope.fabric.io import load_fabric

    f = load_fabric(FABRIC)
    plan = make_plan(f)
    as_result(synthetic(f, *plan.pairs, {}, noise=0.03, seed=1)).write_json(os.path.join(d, "meas.json"))
    fab = [sys.executable, "-m", "fabscope.cli"]
    cmds = {
        "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
        "fabscope --help": fab + ["--help"],
        "fabscope measure --help": fab + ["measure", "--help"],
        f"simulate --fabric {FABRIC} --pattern permutation": fab + ["simulate", "--fabric", FABRIC, "--pattern",
                                                                    "permutation"],
        f"compare meas.json --fabric {FABRIC}": fab + ["compare", "meas.json", "--fabric", FABRIC],
        f"diagnose meas.json --fabric {FABRIC}": fab + ["diagnose", "meas.json", "--fabric", FABRIC],
    }
    p = subprocess.run(fab + ["measure", "--np", "2", "pingpong", "--max-size", "1KiB", "--iterations", "2",
                              "--out", "pp.jsonl"], cwd=d, capture_output=True, text=True)
    if p.returncode == 0:
        cmds["analyze pp.jsonl"] = fab + ["analyze", "pp.jsonl"]
    else:
        print(f"# analyze skipped: fabscope measure failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return cmds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cmds = _inputs(d)
        runs = {k: [_cpu(c, d) for _ in range(a.repeat)] for k, c in cmds.items()}
    base = min(r[0] for r in runs["python -c 'import numpy'"])
    print(f"{'command (small input)':<52} {'CPU s':>6} {'wall s':>7} {'x numpy':>8} {'exit':>5}")
    for k, rs in runs.items():
        cpu = min(r[0] for r in rs)
        print(f"{k:<52} {cpu:>6.3f} {statistics.median(r[1] for r in rs):>7.3f} {cpu / base:>8.2f} "
              f"{max(r[2] for r in rs):>5}")


if __name__ == "__main__":
    main()
