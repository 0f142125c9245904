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


# ---- links, inputs, full disks, concurrent writers -------------------------------

def test_symlink_output_is_refused_and_its_target_untouched(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "topology.conf"
    link.symlink_to(victim)
    rc, _, err = _run(["fabric", "export", "--fabric", "fat-tree:k=4,levels=2", "--format", "slurm",
                       "-o", str(link)], capsys)
    assert rc == 1 and err.count("\n") == 1 and "is a symbolic link" in err and str(link) in err, err
    assert victim.read_text() == "precious\n" and link.is_symlink()
    # the library's writer refuses it too (a link made after the CLI's check)
    from fabscope.errors import OutputError

    with pytest.raises(OutputError, match="symbolic link"):
        with atomic_open(link) as fh:
            fh.write("x")
    assert victim.read_text() == "precious\n" and sorted(os.listdir(tmp_path)) == ["topology.conf", "victim.txt"]


def _same_input_cases(tmp_path):
    topo = tmp_path / "topo.txt"
    topo.write_text(open(TOPO).read())
    rp = tmp_path / "rp.jsonl"
    rp.write_text('{"type":"header"}\n')
    sim = tmp_path / "sim.json"
    sim.write_text("{}\n")
    fab = tmp_path / "f.json"
    assert main(["fabric", "export", "--fabric", "fat-tree:k=2,levels=2", "--format", "json", "-o", str(fab)]) == 0
    x = tmp_path / "x.html"
    return [
        (["analyze", "rp.jsonl", "-o", "./rp.jsonl"], rp),
        (["analyze", str(rp), "--csv", str(rp)], rp),
        (["report", "sim.json", "-o", str(sim)], sim),
        (["fabric", "import", "--ibnetdiscover", str(topo), "-o", "./topo.txt"], topo),
        (["fabric", "export", "--fabric", "f.json", "--format", "json", "-o", str(fab)], fab),
        (["simulate", "--fabric", str(fab), "-o", "x.html", "--report", str(x)], None),
        (["simulate", "--fabric", "f.json", "-o", str(fab)], fab),
        (["compare", "rp.jsonl", "--fabric", "f.json", "-o", str(rp)], rp),
        (["diagnose", "rp.jsonl", "--fabric", "f.json", "-o", "rp.jsonl"], rp),
    ]


@pytest.mark.parametrize("case", range(9))
def test_output_that_is_an_input_is_refused_first(tmp_path, capsys, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    argv, victim = _same_input_cases(tmp_path)[case]
    capsys.readouterr()
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    rc, out, err = _run(argv, capsys)
    assert rc == 1, (argv, err)
    line = err.strip()
    assert line.startswith("fabscope: error: ") and "\n" not in line, line
    assert ("is also an input" in line) if victim else ("both write" in line), line
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before   # nothing written, the input intact


def test_hard_link_to_an_input_is_the_same_file(tmp_path, capsys):
    rp = tmp_path / "rp.jsonl"
    rp.write_text('{"type":"header"}\n')
    os.link(rp, tmp_path / "other.jsonl")
    rc, _, err = _run(["analyze", str(rp), "-o", str(tmp_path / "other.jsonl")], capsys)
    assert rc == 1 and "is also an input" in err


@pytest.fixture
def small_disk(tmp_path):
    """A 64 kB tmpfs (root only): a disk that fills."""
    import shutil
    import subprocess

    d = tmp_path / "disk"
    d.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_full_disk_is_named_and_nothing_is_left(small_disk, capsys):
    out = small_disk / "itasca.json"
    rc, _, err = _run(["fabric", "export", "--fabric", "itasca", "--format", "json", "-o", str(out)], capsys)
    assert rc == 1
    line = err.strip()
    assert line.count("\n") == 0 and str(out) in line and "No space left on device" in line, line
    assert os.listdir(small_disk) == []


def test_second_writer_of_one_output_is_refused(tmp_path, capsys):
    import subprocess

    from fabscope.atomic import output_lock

    out = tmp_path / "f.json"
    with output_lock(out):
        p = subprocess.run([sys.executable, "-m", "fabscope.cli", "fabric", "export", "--fabric", "fat-tree:k=4,levels=2",
                            "--format", "json", "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert f"another fabscope process {os.getpid()} is writing it" in p.stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == []                     # the lock file goes with the lock
    assert main(["fabric", "export", "--fabric", "fat-tree:k=4,levels=2", "--format", "json", "-o", str(out)]) == 0


def test_plan_json_gets_the_json_and_the_script_goes_beside(tmp_path, capsys):
    rc, out, err = _run(["diagnose", "--plan", "--fabric", "fat-tree:k=4,levels=2", "-o", str(tmp_path / "plan.json")],
                        capsys)
    assert rc == 0, err
    assert json.loads((tmp_path / "plan.json").read_text())["jobs"] >= 1
    assert (tmp_path / "plan.sh").read_text().startswith("#!/bin/sh")
    assert sorted(os.listdir(tmp_path)) == ["plan.json", "plan.sh"]


@pytest.mark.parametrize("kind", ["a-file", "missing-parent", "unwritable"])
def test_report_images_folder_refused_first(tmp_path, capsys, kind):
    pytest.importorskip("plotly")
    sim = tmp_path / "sim.json"
    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "-o", str(sim)]) == 0
    (tmp_path / "file.png").write_text("x")
    images = {"a-file": str(tmp_path / "file.png"), "missing-parent": str(tmp_path / "no" / "pics"),
              "unwritable": "/proc/fabscope-pics"}[kind]
    capsys.readouterr()
    before = sorted(os.listdir(tmp_path))
    rc, out, err = _run(["report", str(sim), "-o", str(tmp_path / "r.html"), "--images", images], capsys)
    assert rc == 1
    line = err.strip()
    assert line.startswith("fabscope: error: --images") and "\n" not in line and images in line, line
    assert sorted(os.listdir(tmp_path)) == before and (tmp_path / "file.png").read_text() == "x"


def test_report_images_into_a_new_folder(tmp_path, capsys, monkeypatch):
    """A new folder (written 'figs/' too) in a folder that exists passes the checks."""
    from fabscope.cli.report import check_images

    monkeypatch.chdir(tmp_path)
    for name in ("figs/", "figs", str(tmp_path / "figs") + "/"):
        check_images(name)
    assert os.listdir(tmp_path) == []


def test_long_output_name_gets_a_lock_too(tmp_path):
    p = tmp_path / ("x" * 250)
    with atomic_open(p) as fh:
        fh.write("ok\n")
    assert p.read_text() == "ok\n" and os.listdir(tmp_path) == [p.name]


def test_a_command_holds_its_outputs_from_the_check_to_the_end(tmp_path):
    """Two long commands to one output: the second is refused at its start, not silently replaced later."""
    import subprocess
    import time

    out = tmp_path / "sim.json"
    slow = [sys.executable, "-m", "fabscope.cli", "simulate", "--fabric", "itasca", "--pattern", "all-to-all",
            "--ranks", "2048", "-o", str(out)]
    first = subprocess.Popen(slow, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lock = tmp_path / ".sim.json.fabscope-lock"
        deadline = time.monotonic() + 60
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock.exists() and first.poll() is None
        second = subprocess.run(slow, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1 and second.stderr.count("\n") == 1
        assert f"-o/--output {out}: another fabscope process {first.pid} is writing it" in second.stderr
    finally:
        first.kill()
        first.wait()
