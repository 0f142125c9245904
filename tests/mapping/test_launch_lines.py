"""The rankfile launch line follows the Open MPI version: parsing, and the real launcher where installed."""

import shutil
import socket
import subprocess

import pytest

from fabscope.mapping.outputs import detect_openmpi, launch_command, openmpi_version

# version outputs as the tools print them (first lines)
OMPI4_INFO = "Open MPI v4.1.4\n\nhttp://www.open-mpi.org/community/help/\n"
OMPI4_MPIRUN = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OMPI4_DEBIAN = "mpirun.openmpi (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OMPI5_INFO = "Open MPI v5.0.3\n\nhttps://www.open-mpi.org/community/help/\n"
OMPI5_MPIRUN = "mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
HYDRA = "HYDRA build details:\n    Version:                                 4.1.2\n    Release Date:       Wed Jun  7 2023\n"
PRTE = "prterun (PMIx Reference RunTime Environment) 3.0.5\n"


@pytest.mark.parametrize("text, version", [(OMPI4_INFO, (4, 1, 4)), (OMPI4_MPIRUN, (4, 1, 4)), (OMPI4_DEBIAN, (4, 1, 4)),
                                           (OMPI5_INFO, (5, 0, 3)), (OMPI5_MPIRUN, (5, 0, 3)),
                                           (HYDRA, None), (PRTE, None), ("", None)])
def test_version_parsing(text, version):
    assert openmpi_version(text) == version


def test_rankfile_option_per_version():
    assert launch_command("rankfile", "F", 4, (4, 1, 4)) == "mpirun --rankfile F -np 4 ./a.out"
    assert launch_command("rankfile", "F", 4, (3, 1, 6)) == "mpirun --rankfile F -np 4 ./a.out"
    assert launch_command("rankfile", "F", 4, (5, 0, 3)) == "mpirun --map-by rankfile:file=F -np 4 ./a.out"
    both = launch_command("rankfile", "F", 4, None)
    assert "--map-by rankfile:file=F" in both and "--rankfile F" in both


def _openmpi_launcher():
    for name in ("mpirun.openmpi", "mpirun"):
        exe = shutil.which(name)
        if exe:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
            v = openmpi_version(out.stdout + out.stderr)
            if v is not None:
                return exe, v
    return None, None


def test_detection_matches_the_installed_tools():
    # whatever is on PATH here (Open MPI's ompi_info, MPICH's mpirun, nothing), detection agrees with it
    got = detect_openmpi()
    info, run = shutil.which("ompi_info"), shutil.which("mpirun")
    from_info = openmpi_version(subprocess.run([info, "--version"], capture_output=True, text=True).stdout) \
        if info else None
    if from_info is not None:
        assert got == from_info
    elif run is not None:
        out = subprocess.run([run, "--version"], capture_output=True, text=True, timeout=30)
        assert got == openmpi_version(out.stdout + out.stderr)
    else:
        assert got is None


def test_the_printed_line_is_what_the_installed_open_mpi_accepts(tmp_path):
    exe, v = _openmpi_launcher()
    if exe is None:
        pytest.skip("no Open MPI launcher (Debian: openmpi-bin) on this machine")
    host = socket.gethostname()
    rf = tmp_path / "ranks.txt"
    rf.write_text(f"rank 0={host} slot=0\nrank 1={host} slot=0\n")
    line = launch_command("rankfile", str(rf), 2, v).split()
    assert line[0] == "mpirun"
    cmd = [exe, "--allow-run-as-root", "--oversubscribe"] + line[1:-1] + ["true"]
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    if v[0] < 5:
        # and the Open MPI 5 form is what version 4 refuses
        bad = subprocess.run([exe, "--allow-run-as-root", "--oversubscribe", "--map-by", f"rankfile:file={rf}",
                              "-np", "2", "true"], capture_output=True, text=True, timeout=120)
        assert "unrecognized modifier" in bad.stdout + bad.stderr


def test_line_per_mpi_and_format():
    assert launch_command("hostfile", "F", 4, mpi="mpich") == "mpiexec -f F -n 4 ./a.out"
    assert launch_command("machinefile", "F", 4, mpi="mpich") == "mpiexec -f F -n 4 ./a.out"
    assert launch_command("hostfile", "F", 4, mpi="openmpi") == "mpirun --map-by seq --hostfile F -np 4 ./a.out"
    assert launch_command("rankfile", "F", 4, (5, 0, 3), mpi="openmpi") == "mpirun --map-by rankfile:file=F -np 4 ./a.out"
    # Hydra reads no rank file: the Open MPI line, and what to write for MPICH
    assert "write --format machinefile and run mpiexec -f F -n 4 ./a.out" in launch_command("rankfile", "F", 4,
                                                                                              mpi="mpich")
    assert "for the Open MPI found, write --format hostfile" in launch_command("machinefile", "F", 4, mpi="openmpi")
    for fmt in ("hostfile", "rankfile", "machinefile", "slurm", "map"):
        assert launch_command(fmt, "F", 4, mpi="mpich", testbed="tb1") == "fabscope testbed run tb1 --placement F -- ./a.out"


@pytest.mark.parametrize("mpicc, fmt, want", [
    ("/usr/bin/mpicc.mpich", "hostfile", "mpiexec -f {F} -n 16 ./a.out"),
    ("/usr/bin/mpicc.mpich", "machinefile", "mpiexec -f {F} -n 16 ./a.out"),
    ("/usr/bin/mpicc.openmpi", "hostfile", "mpirun --map-by seq --hostfile {F} -np 16 ./a.out"),
])
def test_map_prints_the_line_of_the_mpi_found(tmp_path, capsys, monkeypatch, mpicc, fmt, want):
    """`map -o` under each MPI installed here (Debian's MPICH and Open MPI, pinned by $FABSCOPE_MPICC); the line
    printed is run with that MPI's own launcher, on this host, and puts the ranks in the file's order."""
    import os

    from fabscope.cli import main
    from fabscope.measure.mpi import find_mpi

    if not os.access(mpicc, os.X_OK):
        pytest.skip(f"no {mpicc} (Debian's mpich / openmpi-bin)")
    monkeypatch.setenv("FABSCOPE_MPICC", mpicc)
    monkeypatch.delenv("FABSCOPE_MPIEXEC", raising=False)
    out_file = tmp_path / "hosts.txt"
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--nodes", "h[0000-0015]", "--ppn", "1",
                 "--comm", "ring:16", "--format", fmt, "-o", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert f"launch: {want.format(F=out_file)}" in out
    # the same options with this host's name in the file: the real launcher accepts them
    host = socket.gethostname()
    local = tmp_path / "local.txt"
    local.write_text(f"{host}\n{host}\n" if fmt == "hostfile" else f"{host}:2\n")
    words = want.format(F=local).replace("16", "2").split()
    exe = find_mpi().mpiexec
    extra = ["--allow-run-as-root", "--oversubscribe"] if "openmpi" in mpicc else []
    p = subprocess.run([exe, *extra, *words[1:-1], "hostname"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.split() == [host, host], p.stdout + p.stderr
