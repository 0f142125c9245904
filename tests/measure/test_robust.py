"""What a user meets in the first hour of `fabscope measure`: oversubscription,
options after the test name, interrupted and timed-out jobs, a rank that dies, the
wait loop under a CPU set, which MPI was used.  Real MPI jobs; every job's processes
carry a marker in their environment, so a test counts its own processes only (other
jobs may run on the machine at the same time)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fabscope.cli import main
from fabscope.errors import MeasureError
from fabscope.measure.parse import read_run
from fabscope.measure.runner import OVERSUBSCRIBE_FACTOR, measure, plan, usable_cpus

pytestmark = pytest.mark.mpi
JOB_NAMES = {"fabscope-bench", "hydra_pmi_proxy", "mpiexec", "mpiexec.hydra", "mpirun", "orted", "prterun", "prted"}
LONG = ["random-pairs", "--size", "65536", "--iterations", "50", "--rounds", "1000000"]


def job_processes(marker: str) -> list[tuple[int, str]]:
    """Live (not zombie) launcher, proxy and rank processes whose environment holds the marker."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                st = fh.read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            state = st[st.rindex(")") + 2]
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if comm in JOB_NAMES and state != "Z" and f"FABSCOPE_TEST_MARK={marker}".encode() in env.split(b"\0"):
            out.append((int(name), comm))
    return out


def fabscope_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "fabscope.cli", *args]


def live(out: Path) -> Path:
    """The file a running job writes: a temporary file beside --out, renamed to it at the end."""
    parts = list(out.parent.glob(f".{out.name}.*.part"))
    assert len(parts) <= 1, parts
    return parts[0] if parts else out


def wait_for_pairs(out: Path, n: int = 5, limit: float = 40) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        f = live(out)
        with contextlib.suppress(FileNotFoundError):
            if f.read_text().count('"type":"pair"') >= n:
                return
        time.sleep(0.05)
    raise AssertionError(f"the job wrote no {n} pairs in {limit} s")


def whole_lines(path: Path) -> list[dict]:
    text = path.read_text()
    assert text.endswith("\n"), "the last line is cut"
    return [json.loads(ln) for ln in text.splitlines()]


@pytest.fixture
def marker(monkeypatch):
    m = uuid.uuid4().hex
    monkeypatch.setenv("FABSCOPE_TEST_MARK", m)
    yield m
    left = job_processes(m)
    for pid, _ in left:  # never leave them to the next test, even when this one failed
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes left behind: {left}"


@pytest.fixture
def spy(tmp_path, mpi, monkeypatch):
    """A launcher that notes every launch in a file, then runs the real one."""
    log = tmp_path / "launches"
    exe = tmp_path / "spy-mpiexec"
    exe.write_text(f'#!/bin/sh\ncase "$1" in --version) ;; *) printf "%s\\n" "$*" >> {log} ;; esac\nexec {mpi.mpiexec} "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FABSCOPE_MPICC", mpi.mpicc)
    monkeypatch.setenv("FABSCOPE_MPIEXEC", str(exe))
    return log


def test_oversubscription_is_refused_before_anything_runs(tmp_path, spy, capsys):
    np = usable_cpus() * OVERSUBSCRIBE_FACTOR + 1
    t0 = time.monotonic()
    assert main(["measure", "--np", str(np), "pingpong", "--out", str(tmp_path / "x.jsonl")]) == 1
    err = capsys.readouterr().err
    assert f"{np} ranks on this host" in err and "--oversubscribe" in err and err.count("\n") == 1
    assert not spy.exists() and not (tmp_path / "x.jsonl").exists()
    assert time.monotonic() - t0 < 30
    # --oversubscribe lets it through the checks (plan() launches nothing)
    p = plan(["pingpong"], np=np, out=tmp_path / "x.jsonl", oversubscribe=True)
    assert p.np == np and not spy.exists()
    # and np within the factor passes without it
    assert plan(["pingpong"], np=usable_cpus() * OVERSUBSCRIBE_FACTOR, out=tmp_path / "x.jsonl").np > 0


def test_own_options_after_the_test_name_and_all_checked_first(tmp_path, spy, capsys, marker):
    out, res = tmp_path / "pp.jsonl", tmp_path / "pp.json"
    assert main(["measure", "--np", "2", "pingpong", "--max-size", "8", "--iterations", "20",
                 "-o", str(res), "--timeout", "60", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert cap.err.startswith("MPI: mpich") and "mpicc " + os.environ["FABSCOPE_MPICC"] in cap.err
    assert "wait loop:" in cap.out
    doc = json.loads(res.read_text())
    mpi = doc["meta"]["mpi"]
    assert mpi["name"] == "mpich" and mpi["mpicc"] == os.environ["FABSCOPE_MPICC"]
    assert len(mpi["wait"]) == 2 and set(mpi["wait"]) <= {"spin", "yield"}
    launches = spy.read_text().count("\n")
    assert launches == 1
    # a single-node run: analyze says why there are no Communication Balance Ratios
    assert main(["analyze", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no Communication Balance Ratios" in text and "inter-node" in text and "intra-node" in text
    # every mistake is caught before a launch, whatever side of TEST it is on
    for args, msg in [(["pingpong", "--size", "1Q"], "size '1Q' does not parse"),
                      (["pingpong", "--window", "0"], "--window: expected an integer >= 1"),
                      (["nosuchtest"], "unknown test 'nosuchtest'"),
                      (["pingpong", "--timeout", "-5"], "--timeout must be positive"),
                      (["pingpong", "-o", str(tmp_path / "no/such/dir/r.json")], "does not exist"),
                      (["pingpong", "--iterations", "0"], "--iterations: expected an integer >= 1"),
                      (["pingpong", "--launcher", "bogus"], "unknown launcher 'bogus'")]:
        assert main(["measure", "--np", "2", *args, "--out", str(tmp_path / "bad.jsonl")]) == 1
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, (args, err)
    assert spy.read_text().count("\n") == launches
    assert not (tmp_path / "bad.jsonl").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_fabscope_ends_the_whole_job(tmp_path, marker, sig):
    out, res = tmp_path / "run.jsonl", tmp_path / "run.json"
    proc = subprocess.Popen(fabscope_argv("measure", "--np", "2", *LONG, "--out", str(out), "-o", str(res)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_pairs(out)
        running = job_processes(marker)
        assert {c for _, c in running} >= {"fabscope-bench"} and len(running) >= 3, running
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert job_processes(marker) == []
    lines = [ln for ln in err.splitlines() if ln.startswith("fabscope:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    if sig == signal.SIGTERM:
        assert "received SIGTERM" in lines[0] and "stopped the job" in lines[0]
    size = out.stat().st_size
    docs = whole_lines(out)
    assert docs[0]["type"] == "header" and any(d["type"] == "pair" for d in docs)
    time.sleep(1.0)
    assert out.stat().st_size == size  # nothing writes to it any more
    assert not res.exists()
    assert read_run(out).complete is False


def test_timeout_leaves_no_process(tmp_path, marker, mpi):
    out = tmp_path / "t.jsonl"
    with pytest.raises(MeasureError, match=r"ran over 2 s and was stopped; ") as err:
        measure(LONG, np=2, out=out, timeout=2, mpi=mpi)
    assert job_processes(marker) == []
    if "keeps what finished" in str(err.value):
        assert any(d["type"] == "pair" for d in whole_lines(out))
    else:   # a loaded machine may finish no pair in 2 s: then nothing is written
        assert "no measurement finished" in str(err.value) and not out.exists()
    assert os.listdir(tmp_path) in (["t.jsonl"], [])


@pytest.mark.parametrize("victim", [1, 3, 0])
def test_a_dead_rank_is_named_right_or_not_at_all(tmp_path, marker, victim):
    """Hydra names the first rank *by index* whose status is bad, often one it stopped itself
    (rank 0 when rank 3 was killed): fabscope names the rank the kernel saw end first, or only the host.

    The test watches the ranks itself as well: on a loaded machine a rank the launcher stopped can be seen
    gone before the killed one (a process ends when all its threads have been scheduled to exit), and
    then the kernel's first is that rank; fabscope must name the victim, the kernel's first, or no rank."""
    from fabscope.measure.processes import ExitOrder

    out = tmp_path / "dead.jsonl"
    proc = subprocess.Popen(fabscope_argv("measure", "--np", "4", *LONG, "--out", str(out)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_pairs(out)
        ranks = next(d for d in whole_lines(live(out)) if d["type"] == "ranks")
        seen = ExitOrder()
        assert seen.watch(list(ranks["pid"]))
        time.sleep(0.3)
        os.kill(ranks["pid"][victim], signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    line = next(ln for ln in err.splitlines() if ln.startswith("fabscope: error:"))
    first = seen.wait(5)
    allowed = {victim} | ({ranks["pid"].index(first[0])} if first and len(first) == 1 else set())
    host = ranks["host"][victim]
    named = any(f"rank {r} on host {host} was killed by signal SIGKILL" in line for r in allowed)
    assert named or f"a rank on host {host} was killed by signal SIGKILL" in line, (err, first)
    for other in set(range(4)) - allowed:
        assert f"rank {other} on host" not in line, (err, first)
    assert job_processes(marker) == []


@pytest.mark.skipif(not shutil.which("taskset"), reason="taskset (util-linux) not installed")
def test_one_cpu_two_ranks_both_yield(tmp_path, marker):
    out = tmp_path / "ts.jsonl"
    busy = os.getloadavg()[0] > 2 * (os.cpu_count() or 1)
    p = subprocess.run(["taskset", "-c", "0", *fabscope_argv("measure", "--np", "2", "pingpong", "--max-size", "8",
                                                             "--iterations", "500", "--out", str(out))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    assert run.ranks["wait"] == ["yield", "yield"]
    assert run.ranks["cpus"] == [1, 1] and run.ranks["host_cpus"] == [1, 1]
    lat = {r["bytes"]: r["latency"] for r in run.of("pingpong", "size")}
    # yielding ranks take turns on the CPU: microseconds on an idle machine (spinning ones take a time
    # slice each, milliseconds); on a machine with more than 2 runnable tasks per CPU every yield also
    # waits for the others, so only the decision is checked there
    if not busy:
        assert lat[8] < 1e-3, f"8 B latency {lat[8] * 1e6:.0f} us: the ranks spin on one CPU"
    assert "wait loop: yield on all 2 ranks (auto: host" in p.stdout and "1 CPU" in p.stdout
    if usable_cpus() >= 2:  # two CPUs for two ranks: both spin, whatever the load average says
        p = subprocess.run(["taskset", "-c", "0,1", *fabscope_argv(
            "measure", "--np", "2", "pingpong", "--max-size", "0", "--iterations", "20", "--out", str(out))],
            capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert read_run(out).ranks["wait"] == ["spin", "spin"]


def test_doctor_lists_candidates_and_says_fabscope_mpicc_pins(mpi, monkeypatch, capsys):
    monkeypatch.setenv("FABSCOPE_MPICC", mpi.mpicc)
    assert main(["doctor", "--no-run"]) == 0
    text = capsys.readouterr().out
    assert "FABSCOPE_MPICC pins it" in text and f"picked       {mpi.mpicc}" in text
    for src in ("FABSCOPE_MPICC", "MPICC", "PATH", "mpich wheel"):
        assert f"  {src} " in text
    assert "affinity" in text and "load average is not used" in text
    monkeypatch.delenv("FABSCOPE_MPICC")
    main(["doctor", "--no-run"])
    assert "set FABSCOPE_MPICC=/path/to/mpicc to pin" in capsys.readouterr().out


# ---- --out written through a temporary file, locked, renamed at the end ----------

def test_out_symlink_refused_before_anything_runs(tmp_path, spy, capsys):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "run.jsonl"
    out.symlink_to(victim)
    assert main(["measure", "--np", "2", "pingpong", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "symbolic link" in err and err.count("\n") == 1
    assert victim.read_text() == "precious\n" and out.is_symlink() and not spy.exists()


def test_a_failed_job_with_no_measurement_leaves_no_file(tmp_path, capsys, marker):
    out = tmp_path / "fabscope-random-pairs.jsonl"
    assert main(["measure", "--np", "1", "random-pairs", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "needs at least 2 ranks" in err
    assert os.listdir(tmp_path) == []


def test_second_measure_to_one_file_is_refused_at_once(tmp_path, marker):
    out = tmp_path / "run.jsonl"
    first = subprocess.Popen(fabscope_argv("measure", "--np", "2", *LONG, "--out", str(out)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_pairs(out, n=1)
        second = subprocess.run(fabscope_argv("measure", "--np", "2", "pingpong", "--out", str(out)),
                                capture_output=True, text=True, timeout=120)
        assert first.poll() is None
        first.send_signal(signal.SIGTERM)
        _, err1 = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 1
    line = [ln for ln in second.stderr.splitlines() if ln.startswith("fabscope:")]
    assert len(line) == 1 and f"another fabscope process {first.pid} is writing it" in line[0], second.stderr
    assert "stopped the job" in err1
    docs = whole_lines(out)                # the first run's lines only, whole
    assert sum(d["type"] == "header" for d in docs) == 1 and not any(d.get("test") == "pingpong" for d in docs)
    assert os.listdir(tmp_path) == ["run.jsonl"]


@pytest.fixture
def small_disk(tmp_path):
    d = tmp_path / "disk"
    d.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    yield d
    subprocess.run(["umount", "-l", str(d)], check=True)


def test_full_disk_is_named_and_only_whole_lines_are_kept(small_disk, marker):
    out = small_disk / "run.jsonl"
    p = subprocess.run(fabscope_argv("measure", "--np", "2", *LONG, "--out", str(out)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("fabscope:")]
    assert len(lines) == 1 and f"--out {out}: No space left on device" in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    assert os.listdir(small_disk) == ["run.jsonl"]          # no temporary file, no lock left
    docs = whole_lines(out)
    assert docs[0]["type"] == "header" and any(d["type"] == "pair" for d in docs)
    assert job_processes(marker) == []


def test_out_honours_the_umask(tmp_path, marker):
    out = tmp_path / "pp.jsonl"
    p = subprocess.run(["sh", "-c", 'umask 077 && exec "$@"', "sh",
                        *fabscope_argv("measure", "--np", "2", "pingpong", "--max-size", "8", "--iterations", "5",
                                       "--out", str(out))], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def _supervisors(marker: str) -> list[int]:
    """Live supervisors of this test's jobs (python -m fabscope.measure.supervise)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"fabscope.measure.supervise" in cmd and state != "Z" and \
                f"FABSCOPE_TEST_MARK={marker}".encode() in env.split(b"\0"):
            out.append(int(name))
    return out


@pytest.mark.parametrize("moment", ["launcher", "ranks", "mid-run"])
def test_sigkill_of_fabscope_leaves_no_process_of_the_job(tmp_path, marker, moment):
    """The job's own sessions do not save it: within 5 s of fabscope's SIGKILL, nothing of it runs."""
    out = tmp_path / "run.jsonl"
    proc = subprocess.Popen(fabscope_argv("measure", "--np", "2", *LONG, "--out", str(out)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = [c for _, c in job_processes(marker)]
            if (moment == "launcher" and names) or (moment == "ranks" and names.count("fabscope-bench") >= 2):
                break
            if moment == "mid-run":
                wait_for_pairs(out, n=5)
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the job never started")
        proc.kill()
        proc.wait(10)
        t0 = time.monotonic()
        while (job_processes(marker) or _supervisors(marker)) and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        left = job_processes(marker)
        assert left == [] and _supervisors(marker) == [], f"{time.monotonic() - t0:.1f} s after SIGKILL: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()


def _python_start_up() -> float:
    """How long this machine takes now to start Python with its site (no fabscope code runs in it)."""
    t0 = time.monotonic()
    for _ in range(3):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.monotonic() - t0) / 3


def test_sigint_during_start_up_is_one_line_and_130(tmp_path, marker):
    """Ctrl-C from fabscope's first line on (imports, parsing, the build, the option check, the launch):
    'fabscope: interrupted', exit 130, no traceback, nothing written, nothing left running."""
    base = _python_start_up()
    out = tmp_path / "r.jsonl"
    # not before fabscope's first line: a SIGINT inside Python's own start-up (runpy, before any module of
    # fabscope runs) prints Python's traceback, which no code of fabscope can catch (seen at 1.5x start-up
    # with a CPU-bound job beside the suite)
    for delay in (max(3 * base, 0.3), 0.6, 1.0, 1.6, "launcher"):
        p = subprocess.Popen(fabscope_argv("measure", "--np", "2", *LONG, "--out", str(out)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if delay == "launcher":
                deadline = time.monotonic() + 60
                while not job_processes(marker) and time.monotonic() < deadline:
                    time.sleep(0.01)
            else:
                time.sleep(delay)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        assert "Traceback" not in err, (delay, err)
        lines = [ln for ln in err.splitlines() if ln.startswith("fabscope:")]
        assert p.returncode == 130 and len(lines) == 1 and lines[0].startswith("fabscope: interrupted"), (delay, err)
        # a job interrupted after a pair finished keeps what finished (whole lines, at least one result):
        # how far a job gets before a given delay depends on the machine's load
        if out.exists():
            import json

            docs = [json.loads(ln) for ln in out.read_text().splitlines()]
            assert any(d.get("type") == "pair" for d in docs), (delay, [d.get("type") for d in docs])
            out.unlink()
        assert job_processes(marker) == []


@pytest.mark.parametrize("form", ["{h}:{n}", "{h} slots={n}", "localhost:{n}"])
def test_host_file_naming_this_host_does_not_bypass_the_oversubscription_check(tmp_path, spy, capsys, form):
    import socket

    np = usable_cpus() * OVERSUBSCRIBE_FACTOR + 1
    hf = tmp_path / "hosts"
    hf.write_text(form.format(h=socket.gethostname(), n=np) + "\n")
    assert main(["measure", "--np", str(np), "--hostfile", str(hf), "pingpong", "--out", str(tmp_path / "x.jsonl")]) == 1
    err = capsys.readouterr().err
    assert f"{np} ranks on this host ({hf} puts them on this host)" in err and "--oversubscribe" in err, err
    assert err.count("\n") == 1 and not spy.exists() and not (tmp_path / "x.jsonl").exists()
    # spread over another host, or with --oversubscribe, it passes the checks (plan() launches nothing)
    hf.write_text(form.format(h=socket.gethostname(), n=2) + "\nother-node:64\n")
    assert plan(["pingpong"], np=np, out=tmp_path / "x.jsonl", hostfile=str(hf)).np == np
    hf.write_text(form.format(h=socket.gethostname(), n=np) + "\n")
    assert plan(["pingpong"], np=np, out=tmp_path / "x.jsonl", hostfile=str(hf), oversubscribe=True).np == np


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_build_leaves_no_temporary_file(tmp_path, mpi, sig):
    """fabscope-bench is built into a temporary file renamed when done: Ctrl-C or SIGTERM mid-build leaves nothing."""
    env = {**os.environ, "FABSCOPE_CACHE": str(tmp_path / "cache"), "FABSCOPE_MPICC": mpi.mpicc}
    code = ("import signal, sys\n"
            "signal.signal(signal.SIGTERM, lambda n, f: sys.exit(143))\n"
            "from fabscope.measure.build import bench_binary\nfrom fabscope.measure.mpi import find_mpi\n"
            "bench_binary(find_mpi(), force=True)\n")
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((tmp_path / "cache").glob("*/.build-*")):
        time.sleep(0.01)
    assert list((tmp_path / "cache").glob("*/.build-*")), "the build never started"
    time.sleep(0.3)                                       # the compiler is running
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode != 0
    assert list((tmp_path / "cache").glob("*/.build-*")) == []
    assert list((tmp_path / "cache").glob("*/fabscope-bench")) == []


def test_the_job_gets_its_own_environment_through_the_supervisor(tmp_path, mpi, monkeypatch):
    """The supervisor finds fabscope by PYTHONPATH; the launcher and ranks get the job's own back."""
    from fabscope.measure.runner import JOB_PYTHONPATH, _supervisor_env, supervised

    seen = tmp_path / "env"
    script = tmp_path / "launcher"
    script.write_text(f'#!/bin/sh\nprintf "%s|%s" "${{PYTHONPATH-unset}}" "${{{JOB_PYTHONPATH}-unset}}" > {seen}\n')
    script.chmod(0o755)
    for job_path, want in ((None, "unset|unset"), ("/x/y", "/x/y|unset")):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if job_path:
            env["PYTHONPATH"] = job_path
        r, w = os.pipe()
        p = subprocess.run(supervised([str(script)], r), env=_supervisor_env(env), pass_fds=(r,), timeout=60)
        os.close(r)
        os.close(w)
        assert p.returncode == 0 and seen.read_text() == want
