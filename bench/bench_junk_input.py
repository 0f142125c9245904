"""How fast and in how much memory wrong input is refused: specs that name huge things, hostile files.

    python bench/bench_junk_input.py [--mb 200]

Prints one table: for each input, the seconds to refuse it, the peak Python
memory while doing so (tracemalloc, numpy included) and the one-line message
(file paths shown as FILE).  The goal: each under 1 s and 200 MB (the counts a user types,
``--iterations`` and ``--nights``, under 1 s and 100 MB).

Inputs: the fabric, pattern and comm specs a user might mistype (huge fabrics, NaN and
negative numbers, periodic flags that are not 0/1, a billion cores, a billion
bisection samples), ``fabric critical --workers 100000``, ``simulate --dynamic --iterations
1000000000000``, ``history example --nights 1000000000``, ``map --trace`` of a 72 MB trace (about 3 million
messages) under ``FABSCOPE_MAX_MEMORY=1G``, a report of a result
naming a huge generated fabric; and files: ``--mb`` MB of random bytes into
the streaming ibnetdiscover and forwarding-table readers (beside reading it
whole, the least any reader that does not stream pays), ``--mb`` MB on one
line into every line reader, JSON nested 100,000 deep, bytes that are not
UTF-8, bench lines with "fast", 1e400, a missing field, rank -1, two runs in a
file, and a result with a NaN bandwidth.  ``torus:2000x2000`` fits in this
machine's memory: it is not refused but announced with the time its build
takes (the row times that announcement).  Modules are imported and the JSON
schemas compiled before the clock starts: a command pays those whatever its input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
import warnings
from typing import Any, Callable

from fabscope.errors import FabscopeError, FabscopeWarning

HEADER = {"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2, "mpi_library": "MPICH 4.1"}
RANKS = {"type": "ranks", "host": ["a", "b"], "core": [0, 0], "socket": [0, 0]}
TEST = {"type": "test", "test": "random-pairs"}
PAIR = {"type": "pair", "test": "random-pairs", "src": 0, "dst": 1, "bytes": 8, "iters": 1, "time": 1e-6,
        "bandwidth": 1.6e7, "scenario": 0}


def measure(fn: Callable[[], Any], hide: str = "") -> tuple[float, float, str]:
    """(seconds, peak MB, message) of ``fn`` refusing; a FabscopeWarning counts as its answer too."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FabscopeWarning)
            fn()
        msg = "accepted?!"
    except (FabscopeError, FabscopeWarning) as err:
        msg = ("warning: " if isinstance(err, FabscopeWarning) else "") + str(err)
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return took, peak, msg.replace(hide, "FILE") if hide else msg


def spec_rows() -> list[tuple[str, Callable[[], Any]]]:
    import numpy as np

    from fabscope.diagnose.critical import check_workers
    from fabscope.fabric.generators import fat_tree
    from fabscope.fabric.io import load_fabric
    from fabscope.fabric.placement import Placement
    from fabscope.mapping.commspec import load_comm
    from fabscope.report.inputs import Run, attach_fabric
    from fabscope.result import Result
    from fabscope.traffic.spec import make_traffic

    rows: list[tuple[str, Callable[[], Any]]] = [
        (s, lambda s=s: load_fabric(s)) for s in (
            "torus:100000x100000x100000", "fat-tree:k=1000,levels=5", "hypercube:d=60",
            "xgft:m=1000x1000x1000,w=1x1000x1000", "director:radix=100000", "torus:2000x2000",
            "torus:4x4,cores=1000000000", "torus:4x4,periodic=5x5", "fat-tree:k=2,capacity=nan",
            "itasca:memory_bw=-1")]
    f = fat_tree(k=16, levels=2, cores=16)
    p = Placement.block(f, 4096, 16)
    rows += [(f"{s} (4,096 ranks)", lambda s=s: make_traffic(s, f, p, 1e6))
             for s in ("bisection:samples=1e8", "all-to-all", "shift:k=1e400")]
    rows += [(s, lambda s=s: load_comm(s)) for s in ("ring:100000000000", "random:1000000,degree=100000")]
    rows.append(("fabric critical --workers 100000", lambda: check_workers(100000)))

    def report_huge() -> None:
        r = Result(meta={"kind": "model", "fabric": "torus(100000x100000x100000)",
                         "fabric_params": {"generator": "torus"}}, class_labels=("a",),
                   pairs={"src": np.array([0]), "dst": np.array([1]), "cls": np.array([0]),
                          "bandwidth": np.array([1.0])})
        run = Run("r", r)
        attach_fabric([run])
        raise FabscopeError(f"report: fabric {'not rebuilt' if run.fabric is None else 'REBUILT'}")
    rows.append(("report of a result naming torus(100000x100000x100000)", report_huge))
    rows += count_rows()
    return rows


def count_rows() -> list[tuple[str, Callable[[], Any]]]:
    """Counts a user types that drive an allocation: refused from the count, before it is made."""
    import numpy as np

    from fabscope.cli import build_parser
    from fabscope.dynamic.programs import pingpong, ring

    def command(*argv: str) -> Callable[[], Any]:
        def run() -> None:
            args = build_parser(argv[0]).parse_args(list(argv))
            args.func(args)
        return run

    folder = os.path.join(tempfile.gettempdir(), "fabscope-bench-nights-never-made")

    def huge_trace() -> None:
        """A trace whose size implies 3 million messages, refused from its size (a sparse file: never read)."""
        old = os.environ.get("FABSCOPE_MAX_MEMORY")
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.csv")
            with open(trace, "wb") as fh:
                fh.truncate(72 * 10 ** 6)
            os.environ["FABSCOPE_MAX_MEMORY"] = "1G"
            try:
                command("map", "--fabric", "fat-tree:k=4,levels=2", "--comm", "ring:4", "--trace", trace)()
            finally:
                if old is None:
                    del os.environ["FABSCOPE_MAX_MEMORY"]
                else:
                    os.environ["FABSCOPE_MAX_MEMORY"] = old

    return [("simulate --dynamic --iterations 1000000000000 (ping-pong)",
             lambda: pingpong(np.arange(8), np.arange(8, 16), 1e6, 10 ** 12, n_ranks=16)),
            ("simulate --dynamic --pattern natural-ring --iterations 1e12", lambda: ring(16, 1e6, 10 ** 12)),
            ("history example --nights 1000000000", command("history", "example", folder, "--nights", "1000000000")),
            ("map --trace of 72 MB (3 million messages), MAX_MEMORY=1G", huge_trace)]


def file_rows(d: str, mb: int) -> list[tuple[str, str, Callable[[str], Any]]]:
    from fabscope.diagnose.measured import read_source
    from fabscope.dynamic.programs import replay_trace
    from fabscope.fabric.importers import read_ibnetdiscover, read_lfts
    from fabscope.fabric.importers.hostmap import read_hostmap
    from fabscope.fabric.io import read_json
    from fabscope.traffic.commfiles import read_comm_file
    from fabscope.mapping.targets import read_nodes
    from fabscope.measure.apps import is_app_run
    from fabscope.measure.parse import read_run
    from fabscope.report.inputs import read_input
    from fabscope.result import Result

    def write(name: str, data: bytes | str) -> str:
        path = os.path.join(d, name)
        with open(path, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        return path

    rnd = os.path.join(d, "random.bin")
    line = os.path.join(d, "line.txt")
    with open(rnd, "wb") as a, open(line, "wb") as b:
        for _ in range(mb):
            a.write(os.urandom(1 << 20))
            b.write(b"1" * (1 << 20))

    def read_whole(path: str) -> None:
        with open(path, encoding="utf-8", errors="replace") as fh:
            fh.read().splitlines()
        raise FabscopeError("read whole (the peer)")

    def bench(*records: Any) -> str:
        return "\n".join(r if isinstance(r, str) else json.dumps(r, allow_nan=True)
                         for r in (HEADER, RANKS, TEST, *records)) + "\n"

    deep = "[" * 100_000 + "]" * 100_000
    nan_result = json.dumps({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"},
                             "class_labels": ["a"], "pairs": {"cls": [0], "bandwidth": [float("nan")]}},
                            allow_nan=True)
    rows = [(f"{mb} MB random bytes: read_ibnetdiscover", rnd, read_ibnetdiscover),
            (f"{mb} MB random bytes: read_lfts", rnd, read_lfts),
            (f"{mb} MB random bytes: read whole and split (peer)", rnd, read_whole)]
    for what, fn in (("host map", read_hostmap), ("--nodes host file", read_nodes), ("bench JSON lines", read_run),
                     ("compare/diagnose input", read_source), ("comm CSV", read_comm_file),
                     ("message trace", replay_trace)):
        ext = ".csv" if what in ("comm CSV", "message trace") else ""
        rows.append((f"{mb} MB on one line: {what}", line + ext if ext else line, fn))
        if ext and not os.path.exists(line + ext):
            os.link(line, line + ext)
    mtx = write("line.mtx", "%%MatrixMarket matrix coordinate real general\n")
    with open(mtx, "ab") as fh:
        for _ in range(mb):
            fh.write(b"1" * (1 << 20))
    rows.append((f"{mb} MB on one line: Matrix Market", mtx, read_comm_file))
    app = write("app.jsonl", json.dumps(HEADER) + "\n")
    with open(app, "ab") as fh:
        for _ in range(mb):
            fh.write(b"1" * (1 << 20))
    rows.append((f"bench header, {mb} MB line: is_app_run", app, is_app_run))
    rows += [
        ("JSON nested 100,000 deep: fabric file", write("deep.json", deep), read_json),
        ("JSON nested 100,000 deep: result file", write("deep2.json", deep), Result.read_json),
        ("JSON nested 100,000 deep: report input", write("deep3.json", deep), read_input),
        ("JSON nested 100,000 deep: a bench line", write("deep.jsonl", bench(deep)), read_run),
        ("not UTF-8: host map", write("hm.txt", b"a node1\n\xff\xfe x\n"), read_hostmap),
        ("not UTF-8: host file", write("hosts", b"n1\n\xc3(\n"), read_nodes),
        ("not UTF-8: comm CSV", write("c.csv", b"0,1\n\x80,0\n"), read_comm_file),
        ("bench: bandwidth \"fast\"", write("fast.jsonl", bench({**PAIR, "bandwidth": "fast"})), read_run),
        ("bench: time 1e400", write("inf.jsonl", bench(json.dumps(PAIR).replace("1e-06", "1e400"))), read_run),
        ("bench: no 'dst'", write("nodst.jsonl", bench({k: v for k, v in PAIR.items() if k != "dst"})), read_run),
        ("bench: rank -1", write("neg.jsonl", bench({**PAIR, "src": -1})), read_run),
        ("bench: two runs of different MPIs", write("two.jsonl", bench(
            PAIR, {**HEADER, "mpi_library": "Open MPI v4.1.5"}, RANKS, TEST, PAIR)), read_run),
        ("result: NaN bandwidth", write("nan.json", nan_result), Result.read_json),
    ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200, help="size of the random and one-line files (default 200)")
    a = ap.parse_args()
    from fabscope.schemas import validate

    validate({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"}, "class_labels": [],
              "pairs": {"cls": [], "bandwidth": []}}, "result")           # compile the schema once
    width = 56
    print(f"{'input':<{width}} {'seconds':>8} {'peak MB':>8}  message")
    worst_t = worst_m = 0.0
    for name, fn in spec_rows():
        took, peak, msg = measure(fn)
        worst_t, worst_m = max(worst_t, took), max(worst_m, peak)
        print(f"{name[:width]:<{width}} {took:8.3f} {peak:8.1f}  {msg}", flush=True)
    with tempfile.TemporaryDirectory() as d:
        for name, path, fn in file_rows(d, a.mb):
            took, peak, msg = measure(lambda: fn(path), hide=path)
            if "peer" not in name:
                worst_t, worst_m = max(worst_t, took), max(worst_m, peak)
            print(f"{name[:width]:<{width}} {took:8.3f} {peak:8.1f}  {msg}", flush=True)
    print(f"\nslowest refusal {worst_t:.3f} s, largest peak {worst_m:.1f} MB (goal: under 1 s and 200 MB; "
          "the peer row is not counted)")
    sys.exit(0 if worst_t < 1 and worst_m < 200 else 1)


if __name__ == "__main__":
    main()
