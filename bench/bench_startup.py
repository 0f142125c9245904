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

The children run as an installed fabscope does: with compiled bytecode (``PYTHONPYCACHEPREFIX``
in the temporary folder, ``PYTHONDONTWRITEBYTECODE`` dropped, one unmeasured run first), not
compiling every module from source each time.  ``imports`` is the CPU of a process that only
imports the modules the command ended with (fabscope's and the libraries'); ``work`` is the
rest, the command's own computing on that input.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))   # this checkout's

FABRIC = "fat-tree:k=4,levels=2"


def _env(d: str) -> dict[str, str]:
    """The children's environment: bytecode kept, and the fabscope this script imported (a relative
    ``PYTHONPATH=src`` would not find it from the temporary folder)."""
    import fabscope

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(d, "pycache")
    paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(fabscope.__file__))),
                                         *paths])
    return env


def _cpu(cmd: list[str], cwd: str) -> tuple[float, float, int]:
    """(CPU s, wall s, exit code) of one run of ``cmd``."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(cwd))
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
                              "--out", "pp.jsonl"], cwd=d, capture_output=True, text=True, env=_env(d))
    if p.returncode == 0:
        cmds["analyze pp.jsonl"] = fab + ["analyze", "pp.jsonl"]
    else:
        print(f"# analyze skipped: fabscope measure failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return cmds


def _imports_only(cmd: list[str], d: str) -> list[str] | None:
    """A command that imports what ``cmd`` (a ``-m fabscope.cli`` run) ended with, and does nothing else."""
    if cmd[1:3] != ["-m", "fabscope.cli"]:
        return None
    out = os.path.join(d, "modules.txt")
    code = ("import sys\nfrom fabscope.cli import main\n"
            f"try:\n    main({cmd[3:]!r})\nexcept SystemExit:\n    pass\n"
            f"open({out!r}, 'w').write(' '.join(sorted(m for m in sys.modules if not m.endswith('__main__'))))")
    subprocess.run([cmd[0], "-c", code], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(d))
    with open(out) as fh:
        mods = fh.read().split()
    return [cmd[0], "-c", "import importlib\nfor m in %r:\n    try:\n        importlib.import_module(m)\n"
                          "    except Exception:\n        pass" % mods]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cmds = _inputs(d)
        imports = {k: _imports_only(c, d) for k, c in cmds.items()}
        for c in [*cmds.values(), *filter(None, imports.values())]:
            _cpu(c, d)                      # writes the bytecode; not counted
        runs = {k: [_cpu(c, d) for _ in range(a.repeat)] for k, c in cmds.items()}
        imp = {k: min(_cpu(c, d)[0] for _ in range(a.repeat)) for k, c in imports.items() if c}
    base = min(r[0] for r in runs["python -c 'import numpy'"])
    print(f"{'command (small input)':<62} {'CPU s':>6} {'wall s':>7} {'x numpy':>8} {'imports':>8} {'x numpy':>8} "
          f"{'work':>6} {'exit':>5}")
    for k, rs in runs.items():
        cpu = min(r[0] for r in rs)
        i = imp.get(k)
        ic = f"{i:>8.3f} {i / base:>8.2f} {max(cpu - i, 0.0):>6.3f}" if i is not None else f"{'':>8} {'':>8} {'':>6}"
        print(f"{k:<62} {cpu:>6.3f} {statistics.median(r[1] for r in rs):>7.3f} {cpu / base:>8.2f} {ic} "
              f"{max(r[2] for r in rs):>5}")
    import fabscope

    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; fabscope from "
          f"{os.path.dirname(os.path.abspath(fabscope.__file__))}")


if __name__ == "__main__":
    main()
