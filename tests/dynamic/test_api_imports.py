"""The library's simulation path (a script: load_fabric, Program, run_program_on) imports what it
uses and no more: each module a run loads is start-up time of every small simulation's process."""

import json
import subprocess
import sys

import pytest

#: a random matching through the API, as bench/bench_whole.py's torus case
SCRIPT = """
import json, sys
import numpy as np, numpy.random
before = set(sys.modules)
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
f = load_fabric(sys.argv[1])
n = f.n_hosts
perm = np.random.default_rng(1).permutation(n)
a, b = perm[0::2], perm[1::2]
prog = Program.from_arrays("m", n, np.r_[a, b], np.r_[b, a], np.full(n - n % 2, 2.0**20), np.zeros(n - n % 2, np.int64))
run = run_program_on(f, Placement.block(f, n, ppn=1), prog, sys.argv[2], latency=False)
assert run.outcome.makespan > 0
print(json.dumps(sorted(set(sys.modules) - before)))
"""

#: what a generated fabric, its routing and the compiled engine have no use for: file formats and
#: their checks (json came with fabric.io, shlex and unicodedata with the name checks, fcntl with
#: atomic writes), building the engine (shutil, with bz2 and lzma, subprocess, tempfile), SciPy,
#: the pure-Python reference engine (with heapq) that the compiled one replaces, the ascii codec
#: (/proc/meminfo is read as utf-8, the codec Python has loaded)
UNUSED = ("json", "shlex", "unicodedata", "fcntl", "shutil", "bz2", "lzma", "subprocess", "tempfile", "scipy",
          "heapq", "encodings.ascii", "fabscope.atomic", "fabscope.names", "fabscope.schemas", "fabscope.textio",
          "fabscope.routing.tables", "fabscope.model.simulate", "fabscope.result", "fabscope.dynamic.engine")


@pytest.mark.parametrize("fabric,routing", [("torus:8x8x8", "dor"), ("fat-tree:k=4,levels=3", "dmodk"),
                                            ("mesh:4x4", "dor:tie=simgrid")])
def test_a_simulation_through_the_api_imports_nothing_unused(fabric, routing):
    from fabscope.dynamic import fast

    if not fast.available():                   # the compiled engine is built once, outside the script
        pytest.skip(f"no compiled engine: {fast.why_not()}")
    p = subprocess.run([sys.executable, "-c", SCRIPT, fabric, routing], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert "fabscope.dynamic.fast" in loaded and "fabscope.routing" in loaded
    assert sorted(m for m in loaded if m in UNUSED or m.split(".")[0] in UNUSED) == []
