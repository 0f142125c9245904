"""Fuzz: every reader of a file, on bytes (mutated samples, raw bytes, bytes spliced into samples).

Readers: host maps, host files (and ``--nodes`` files), fabscope-bench JSON lines (then the per-pair
table, and the compare/diagnose reader), communication matrices (CSV, Matrix Market), message traces,
fabric JSON, result JSON and report inputs.  The property is fuzzkit's: a clean refusal or a result.
"""

from __future__ import annotations

import json
import os
import tempfile

from fuzzkit import bytes_like, fuzz_tests
from hypothesis import strategies as st

from fabscope.diagnose.measured import read_source
from fabscope.dynamic.programs import replay_trace
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.importers.hostmap import read_hostmap
from fabscope.fabric.io import read_json, to_dict
from fabscope.traffic.commfiles import read_comm_file
from fabscope.mapping.targets import read_nodes
from fabscope.measure.parse import read_run, to_result
from fabscope.report.inputs import read_input

HEADER = {"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 4, "nnodes": 2,
          "mpi_library": "MPICH Version: 4.1", "seed": 1, "yield": "spin"}
BENCH = [json.dumps(HEADER),
         json.dumps({"type": "ranks", "host": ["a", "a", "b", "b"], "core": [0, 1, 0, 1], "socket": [0, 0, 0, 0]}),
         json.dumps({"type": "test", "test": "random-pairs"})] + [
    json.dumps({"type": "pair", "test": "random-pairs", "src": s, "dst": d, "bytes": 1048576, "iters": 10,
                "time": 0.001, "bandwidth": 2.1e9, "scenario": 0}) for s, d in ((0, 2), (1, 3))] + [
    json.dumps({"type": "test", "test": "pingpong"}),
    json.dumps({"type": "size", "test": "pingpong", "src": 0, "dst": 1, "bytes": 8, "iters": 100,
                "latency": 1.5e-6, "bandwidth": 5.3e6}),
    json.dumps({"type": "end", "status": 0, "elapsed": 1.5})]
HOSTMAP = ["# guid or description, host", "0x0008f104039a1b2c,node0001", "MT25408 ConnectX,node0002,8", "a node0003"]
HOSTFILE = ["# PBS", "node0001", "node0001", "node0002 slots=4", "node0003:2"]
CSV = ["# bytes", "0,10,0,5", "5,0,7,0", "0;3;0;1", "1 2 3 0"]
MTX = ["%%MatrixMarket matrix coordinate real general", "4 4 3", "1 2 1048576", "2 1 1e6", "3 4 8"]
TRACE = ["time,src,dst,bytes", "0,0,1,1000", "0.5,1,2,1e6", "1e-3,3,0,8"]
FABRIC = [json.dumps(to_dict(fat_tree(k=2, levels=2)))]
RESULT = [json.dumps({"schema": "fabscope.result", "version": 1, "meta": {"kind": "measure", "test": "random-pairs"},
                      "class_labels": ["Same Node", "Far"],
                      "pairs": {"src": [0, 1], "dst": [2, 3], "src_host": ["h0000", "h0001"],
                                "dst_host": ["h0002", "h0003"], "cls": [1, 1], "bytes": [8, 8],
                                "bandwidth": [1e9, 2e9], "time": [1e-6, 2e-6], "scenario": [0, 0]}})]


def _file(ext: str, read):
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "input" + ext)
            with open(p, "wb") as fh:
                fh.write(data)
            read(p)
    return check


def _bench(p: str) -> None:
    run = read_run(p)
    run.describe()
    to_result(run)


def _compare_input(p: str) -> None:
    for _, cols, _ in read_source(p):
        assert len(cols["src"]) == len(cols["bandwidth"])


test_hostmap_file, test_hostmap_file_nightly = fuzz_tests(bytes_like(HOSTMAP), _file(".txt", read_hostmap))
test_hostfile, test_hostfile_nightly = fuzz_tests(bytes_like(HOSTFILE), _file("", read_nodes))
test_bench, test_bench_nightly = fuzz_tests(bytes_like(BENCH), _file(".jsonl", _bench))
test_compare_input, test_compare_input_nightly = fuzz_tests(bytes_like(BENCH) | bytes_like(RESULT),
                                                            _file(".json", _compare_input))
test_csv, test_csv_nightly = fuzz_tests(bytes_like(CSV), _file(".csv", read_comm_file))
test_mtx, test_mtx_nightly = fuzz_tests(bytes_like(MTX), _file(".mtx", read_comm_file))
test_trace, test_trace_nightly = fuzz_tests(bytes_like(TRACE), _file(".csv", replay_trace))
test_fabric, test_fabric_nightly = fuzz_tests(bytes_like(FABRIC) | st.integers(1, 100_000).map(
    lambda n: b"[" * n + b"]" * n), _file(".json", read_json), default=100)
test_report_input, test_report_input_nightly = fuzz_tests(
    bytes_like(RESULT + BENCH) | st.integers(1, 100_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    _file(".json", read_input), default=100)
