"""The CLI's start-up: building the parser (--help) imports no heavy library, and the
parser's copies of the library's names (fabscope.cli.names) are the library's own."""

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "rich", "plotly", "dask", "networkx", "pandas", "jinja2")


@pytest.mark.parametrize("argv", [["--help"], ["simulate", "--help"], ["map", "--help"], ["measure", "--help"],
                                  ["doctor", "--help"], ["demo", "--help"], ["analyze", "--help"]])
def test_help_imports_nothing_heavy(argv):
    code = ("import sys, json\nfrom fabscope.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in %r)), file=sys.stderr)"
            % (argv, HEAVY))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "usage: fabscope" in p.stdout
    assert json.loads(p.stderr.strip().splitlines()[-1]) == []


def test_parser_names_are_the_librarys():
    from fabscope.cli import names
    from fabscope.mapping.outputs import FORMATS
    from fabscope.measure.runner import OVERSUBSCRIBE_FACTOR
    from fabscope.model.simulate import MODELS
    from fabscope.routing import ENGINES
    from fabscope.traffic.spec import PATTERNS

    assert names.PATTERNS == tuple(PATTERNS)
    from fabscope.cli.options import library_pattern_names

    assert names.DYNAMIC_PATTERNS == tuple(library_pattern_names())
    assert names.ENGINES == tuple(ENGINES)
    assert names.MODELS == tuple(MODELS)
    assert names.FORMATS == tuple(FORMATS)
    assert names.OVERSUBSCRIBE_FACTOR == OVERSUBSCRIBE_FACTOR


#: what ``simulate --dynamic`` (output to a pipe, no -o) has no use for
UNUSED_BY_DYNAMIC = ("scipy", "plotly", "dask", "networkx", "pandas", "jinja2", "jsonschema", "numpy.ma",
                     "rich", "fabscope.model.simulate", "importlib.resources")


@pytest.mark.parametrize("fabric,routing", [("torus:4x4x4", "dor"), ("fat-tree:k=4,levels=3", "dmodk"),
                                            ("itasca", "minhop"), ("fat-tree:k=4,levels=3", "updn"),
                                            ("dragonfly:a=4,p=2,h=2,g=9", "minimal")])
def test_dynamic_simulation_imports_nothing_unused(fabric, routing):
    """Dimension-order routing, D-mod-K, min-hop and up/down tables and the dynamic engine need numpy
    alone: SciPy's import was a third of a small simulation's whole process (min-hop and up/down took
    it for their switch distances, now routing.distances' own search); numpy.ma came with np.unique
    (NumPy 2.4), rich (a fifth of the process) with tables that off a terminal are plain text
    (fabscope.report.plaintable lays them out as rich does)."""
    code = ("import sys\nfrom fabscope.cli import main\n"
            f"main(['simulate', '--fabric', {fabric!r}, '--routing', {routing!r}, '--ppn', '1', '--pattern',"
            " 'random-pairs', '--dynamic', '--iterations', '1', '--warmup', '0'])\n"
            f"print(sorted(m for m in sys.modules if m in {UNUSED_BY_DYNAMIC!r} or m.split('.')[0] in "
            f"{UNUSED_BY_DYNAMIC!r}), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "dynamic: ping-pong" in p.stdout
    assert p.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv,loads_rich", [
    (["--fabric", "dragonfly:a=4,p=2,h=2,g=9", "--routing", "minimal", "--pattern", "shift:k=4"], False),
    (["--fabric", "itasca", "--routing", "minhop", "--pattern", "random-pairs", "--iterations", "2"], False),
    (["--fabric", "torus:4x4x4", "--routing", "dor", "--pattern", "permutation"], False),
    (["--fabric", "fat-tree:k=4,levels=3", "--pattern", "leaf-pairs:nodes_per_leaf=2", "--iterations", "1"], True)])
def test_piped_output_without_rich_is_richs(argv, loads_rich):
    """Piped, simulate --dynamic imports no rich and prints what rich prints there, byte for byte
    (TTY_COMPATIBLE=0 makes fabscope hand the output to rich, which still sees no terminal).
    The leaf matrix is still rich's: its lines and the plain table's come in order."""
    code = ("import sys\nfrom fabscope.cli import main\n"
            f"main(['simulate', '--ppn', '1', '--dynamic', *{argv!r}])\n"
            "print('rich' in sys.modules, file=sys.stderr)")
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    rich = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**env, "TTY_COMPATIBLE": "0"})
    assert plain.returncode == 0 and rich.returncode == 0, plain.stderr + rich.stderr
    assert plain.stderr.split()[-1] == str(loads_rich) and rich.stderr.split()[-1] == "True"
    assert "dynamic: " in plain.stdout and plain.stdout == rich.stdout


def test_simulate_leaves_without_teardown_and_everything_written(tmp_path):
    """Run as the program, simulate ends by os._exit once its outputs are in place: the table is
    flushed into the pipe, the JSON and CSV are whole, no lock or temporary file is left, and no
    exit handler ran (the interpreter's teardown of a big run's memory is skipped)."""
    out, csv = tmp_path / "r.json", tmp_path / "r.csv"
    code = ("import atexit, sys\natexit.register(lambda: print('teardown ran', file=sys.stderr))\n"
            "sys.argv = ['fabscope', 'simulate', '--fabric', 'torus:4x4x4', '--routing', 'dor', '--ppn', '1',"
            f" '--pattern', 'permutation', '--dynamic', '-o', {str(out)!r}, '--csv', {str(csv)!r}]\n"
            "from fabscope.cli import main\nsys.exit(main())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "dynamic: permutation, 64 messages" in p.stdout
    assert "teardown ran" not in p.stderr
    assert len(json.loads(out.read_text())["pairs"]["bandwidth"]) == 64
    assert len(csv.read_text().splitlines()) == 65
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.csv", "r.json"]
    # called as a function (tests, scripts), main returns and the process goes on
    code = code.replace("sys.exit(main())", "main(sys.argv[1:]); print('still here')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "still here" in p.stdout and "teardown ran" in p.stderr


def _blas_threads(argv, env_extra=None):
    """(OPENBLAS_NUM_THREADS as the program left it, threads of the process once numpy is loaded)."""
    import os

    code = (f"import os, sys\nsys.argv = {argv!r}\nimport fabscope.cli\nimport numpy\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                            "OMP_NUM_THREADS")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**env, **(env_extra or {})})
    assert p.returncode == 0, p.stderr
    value, threads = p.stdout.split()
    return value, int(threads)


def test_simulate_asks_openblas_for_one_thread():
    """fabscope simulate (and compare, diagnose, analyze, history) sets OPENBLAS_NUM_THREADS=1 before NumPy loads
    OpenBLAS (whose workers, one per core, only spin in a command that calls no BLAS routine): the
    process has its main thread alone.  A thread count the user set is kept, and other commands are
    left as they were."""
    import os

    assert _blas_threads(["fabscope", "simulate", "--fabric", "torus:4x4x4"]) == ("1", 1)
    for cmd in ("compare", "diagnose", "analyze", "history"):
        assert _blas_threads(["fabscope", cmd]) == ("1", 1), cmd
    assert _blas_threads(["fabscope", "simulate"], {"OMP_NUM_THREADS": "2"})[0] == "None"
    assert _blas_threads(["fabscope", "simulate"], {"OPENBLAS_NUM_THREADS": "3"})[0] == "3"
    value, threads = _blas_threads(["fabscope", "map"])
    assert value == "None"
    if len(os.sched_getaffinity(0)) > 1:       # OpenBLAS's default, a worker per core: the first check could fail
        assert threads > 1


@pytest.mark.parametrize("cmd", ["compare", "diagnose"])
def test_one_blas_thread_changes_no_diagnosis(tmp_path, cmd):
    """compare and diagnose of a measured result with two slow cables: the same result file with
    OpenBLAS's default threads and with one (the seconds they took aside)."""
    import os

    _small_inputs(tmp_path)
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    docs = []
    for i, extra in enumerate(({"OPENBLAS_NUM_THREADS": str(max(2, os.cpu_count() or 1))}, {})):
        out = tmp_path / f"{i}.json"
        p = subprocess.run([sys.executable, "-m", "fabscope.cli", cmd, str(tmp_path / "fault.json"), "--fabric",
                            "fat-tree:k=4,levels=2", "-o", str(out)], capture_output=True, text=True, timeout=300,
                           env={**base, **extra})
        assert p.returncode == 0, p.stderr
        doc = json.loads(out.read_text())
        for d in (doc["meta"], doc["meta"].get("model_info", {}), doc["meta"].get("null", {})):
            for k in ("seconds", "solve_seconds"):
                d.pop(k, None)
        docs.append(doc)
    assert docs[0] == docs[1]


@pytest.mark.parametrize("args", [
    ["--fabric", "fat-tree:k=4,levels=3", "--pattern", "shift:k=5", "--ppn", "1"],
    ["--fabric", "itasca", "--ppn", "2", "--pattern", "bisection", "--model", "congestion"],
    ["--fabric", "torus:4x4x4", "--routing", "dor", "--ppn", "1", "--pattern", "permutation", "--dynamic"],
])
def test_one_blas_thread_changes_no_result(tmp_path, args):
    """The same result file with OpenBLAS's default threads and with one (the solve's timing aside)."""
    import os

    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    docs = []
    for i, extra in enumerate(({}, {"OPENBLAS_NUM_THREADS": str(max(2, os.cpu_count() or 1))})):
        out = tmp_path / f"{i}.json"
        p = subprocess.run([sys.executable, "-m", "fabscope.cli", "simulate", *args, "-o", str(out)],
                           capture_output=True, text=True, timeout=120, env={**base, **extra})
        assert p.returncode == 0, p.stderr
        doc = json.loads(out.read_text())
        doc["meta"].pop("solve_seconds", None)
        docs.append(doc)
    assert docs[0] == docs[1]


def test_help_reads_the_benchmarks_tests_only_for_measure():
    """``fabscope --help`` builds every command's parser; fabscope-bench's table of tests (read from
    csrc/main.c for ``measure --help``) is read, and its module imported, only when that help is printed."""
    code = ("import sys\nfrom fabscope.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('benchhelp' if 'fabscope.measure.benchhelp' in sys.modules else 'none', file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "none"
    code = code.replace("['--help']", "['measure', '--help']")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "random-pairs" in p.stdout and p.stderr.strip().splitlines()[-1] == "benchhelp"


#: what a small simulate, compare, diagnose or analyze has no use for (each costs more CPU to import than
#: numpy itself; scipy.sparse came with the flow matrices, now fabscope.sparse: docs/startup.md)
UNUSED_ON_SMALL_INPUT = ("scipy", "networkx", "pandas", "plotly", "dask", "jinja2", "fabscope.mapping",
                         "fabscope.measure.build", "fabscope.measure.benchhelp", "fabscope.history")

PINGPONG = [
    {"type": "header", "schema": "fabscope.bench", "version": 1, "program": "fabscope-bench", "nranks": 2,
     "nnodes": 1, "tests": ["pingpong"], "seed": 0, "cpu_mhz": 2800.0, "online_cores": 2},
    {"type": "ranks", "host": ["h0", "h0"], "core": [1, 0], "socket": [0, 0]},
    {"type": "test", "test": "pingpong"},
    *({"type": "size", "test": "pingpong", "src": 0, "dst": 1, "bytes": b, "iters": 2, "latency": 1e-6 + b * 1e-10,
       "bandwidth": b / (1e-6 + b * 1e-10)} for b in (0, 1, 64, 1024)),
    {"type": "test_end", "test": "pingpong", "elapsed": 0.01},
    {"type": "end", "status": 0, "elapsed": 0.01},
]


def _small_inputs(d):
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.synthetic import as_result, synthetic
    from fabscope.fabric.io import load_fabric

    f = load_fabric("fat-tree:k=4,levels=2")
    as_result(synthetic(f, *make_plan(f).pairs, {}, noise=0.03, seed=1)).write_json(str(d / "meas.json"))
    # two slow cables: the search for suspects runs (its tie test compares matrix columns)
    as_result(synthetic(f, *make_plan(f).pairs, {f.n_links // 2 - 3: 0.3, 20: 0.5}, noise=0.03,
                        seed=1)).write_json(str(d / "fault.json"))
    (d / "pp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in PINGPONG))


@pytest.mark.parametrize("argv", [
    ["simulate", "--fabric", "fat-tree:k=4,levels=2", "--pattern", "permutation"],
    ["simulate", "--fabric", "torus:4x4", "--routing", "dor", "--pattern", "bisection", "--model", "congestion"],
    ["compare", "{d}/meas.json", "--fabric", "fat-tree:k=4,levels=2"],
    ["diagnose", "{d}/meas.json", "--fabric", "fat-tree:k=4,levels=2"],
    ["diagnose", "{d}/fault.json", "--fabric", "fat-tree:k=4,levels=2"],
    ["analyze", "{d}/pp.jsonl"],
])
def test_commands_on_a_small_input_import_nothing_unused(tmp_path, argv):
    """The start-up target (under 2x ``import numpy`` in CPU: bench/bench_startup.py) holds only while
    these stay out; the import set is checked here, not the time."""
    _small_inputs(tmp_path)
    argv = [a.format(d=tmp_path) for a in argv]
    code = ("import sys\nfrom fabscope.cli import main\n"
            f"code = main({argv!r})\n"
            f"print(code, sorted(m for m in sys.modules if m in {UNUSED_ON_SMALL_INPUT!r} or "
            f"m.split('.')[0] in {UNUSED_ON_SMALL_INPUT!r} or '.'.join(m.split('.')[:2]) in "
            f"{UNUSED_ON_SMALL_INPUT!r}), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()                           # the command did its work
    assert p.stderr.strip().splitlines()[-1] in ("0 []", "None []"), p.stderr


@pytest.mark.parametrize("argv", [
    ["simulate", "--fabric", "fat-tree:k=4,levels=2", "--pattern", "permutation"],
    ["compare", "{d}/meas.json", "--fabric", "fat-tree:k=4,levels=2"],
    ["diagnose", "{d}/fault.json", "--fabric", "fat-tree:k=4,levels=2"],
    ["analyze", "{d}/pp.jsonl"],
])
def test_small_commands_leave_numpy_masked_arrays_unloaded(tmp_path, argv):
    """NumPy 2 imports numpy.ma (0.011 CPU s, 8 % of ``import numpy``) at the first plain ``np.unique``
    or any ``np.median``; compare's time model (its sets, its phases' spread), diagnose's noise level,
    fit and search, and analyze's fit of a sweep (its stray points) called them.  They use
    fabscope.arrays' now."""
    _small_inputs(tmp_path)
    argv = [a.format(d=tmp_path) for a in argv]
    code = ("import sys\nfrom fabscope.cli import main\n"
            f"code = main({argv!r})\n"
            "print(code, 'numpy.ma' in sys.modules, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
    assert p.stderr.strip().splitlines()[-1] in ("0 False", "None False"), p.stderr
