"""``fabscope testbed run``: a real MPI program (built here with the MPI found) on a 4-host testbed.

Output passes through, each rank runs on the host asked (it prints ``MPI_Get_processor_name``, which
is its namespace's name), the exit status is the program's (128 + N for a rank killed by signal N),
and SIGTERM or ``--timeout`` leave no process in any of the testbed's namespaces (``ip netns pids``).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from fabscope.testbed import system

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed,
              pytest.mark.mpi]

NAME = "ap1"
HOSTS = [f"fstb-{NAME}-h{i}" for i in range(4)]

PROGRAM = r"""
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* argv: [exit R N | kill R N | sleep S] */
int main(int argc, char **argv) {
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("rank %d of %d on %s\n", rank, size, host);
    fprintf(stderr, "stderr of rank %d\n", rank);
    fflush(stdout);
    fflush(stderr);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 3 && atoi(argv[2]) == rank && !strcmp(argv[1], "exit")) exit(atoi(argv[3]));
    if (argc > 3 && atoi(argv[2]) == rank && !strcmp(argv[1], "kill")) raise(atoi(argv[3]));
    if (argc > 2 && !strcmp(argv[1], "sleep")) sleep(atoi(argv[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def testbed():
    from fabscope.testbed.lifecycle import down, up
    from fabscope.testbed.names import parse_rate

    up(NAME, "fat-tree:k=2,levels=2", parse_rate("40Mbit"), calibrate=False)
    try:
        yield NAME
    finally:
        down(NAME)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    from fabscope.measure.mpi import find_mpi

    d = tmp_path_factory.mktemp("prog")
    (d / "where.c").write_text(PROGRAM)
    subprocess.run([find_mpi().mpicc, str(d / "where.c"), "-o", str(d / "where")], check=True)
    return str(d / "where")


def fabscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabscope.cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def placed(stdout: str) -> dict[int, str]:
    return {int(r): h for r, h in re.findall(r"^rank (\d+) of \d+ on (\S+)$", stdout, re.M)}


def leftovers() -> dict[str, list[str]]:
    out = {}
    for ns in HOSTS:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        if pids:
            out[ns] = pids
    return out


def test_output_passes_and_ranks_go_where_asked(testbed, program, tmp_path):
    p = fabscope("testbed", "run", testbed, "--", program)
    assert p.returncode == 0, p.stderr
    assert placed(p.stdout) == {r: HOSTS[r] for r in range(4)}
    assert sorted(re.findall(r"stderr of rank \d", p.stderr)) == [f"stderr of rank {r}" for r in range(4)]
    # a rank file as `fabscope map` writes it, hosts named as on the testbed or as in the fabric it was built from
    rf = tmp_path / "ranks.txt"
    rf.write_text(f"rank 0={HOSTS[3]} slot=0\nrank 1=h0002 slot=0\nrank 2={HOSTS[0]} slot=0\nrank 3={HOSTS[3]} slot=1\n"
                  f"rank 4={HOSTS[2]} slot=1\n")
    p = fabscope("testbed", "run", testbed, "--placement", str(rf), "--", program)
    assert p.returncode == 0, p.stderr
    assert placed(p.stdout) == {0: HOSTS[3], 1: HOSTS[2], 2: HOSTS[0], 3: HOSTS[3], 4: HOSTS[2]}
    hf = tmp_path / "hosts.txt"
    hf.write_text(f"{HOSTS[1]}:2\n{HOSTS[0]}\n")
    p = fabscope("testbed", "run", testbed, "--hostfile", str(hf), "--", program)
    assert placed(p.stdout) == {0: HOSTS[1], 1: HOSTS[1], 2: HOSTS[0]}, p.stderr
    p = fabscope("testbed", "run", testbed, "--np", "2", "--", program)          # the first ranks of the default
    assert placed(p.stdout) == {0: HOSTS[0], 1: HOSTS[1]}, p.stderr
    p = fabscope("testbed", "run", testbed, "--np", "5", "--", program)
    assert p.returncode == 1 and p.stderr.strip() == f"fabscope: error: --np 5, but testbed {NAME} places 4 ranks"


def test_exit_status_of_a_rank(testbed, program):
    p = fabscope("testbed", "run", testbed, "--timeout", "60", "--", program, "exit", "2", "3")
    assert p.returncode == 3, p.stderr
    assert f"rank 2 of where on {HOSTS[2]} exited with status 3" in p.stderr
    p = fabscope("testbed", "run", testbed, "--timeout", "60", "--", program, "kill", "1", str(int(signal.SIGKILL)))
    assert p.returncode == 128 + signal.SIGKILL, p.stderr
    assert f"rank 1 of where on {HOSTS[1]} was killed by signal 9" in p.stderr
    assert not leftovers()


def test_host_not_on_the_testbed_is_refused_before_anything_starts(testbed, program, tmp_path):
    hf = tmp_path / "hosts.txt"
    hf.write_text(f"{HOSTS[0]}\nnode7\n")
    p = fabscope("testbed", "run", testbed, "--hostfile", str(hf), "--", program)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [f"fabscope: error: --hostfile {hf}: testbed {NAME} has no host 'node7' "
                                             f"(its hosts are {HOSTS[0]} .. {HOSTS[-1]})"]
    assert p.stdout == ""


def test_timeout_stops_every_rank(testbed, program):
    t0 = time.monotonic()
    p = fabscope("testbed", "run", testbed, "--timeout", "3", "--", program, "sleep", "60")
    assert p.returncode == 124, p.stderr
    assert time.monotonic() - t0 < 30
    assert "ran over 3 s; stopped every rank (exit 124)" in p.stderr
    assert not leftovers()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_every_rank(testbed, program, sig):
    proc = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "testbed", "run", testbed, "--", program,
                             "sleep", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(leftovers()) < 4 and time.monotonic() < deadline:   # every host runs its rank
        time.sleep(0.2)
    assert len(leftovers()) == 4
    time.sleep(1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
    assert not leftovers()
    assert placed(out) == {r: HOSTS[r] for r in range(4)}


def test_map_on_a_testbed_and_its_launch_line(testbed, program, tmp_path):
    """`map --fabric NAME` without --nodes maps onto the testbed's hosts, and prints the `testbed run` line;
    that line, run, puts every rank where the file says; Hydra's `-f` line of MPICH puts them there too."""
    from fabscope.measure.mpi import find_mpi
    from fabscope.testbed.launch import hydra_args

    for fmt in ("rankfile", "hostfile", "map"):
        f = tmp_path / f"ranks.{fmt}"
        p = fabscope("map", "--fabric", testbed, "--comm", "ring:4", "--algorithm", "random", "--seed", "3",
                     "--format", fmt, "-o", str(f))
        assert p.returncode == 0, p.stderr
        assert f"4 ranks on 4 nodes of testbed {NAME} as built" in p.stdout
        line = f"launch: fabscope testbed run {NAME} --placement {f} -- ./a.out"
        assert line in p.stdout, p.stdout
        want = {r: h for r, h in enumerate(f.read_text().split()[::1] if fmt == "hostfile" else
                                           re.findall(r"^rank \d+=(\S+)", f.read_text(), re.M) if fmt == "rankfile"
                                           else re.findall(r"^\d+ (\S+) ", f.read_text(), re.M))}
        assert sorted(want.values()) == HOSTS and list(want.values()) != HOSTS   # a permutation, not the default
        run = fabscope("testbed", "run", testbed, "--placement", str(f), "--", program)
        assert run.returncode == 0, run.stderr
        assert placed(run.stdout) == want
    # with --nodes too the line is the testbed's; and the file under Hydra's -f (the MPICH found) with the testbed's
    # launcher options places the ranks as the file says
    p = fabscope("map", "--fabric", testbed, "--nodes", str(tmp_path / "ranks.hostfile"), "--comm", "ring:4",
                 "--format", "hostfile", "-o", str(tmp_path / "h.txt"))
    assert f"launch: fabscope testbed run {NAME} --placement {tmp_path / 'h.txt'}" in p.stdout
    mpi = find_mpi()
    assert mpi.vendor == "mpich"
    h = tmp_path / "ranks.hostfile"
    hydra = subprocess.run([mpi.mpiexec, "-f", str(h), "-n", "4", *hydra_args(NAME), program], capture_output=True,
                           text=True, timeout=120)
    assert placed(hydra.stdout) == dict(enumerate(h.read_text().split())), hydra.stdout + hydra.stderr
