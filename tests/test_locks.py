"""Output locks and temporary files: a lock name made in advance as a hard link is refused, not
written into; what a killed writer left (its lock, its temporary files) is removed by the next writer;
SIGTERM ends a long command as Ctrl-C does (exit 143, nothing left beside its outputs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fabscope.cli import main

EXPORT = ["fabric", "export", "--fabric", "fat-tree:k=2,levels=2", "--format", "json", "-o"]


def test_a_lock_name_that_is_a_hard_link_is_refused(tmp_path, capsys):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    os.link(victim, tmp_path / ".out.json.fabscope-lock")
    rc = main(EXPORT + [str(tmp_path / "out.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "2 links" in err and "remove it" in err, err
    assert victim.read_text() == "keep me\n" and not (tmp_path / "out.json").exists()


def test_the_next_writer_removes_what_a_dead_one_left(tmp_path, capsys):
    left = [".out.json.k3j_9xq0.fabscope-tmp", ".out.json.abcdefgh.part", ".out.json.fabscope-lock"]
    others = [".out.json.b.abcdefgh.fabscope-tmp", ".other.json.abcdefgh.fabscope-tmp", "notes.part"]
    for n in left + others:
        (tmp_path / n).write_text("1234\n")
    assert main(EXPORT + [str(tmp_path / "out.json")]) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(others + ["out.json"])


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_sigkill_then_the_next_run_cleans_up(tmp_path):
    """A writer killed (SIGKILL) inside atomic_open leaves its lock and temporary file; the next writer of
    the same output takes the lock and removes them."""
    out = tmp_path / "out.txt"
    code = ("import sys, time\nfrom fabscope.atomic import atomic_open\n"
            f"with atomic_open({str(out)!r}) as fh:\n    fh.write('half'); fh.flush(); print('writing', flush=True)"
            "\n    time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline().strip() == "writing"
    p.kill()
    p.wait()
    stale = sorted(os.listdir(tmp_path))
    assert any(n.endswith(".fabscope-tmp") for n in stale) and ".out.txt.fabscope-lock" in stale, stale
    assert main(EXPORT + [str(out)]) == 0
    assert os.listdir(tmp_path) == ["out.txt"]


def test_sigterm_of_simulate_is_143_and_leaves_nothing(tmp_path):
    out = tmp_path / "sim.json"
    p = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "simulate", "--dynamic", "--fabric",
                          "fat-tree:k=8,levels=3", "--iterations", "100000", "-o", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    for _ in range(600):       # until the output is locked: the command has started its work
        if (tmp_path / ".sim.json.fabscope-lock").exists() or p.poll() is not None:
            break
        time.sleep(0.05)
    assert p.poll() is None
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143 and err.strip().splitlines()[-1] == "fabscope: terminated", (p.returncode, err)
    assert os.listdir(tmp_path) == []
