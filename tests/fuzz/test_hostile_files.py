"""Hostile files for every text reader: random bytes, a line with no end, JSON nested 100,000 deep,
numbers that are not numbers, two runs in one file.  Each is refused with one line naming the file
(and the line, where there is one), never a traceback, and an overlong line is never read whole."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest
from fuzzkit import refuses_cleanly

from fabscope.cli import main
from fabscope.errors import FabscopeError, SchemaError
from fabscope.textio import MAX_LINE

HEADER = {"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2, "mpi_library": "MPICH 4.1"}
RANKS = {"type": "ranks", "host": ["a", "b"], "core": [0, 0], "socket": [0, 0]}
TEST = {"type": "test", "test": "random-pairs"}
PAIR = {"type": "pair", "test": "random-pairs", "src": 0, "dst": 1, "bytes": 8, "iters": 1, "time": 1e-6,
        "bandwidth": 1.6e7, "scenario": 0}


def _readers():
    from fabscope.diagnose.measured import read_source
    from fabscope.dynamic.programs import replay_trace
    from fabscope.fabric.importers.hostmap import read_hostmap
    from fabscope.fabric.io import read_json
    from fabscope.traffic.commfiles import read_comm_file
    from fabscope.mapping.targets import read_nodes
    from fabscope.measure.hostlists import read_hostfile
    from fabscope.measure.parse import read_run
    from fabscope.report.inputs import read_input
    from fabscope.result import Result

    return {"host map": (read_hostmap, ".txt"), "host file": (read_hostfile, ""), "--nodes": (read_nodes, ""),
            "bench run": (read_run, ".jsonl"), "compare/diagnose input": (read_source, ".jsonl"),
            "comm csv": (read_comm_file, ".csv"), "matrix market": (read_comm_file, ".mtx"),
            "fabric json": (read_json, ".json"), "result json": (Result.read_json, ".json"),
            "report input": (read_input, ".json"), "trace": (replay_trace, ".csv")}


READERS = sorted(_readers())


def _refused(reader, path) -> str:
    with pytest.raises(FabscopeError) as err:
        reader(str(path))
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    return msg


def _refused_with_peak(reader, path) -> tuple[str, int]:
    """The refusal, and the peak Python memory (bytes) held until it came."""
    tracemalloc.start()
    try:
        msg = _refused(reader, path)
        return msg, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", READERS)
def test_random_bytes_are_named_with_their_file(tmp_path, kind):
    reader, ext = _readers()[kind]
    p = tmp_path / ("junk" + ext)
    p.write_bytes(b"node1 slots=2\n" + bytes(range(128, 256)) * 4 + b"\n")
    msg = _refused(reader, p)
    assert str(p) in msg


@pytest.mark.parametrize("kind", [k for k in READERS
                                  if k not in ("fabric json", "result json", "report input", "matrix market")])
def test_bytes_that_are_not_utf8_are_named_by_line_and_column(tmp_path, kind):
    reader, ext = _readers()[kind]
    p = tmp_path / ("junk" + ext)
    p.write_bytes(b"\n\xff\xfe\n")
    msg = _refused(reader, p)
    assert f"{p} line 2: not UTF-8 text (byte 0xff at column 1)" in msg, msg


@pytest.mark.parametrize("kind", [k for k in READERS if k not in ("fabric json", "result json", "report input")])
def test_a_line_without_end_is_refused_after_the_bound(tmp_path, kind):
    reader, ext = _readers()[kind]
    p = tmp_path / ("long" + ext)
    with open(p, "wb") as fh:
        if kind in ("bench run", "compare/diagnose input"):
            fh.write(json.dumps(HEADER).encode() + b"\n")
        fh.write(b"1" * (24 * MAX_LINE))                 # 24 MiB on one line
    msg, peak = _refused_with_peak(reader, p)
    assert f"longer than {MAX_LINE:,}" in msg, msg
    assert peak < 8 * MAX_LINE, f"{peak / 1e6:.1f} MB held to refuse a 24 MiB line"


def _header_then_100_mb_line(path):
    with open(path, "wb") as fh:
        fh.write(json.dumps(HEADER).encode() + b"\n")
        fh.truncate(fh.tell() + 100 * 1000 * 1000)      # a 100 MB line with no end (a sparse file: no disk used)


def test_the_app_run_check_reads_a_100_mb_line_bounded(tmp_path):
    """``is_app_run`` (compare and map --comm ask it first) reads through the bounded reader: a file that
    claims to be a fabscope-bench output and then holds a 100 MB line is refused after the bound."""
    from fabscope.measure.apps import is_app_run

    p = tmp_path / "run.jsonl"
    _header_then_100_mb_line(p)
    msg, peak = _refused_with_peak(is_app_run, p)
    assert msg == f"{p} line 2: longer than {MAX_LINE:,} bytes; not a fabscope-bench output", msg
    assert peak < 8 * MAX_LINE, f"{peak / 1e6:.1f} MB held to refuse a 100 MB line"


@pytest.mark.parametrize("command", [["map", "--fabric", "fat-tree:k=4,levels=2", "--comm"], ["compare"]])
def test_a_100_mb_line_is_one_line_from_the_commands_that_ask_for_app_runs(tmp_path, capsys, command):
    p = tmp_path / "run.jsonl"
    _header_then_100_mb_line(p)
    assert main([*command, str(p)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{p} line 2: longer than {MAX_LINE:,} bytes" in err, err


@pytest.mark.parametrize("kind", ["fabric json", "result json", "report input", "bench run",
                                  "compare/diagnose input"])
def test_json_nested_100000_deep(tmp_path, kind):
    reader, ext = _readers()[kind]
    p = tmp_path / ("deep" + ext)
    deep = "[" * 100_000 + "]" * 100_000
    if kind in ("bench run", "compare/diagnose input"):
        p.write_text(json.dumps(HEADER) + "\n" + json.dumps(RANKS) + "\n" + deep + "\n")
    else:
        p.write_text(deep)
    assert "nested deeper than 64 levels" in _refused(reader, p)


@pytest.mark.parametrize("kind", ["fabric json", "result json", "report input"])
def test_a_json_number_of_24_million_digits(tmp_path, kind):
    reader, ext = _readers()[kind]
    p = tmp_path / ("long" + ext)
    p.write_bytes(b"1" * (24 * MAX_LINE))
    assert "not valid JSON (Exceeds the limit (4300 digits) for integer string conversion" in _refused(reader, p)


def test_nested_70_deep_inside_a_valid_result(tmp_path):
    from fabscope.result import Result

    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model", "x": [[0]] * 1},
                             "class_labels": ["a"], "pairs": {"cls": [0], "bandwidth": [1.0]},
                             "extra": {"deep": json.loads("[" * 70 + "]" * 70)}}))
    assert "nested deeper than 64 levels" in _refused(Result.read_json, p)


def _bench(tmp_path, *records, header=HEADER, tail=""):
    p = tmp_path / "run.jsonl"
    p.write_text("\n".join(json.dumps(r, allow_nan=True) if isinstance(r, dict) else r
                           for r in (header, RANKS, TEST, *records)) + "\n" + tail)
    return p


@pytest.mark.parametrize("change,msg", [
    ({"bandwidth": "fast"}, "run.jsonl:4: 'bandwidth' is 'fast', not a number"),
    ({"time": float("nan")}, "run.jsonl:4: 'time' is nan, not a finite number"),
    ({"bandwidth": -5.0}, "run.jsonl:4: 'bandwidth' is -5.0, not a number >= 0"),
    ({"src": -1}, "run.jsonl:4: 'src' is -1, not an integer in [0, 1]"),
    ({"dst": 2}, "run.jsonl:4: 'dst' is 2, not an integer in [0, 1]"),
    ({"bytes": 1.5}, "run.jsonl:4: 'bytes' is 1.5, not an integer"),
    ({"src": None}, "run.jsonl:4: 'src' is None, not a number"),
])
def test_bench_numbers_are_checked(tmp_path, change, msg):
    from fabscope.measure.parse import read_run

    assert msg in _refused(read_run, _bench(tmp_path, {**PAIR, **change}))


def test_bench_1e400_is_refused(tmp_path):
    from fabscope.measure.parse import read_run

    line = json.dumps(PAIR).replace('"bandwidth": 16000000.0', '"bandwidth": 1e400')
    assert "run.jsonl:4: 'bandwidth' is inf, not a finite number" in _refused(read_run, _bench(tmp_path, line))


@pytest.mark.parametrize("field", ["src", "dst", "bytes", "test"])
def test_bench_missing_fields_are_named(tmp_path, field):
    from fabscope.measure.parse import read_run

    rec = {k: v for k, v in PAIR.items() if k != field}
    assert f"run.jsonl:4: a 'pair' line without {field!r}" in _refused(read_run, _bench(tmp_path, rec))


def test_two_runs_of_different_mpis_are_refused_unless_merged(tmp_path):
    from fabscope.measure.parse import read_run

    other = {**HEADER, "mpi_library": "Open MPI v4.1.5"}
    p = _bench(tmp_path, PAIR, other, RANKS, TEST, PAIR)
    msg = _refused(read_run, p)
    assert "run.jsonl:5: a second run, of another MPI ('Open MPI v4.1.5', the first 'MPICH 4.1') starts here" in msg
    assert "--merge" in msg
    assert len(read_run(str(p), merge=True).records) == 2
    p2 = _bench(tmp_path, PAIR, {**HEADER, "nranks": 4}, PAIR)
    assert "the runs have 2 and 4 ranks" in _refused(lambda x: read_run(x, merge=True), p2)


def test_analyze_says_merge_on_the_command_line(tmp_path, capsys):
    p = _bench(tmp_path, PAIR, HEADER, RANKS, TEST, PAIR)
    assert main(["analyze", str(p)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a second run starts here" in err and "--merge" in err
    assert main(["analyze", "--merge", str(p)]) == 0


def test_a_cut_last_line_is_still_read_as_far_as_whole(tmp_path):
    from fabscope.measure.parse import read_run

    run = read_run(str(_bench(tmp_path, PAIR, tail='{"type": "pa')))
    assert run.truncated and len(run.records) == 1
    p = _bench(tmp_path, PAIR, '{"type": "pa', PAIR)
    assert "line 5 is not JSON" in _refused(read_run, p)


@pytest.mark.parametrize("col,value,msg", [
    ("bandwidth", float("nan"), "pair column 'bandwidth' entry 1 is nan, not a finite number"),
    ("bandwidth", float("inf"), "pair column 'bandwidth' entry 1 is inf, not a finite number"),
    ("bandwidth", -1.0, "pair column 'bandwidth' entry 1 is -1.0, not a number >= 0"),
    ("time", -1.0, "pair column 'time' entry 1 is -1.0, not a number >= 0"),
    ("src", -1, "pair column 'src' entry 1 is -1, not an integer >= 0"),
    ("cls", 5, "pair column 'cls' names class 5; the result has 1 class labels"),
])
def test_result_numbers_are_refused_by_column(tmp_path, col, value, msg):
    from fabscope.result import Result

    doc = {"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"}, "class_labels": ["a"],
           "pairs": {"src": [0], "dst": [1], "cls": [0], "bandwidth": [1e9], "time": [1e-3]}}
    doc["pairs"][col] = [value]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc, allow_nan=True))
    got = _refused(Result.read_json, p)
    assert got == f"{p}: {msg}", got


def test_a_json_file_larger_than_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    from fabscope.fabric.io import read_json

    p = tmp_path / "big.json"
    p.write_bytes(b" " * 2_000_000)
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "10MB")
    msg = _refused(read_json, p)
    assert msg == f"{p}: a JSON file of 2.0 MB needs about 24.0 MB to read; the limit is 10.0 MB (FABSCOPE_MAX_MEMORY)"


def test_rank_minus_one_in_a_trace_is_not_the_last_rank(tmp_path):
    from fabscope.dynamic.programs import replay_trace

    p = tmp_path / "t.csv"
    p.write_text("0,0,1,100\n0,1,-1,100\n")
    assert f"{p}:2: dst is -1, not an integer in [0, 3]" in _refused(lambda x: replay_trace(x, 4), p)


@pytest.mark.parametrize("argv", [["analyze", "{p}"], ["compare", "{p}", "--fabric", "fat-tree:k=2"],
                                  ["map", "--fabric", "fat-tree:k=2", "--comm", "{p}.csv"],
                                  ["simulate", "--fabric", "fat-tree:k=2", "--hostfile", "{p}"]])
def test_cli_random_bytes_one_line_exit_1(tmp_path, argv, capsys):
    p = tmp_path / "junk"
    data = os.urandom(4000).replace(b"\n", b"\xff")
    p.write_bytes(data)
    (tmp_path / "junk.csv").write_bytes(data)
    assert main([a.replace("{p}", str(p)) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fabscope: error: ") and err.count("\n") == 1, err


def test_depth_check_counts_objects_and_lists():
    from fabscope.textio import check_depth

    ok = json.loads('{"a": ' * 63 + "1" + "}" * 63)
    check_depth(ok, "x")
    refuses_cleanly(lambda d: check_depth(d, "x"), json.loads('{"a": ' * 65 + "1" + "}" * 65))
    with pytest.raises(FabscopeError, match="nested deeper"):
        check_depth(json.loads('{"a": ' * 65 + "1" + "}" * 65), "x")
    assert SchemaError  # the readers raise their own subclasses of FabscopeError


def test_a_line_of_exactly_the_bound_is_read(tmp_path):
    from fabscope.textio import read_lines

    p = tmp_path / "f"
    p.write_bytes(b"x" * 100 + b"\n" + b"y" * 100)
    assert [len(line) for _, line in read_lines(p, "test file", limit=100)] == [101, 100]
    p.write_bytes(b"x" * 101 + b"\n")
    with pytest.raises(FabscopeError, match="line 1: longer than 100 bytes; not a test file"):
        list(read_lines(p, "test file", limit=100))


@pytest.mark.parametrize("col,value,msg", [("load", float("nan"), "link column 'load' entry 1 is nan"),
                                           ("capacity", -5.0, "link column 'capacity' entry 1 is -5.0, not a number >= 0"),
                                           ("link", -1, "link column 'link' entry 1 is -1, not an integer >= 0")])
def test_result_link_numbers_are_refused(tmp_path, col, value, msg):
    from fabscope.result import Result

    doc = {"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"}, "class_labels": ["a"],
           "pairs": {"cls": [0], "bandwidth": [1e9]}, "links": {"link": [3], "load": [1e9], "capacity": [2e9]}}
    doc["links"][col] = [value]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc, allow_nan=True))
    assert msg in _refused(Result.read_json, p)
