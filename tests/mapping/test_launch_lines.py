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
