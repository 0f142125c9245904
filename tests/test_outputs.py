"""Output files: checked before any work, written all or none, created as open() would (umask).

Also the counts every command takes (--ppn, --ranks): zero and negatives are refused by name.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys

import pytest

from fabscope.atomic import all_or_none, atomic_open
from fabscope.cli import main

DATA = os.path.join(os.path.dirname(__file__), "fabric", "data")
TOPO = os.path.join(DATA, "ibnetdiscover.small.txt")
LFTS = os.path.join(DATA, "opensm-lfts.small.minhop")


def _run(argv, capsys, stdin=""):
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        rc = main(argv)
    finally:
        sys.stdin = old
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def umask():
    old = os.umask(0o022)
    os.umask(old)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writer_honours_umask(tmp_path, umask, mask, mode):
    umask(mask)
    p = tmp_path / "topology.conf"
    with atomic_open(p) as fh:
        fh.write("x\n")
    assert stat.S_IMODE(p.stat().st_mode) == mode
    # what open() would have made, side by side
    q = tmp_path / "plain.txt"
    with open(q, "w") as fh:
        fh.write("x\n")
    assert stat.S_IMODE(q.stat().st_mode) == mode


def test_atomic_writer_keeps_an_existing_files_mode(tmp_path, umask):
    umask(0o077)
    p = tmp_path / "hosts"
    p.write_text("old\n")
    p.chmod(0o640)
    with atomic_open(p) as fh:
        fh.write("new\n")
    assert p.read_text() == "new\n" and stat.S_IMODE(p.stat().st_mode) == 0o640


def test_cli_output_honours_umask(tmp_path, umask, capsys):
    umask(0o022)
    out = tmp_path / "topology.conf"
    assert main(["fabric", "export", "--fabric", "fat-tree:k=4,levels=2", "--format", "slurm", "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_all_or_none_removes_every_temp_on_failure(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.csv"
    with pytest.raises(RuntimeError):
        with all_or_none():
            with atomic_open(a) as fh:
                fh.write("{}")
            with atomic_open(b) as fh:
                fh.write("1,2")
            raise RuntimeError("late failure")
    assert list(tmp_path.iterdir()) == []
    with all_or_none():
        with atomic_open(a) as fh:
            fh.write("{}")
        assert not a.exists()               # lands only at the end of the block
    assert a.read_text() == "{}"


# every command that writes files, with a place for the bad path; the rest of the command would fail
# *later* (or take long), so an error naming the output proves the check came first
def _commands(bad: str, good: str) -> list[tuple[list[str], str]]:
    slow = ["--fabric", "itasca", "--ranks", "8576", "--pattern", "all-to-all"]
    return [
        (["simulate", *slow, "-o", bad], "-o/--output"),
        (["simulate", *slow, "-o", good, "--csv", bad], "--csv"),
        (["fabric", "import", "--ibnetdiscover", TOPO, "--lfts", LFTS, "-o", bad], "-o/--output"),
        (["fabric", "export", "--fabric", "nosuch", "--format", "slurm", "-o", bad], "-o/--output"),
        (["permute", "--fabric", "itasca", "--comm", "nosuch:4", "-o", bad], "-o/--output"),
        (["map", "--fabric", "itasca", "--comm", "nosuch:4", "-o", bad], "-o/--output"),
        (["map", "--fabric", "itasca", "--comm", "nosuch:4", "--json", good, "-o", bad], "-o/--output"),
        (["map", "--fabric", "itasca", "--comm", "nosuch:4", "--json", bad], "--json"),
        (["place", "--fabric", "nosuch", "--json", bad], "--json"),
        (["analyze", "/nonexistent/run.jsonl", "-o", bad], "-o/--output"),
        (["analyze", "/nonexistent/run.jsonl", "-o", good, "--csv", bad], "--csv"),
    ]


@pytest.mark.parametrize("kind", ["missing-dir", "a-directory", "unwritable"])
@pytest.mark.parametrize("case", range(11))
def test_bad_output_path_refused_first_in_one_line(tmp_path, capsys, kind, case):
    bad = {"missing-dir": str(tmp_path / "no" / "such" / "out.json"),
           "a-directory": str(tmp_path),
           # /proc takes no new files, even from root (a chmod'ed folder would not stop root)
           "unwritable": "/proc/fabscope-test-out.json"}[kind]
    good = str(tmp_path / "good.json")
    argv, option = _commands(bad, good)[case]
    before = set(os.listdir(tmp_path))
    rc, out, err = _run(argv, capsys)
    assert rc == 1, (argv, err)
    err = err.strip()
    assert err.startswith("fabscope: error: ") and err.count("\n") == 0, err
    assert option in err and bad in err, err
    assert set(os.listdir(tmp_path)) == before            # nothing written, not even the good output
    assert "Traceback" not in out + err


def test_two_outputs_naming_one_file(tmp_path, capsys):
    p = str(tmp_path / "x")
    rc, _, err = _run(["simulate", "--fabric", "fat-tree:k=4,levels=2", "-o", p, "--csv", p], capsys)
    assert rc == 1 and "both write" in err


def test_map_writes_all_outputs_or_none(tmp_path, capsys):
    j, r = tmp_path / "j.json", tmp_path / "ranks.txt"
    rc, _, _ = _run(["map", "--fabric", "itasca", "--nodes", "node[0001-0002]", "--ppn", "8", "--comm", "ring:16",
                     "--json", str(j), "-o", str(r)], capsys)
    assert rc == 0 and j.exists() and r.exists()
    json.loads(j.read_text())


def test_map_to_stdout_keeps_metrics_off_stdout(capsys):
    rc, out, err = _run(["map", "--fabric", "itasca", "--nodes", "node[0001-0002]", "--ppn", "8",
                         "--comm", "ring:16", "--compare", "block", "-o", "-"], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == 16 and all(ln in ("node0001", "node0002") for ln in lines), out
    assert "hop-bytes" in err and "block" in err


_COUNTED = [
    (["simulate", "--fabric", "fat-tree:k=4,levels=2"], ("--ppn", "--ranks")),
    (["fabric", "whatif", "--fabric", "fat-tree:k=4,levels=2", "--fail", "s2-0000"], ("--ppn", "--ranks")),
    (["map", "--fabric", "itasca", "--nodes", "node[0001-0002]", "--comm", "ring:16"], ("--ppn",)),
    (["permute", "--fabric", "itasca", "--nodes", "node[0001-0002]", "--comm", "ring:16"], ("--ppn",)),
    (["place", "--fabric", "itasca", "--nodes", "node[0001-0002]"], ("--ppn",)),
    (["fabric", "import", "--ibnetdiscover", TOPO, "-o", "/nonexistent/x.json"], ("--cores",)),
    (["measure", "--out", "/nonexistent/x.jsonl"], ("--np", "--ppn")),
]


@pytest.mark.parametrize("argv,opt", [(a, o) for a, opts in _COUNTED for o in opts])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_zero_or_negative_counts_refused_by_name(capsys, argv, opt, value):
    rc, _, err = _run(argv + [opt, value], capsys)
    assert rc == 1
    assert err.strip() == f"fabscope: error: {opt} must be >= 1, got {value}"


def test_fabric_example_writes_importable_samples(tmp_path, capsys):
    d = tmp_path / "samples"
    rc, _, err = _run(["fabric", "example", str(d)], capsys)
    assert rc == 0 and "try: fabscope fabric import" in err
    out = tmp_path / "fabric.json"
    rc, _, err = _run(["fabric", "import", "--ibnetdiscover", str(d / "ibnetdiscover.txt"), "--lfts",
                       str(d / "opensm-lfts.dump"), "--hostmap", str(d / "nodes.csv"), "--cores", "8",
                       "-o", str(out)], capsys)
    assert rc == 0 and "16 hosts, 6 switches, 32 cables, with forwarding tables" in err
    rc, _, err = _run(["fabric", "example", str(tmp_path / "no" / "such")], capsys)
    assert rc == 1 and err.count("\n") == 1 and "does not exist" in err
