"""Up, down and status on real namespaces: idempotence, clean-up after a crash, bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from fabscope.cli import main
from fabscope.testbed import names, state, system
from fabscope.testbed.launch import write_launcher
from fabscope.testbed.lifecycle import down, existing, launcher_path, status, up
from fabscope.testbed.names import TestbedError

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed]

SMALL = "fat-tree:k=2,levels=2"


def nothing_of(name: str) -> bool:
    return not any(names.owns_netns(name, n) for n in system.list_netns()) and \
        not any(names.owns_link(name, x) for x in system.list_links())


def test_up_is_idempotent_and_down_removes_everything(capsys):
    try:
        st = up("ci3", SMALL, 1e6)
        assert len(existing("ci3")[0].netns) == 8 and names.bridge("ci3") in existing("ci3")[0].links
        assert up("ci3", SMALL, 1e6).mgmt_subnet == st.mgmt_subnet           # same testbed, left as it is
        # what the machine forwarded at up is recorded, and the probe's namespaces are gone
        assert st.calibration["forwarding"] > 1e6 and state.load("ci3").calibration == st.calibration
        with pytest.raises(TestbedError, match="take it down first"):
            up("ci3", SMALL, 2e6)
        row = status("ci3")[0]
        assert row["hosts"] == 4 and row["whole"]
        assert main(["testbed", "status", "ci3"]) == 0
        assert "4 hosts, 4 switches, 8 cables" in capsys.readouterr().out
        # each host has its own host name when a launcher enters it, as MPI will see it
        out = subprocess.run([str(write_launcher("ci3")), "-x", "fstb-ci3-h2", "hostname; ip -br addr show fab0"],
                             capture_output=True, text=True, timeout=30).stdout
        assert out.splitlines()[0] == "fstb-ci3-h2" and "10.200.0.3/32" in out
        # bad links and names: one line, nothing changed
        assert main(["testbed", "degrade", "ci3", "s1-0000[99]", "--rate", "1Mbit"]) == 1
        assert main(["testbed", "cut", "ci3", "nosuch[1]"]) == 1
        assert main(["testbed", "degrade", "ci9", "s1-0000[1]", "--rate", "1Mbit"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 3 and all(e.startswith("fabscope: error:") for e in err), err
        assert "no cable on port 99" in err[0] and "no node 'nosuch'" in err[1] and "no testbed 'ci9'" in err[2]
        assert state.load("ci3").degraded == {} and state.load("ci3").cut == []
        assert launcher_path("ci3").exists()
    finally:
        down("ci3")
    assert nothing_of("ci3") and not state.state_path("ci3").exists() and not launcher_path("ci3").exists()


def test_down_after_sigkill_of_up_halfway():
    """A SIGKILL of up while it writes its batch files: down finds the namespaces by name and removes
    the batch folder too."""
    from fabscope.testbed.lifecycle import batch_dir

    env = {**os.environ, "FABSCOPE_TESTBED_CORE_RATE": "1e12"}
    p = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "testbed", "up", "--name", "cikill",
                          "--fabric", "fat-tree:k=8,levels=2", "--rate", "1Mbit", "--no-calibrate"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(batch_dir("cikill").glob("ip*")):
            time.sleep(0.01)
    finally:
        os.killpg(p.pid, signal.SIGKILL)      # up and its ip children, halfway
        p.wait()
    assert not state.state_path("cikill").exists(), "up finished before the kill; the test needs it halfway"
    assert existing("cikill") and existing("cikill")[0].netns        # leftovers, found by name
    assert batch_dir("cikill").is_dir()
    down("cikill")
    assert nothing_of("cikill") and not batch_dir("cikill").exists()


def test_a_rate_this_machine_cannot_forward_now_is_refused(monkeypatch, capsys):
    """Past the fixed budget (overridden), the calibration at up refuses 10 Gbit with the rate that fits;
    --rate auto picks one that fits."""
    monkeypatch.setenv("FABSCOPE_TESTBED_CORE_RATE", "1e15")
    assert main(["testbed", "up", "--name", "ci9", "--fabric", SMALL, "--rate", "10Gbit"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "this machine forwards about" in err[0] and "lower --rate to at most" in err[0], err
    assert nothing_of("ci9") and not state.state_path("ci9").exists()
    try:
        assert main(["testbed", "up", "--name", "ci9", "--fabric", SMALL, "--rate", "auto"]) == 0
        st = state.load("ci9")
        assert 1e6 / 8 <= st.rate <= 100e6 / 8 and st.calibration["rate"] == st.rate
    finally:
        down("ci9")


def test_down_without_state_file_and_with_a_process_inside():
    up("cilost", SMALL, 1e6)
    inside = subprocess.Popen(["ip", "netns", "exec", "fstb-cilost-h1", "sleep", "300"])
    try:
        state.state_path("cilost").unlink()
        row = status("cilost")[0]
        assert not row["state"] and row["netns"] == 8
        assert main(["testbed", "down", "cilost"]) == 0
        assert nothing_of("cilost")
        assert inside.wait(timeout=10) == -signal.SIGKILL      # no process outlives its testbed
    finally:
        if inside.poll() is None:
            inside.kill()


@pytest.mark.mpi
def test_sigkill_of_measure_leaves_no_mpiexec_after_down(work):
    """measure --testbed SIGKILLed while its job runs: its mpiexec (in this namespace) outlives it, and
    down ends it with the testbed."""
    from fabscope.testbed.lifecycle import launcher_path

    up("cilost", SMALL, 1e6, calibrate=False)
    try:
        p = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "measure", "--testbed", "cilost", "random-pairs",
                              "--size", "4MiB", "--iterations", "50", "--out", str(work / "k.jsonl")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not launchers("cilost"):
            time.sleep(0.1)
        assert launchers("cilost"), "the job never started"
        time.sleep(1)
        p.kill()                               # fabscope only: its mpiexec stays behind
        p.wait()
        assert launchers("cilost")
    finally:
        down("cilost")
    assert not launchers("cilost") and not launcher_path("cilost").exists()


def launchers(name: str) -> list[int]:
    """Processes of this machine whose command line names testbed ``name``'s launcher script."""
    from pathlib import Path

    from fabscope.testbed.lifecycle import launcher_path

    mark = str(launcher_path(name)).encode()
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and mark in (d / "cmdline").read_bytes().split(b"\0"):
                out.append(int(d.name))
        except OSError:
            pass
    return out


def test_measure_without_testbed_is_one_line(work, capsys):
    rc = main(["measure", "--testbed", "ci9", "pingpong", "--out", str(work / "x.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "no testbed 'ci9' is up" in err[0], err
    assert not list(work.iterdir())


@pytest.mark.skipif(system.which("setpriv") is None, reason="needs setpriv (util-linux) to drop root")
def test_without_root_one_line_with_the_reason(tmp_path):
    """As an unprivileged user: refused with the reason, nothing made."""
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                        "fabscope.cli", "testbed", "up", "--name", "ci9", "--fabric", SMALL],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    if "Permission denied" in p.stderr or "No module named" in p.stderr:
        pytest.skip("this checkout is not readable by an unprivileged user")
    assert p.returncode == 1 and p.stderr.strip() == \
        "fabscope: error: testbeds need root (network namespaces, veth cables and tc shapers): run with sudo"
    assert nothing_of("ci9")
