"""Writing a result file (``Result.write_json``) alone, this tree beside another, on one simulated result.

    .venv/bin/python bench/bench_result_write.py                                  # 16x16x16 torus permutation, 5 runs
    .venv/bin/python bench/bench_result_write.py --fabric fat-tree:k=32,levels=4 --routing dmodk --repeat 3
    .venv/bin/python bench/bench_result_write.py --profile                        # and cProfile of each side's write

The result comes from one ``fabscope simulate --dynamic --ppn 1 --pattern permutation`` run of this
tree (its ``Result`` pickled before it is written).  Then, alternately for each side, a fresh
process unpickles it and times ``write_json`` to a new file: CPU seconds (user + system, the
fsync included), wall seconds, and the peak resident set the write added (MB above the peak
after unpickling).  Medians of ``--repeat``.  Each side's file is compared with this tree's, byte
for byte.  The compiled column writer is built before the timings.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

#: runs the CLI with Result.write_json replaced by a pickling of the result
CAPTURE = """
import pickle, sys
import fabscope.result as rt
PICKLE = sys.argv[1]
def capture(self, path):
    with open(PICKLE, "wb") as fh:
        pickle.dump(self, fh, protocol=5)
rt.Result.write_json = capture
from fabscope.cli import main
sys.argv = ["fabscope", *sys.argv[2:]]
main()
"""

#: times one write of the pickled result; prints cpu, wall, added peak MB
WRITE = """
import pickle, resource, sys, time
try:
    from fabscope import jsoncolumns
    assert jsoncolumns.available(), jsoncolumns.why_not()
except ImportError:
    pass
with open(sys.argv[1], "rb") as fh:
    r = pickle.load(fh)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if len(sys.argv) > 3:
    import cProfile, pstats
    cProfile.run("r.write_json(sys.argv[2])", sys.argv[3])
    pstats.Stats(sys.argv[3]).sort_stats("tottime").print_stats(12)
    raise SystemExit
t, w = time.process_time(), time.perf_counter()
r.write_json(sys.argv[2])
cpu = time.process_time() - t
print(cpu, time.perf_counter() - w, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def child(src: str, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": src}
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False)
    if p.returncode:
        raise SystemExit(f"{src}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="torus:16x16x16")
    ap.add_argument("--routing", default="dor")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--other", default="/work/main/src", help="the code to compare with ('none': this tree alone)")
    ap.add_argument("--profile", action="store_true", help="cProfile of each side's write too (top 12 by own time)")
    a = ap.parse_args()
    sides = [("this tree", HERE)] + ([("other", a.other)] if a.other != "none" else [])
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-write-") as tmp:
        pkl = os.path.join(tmp, "result.pkl")
        child(HERE, CAPTURE, pkl, "simulate", "--fabric", a.fabric, "--routing", a.routing, "--ppn", "1",
              "--pattern", "permutation", "--dynamic", "-o", os.path.join(tmp, "unused.json"))
        got: dict[str, list[list[float]]] = {name: [] for name, _ in sides}
        for _ in range(a.repeat):
            for i, (name, src) in enumerate(sides):
                out = os.path.join(tmp, f"out{i}.json")
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(out)          # a new file each time, as a fresh run's -o
                got[name].append([float(x) for x in child(src, WRITE, pkl, out).split()])
        size = os.path.getsize(os.path.join(tmp, "out0.json"))
        print(f"write_json of a {a.fabric} permutation result ({size / 1e6:.1f} MB), median of {a.repeat} "
              f"(load {os.getloadavg()[0]:.1f})")
        for i, (name, src) in enumerate(sides):
            cpu, wall, mb = (statistics.median(r[k] for r in got[name]) for k in range(3))
            same = "" if i == 0 else ("  file identical" if filecmp.cmp(os.path.join(tmp, "out0.json"),
                                                                         os.path.join(tmp, f"out{i}.json"), shallow=False)
                                      else "  FILE DIFFERS")
            print(f"  {name:10} {cpu:7.3f} CPU s {wall:7.3f} s wall  +{mb:6.0f} MB peak{same}   ({src})")
        for name, src in sides if a.profile else ():
            print(f"cProfile of {name}'s write ({src}):")
            print(child(src, WRITE, pkl, os.path.join(tmp, "prof.json"), os.path.join(tmp, "prof.out")))


if __name__ == "__main__":
    main()
