"""The rankfile launch line follows the Open MPI version: parsing, and the real launcher where installed."""

import os
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
    assert "for Open MPI, write --format hostfile" in launch_command("machinefile", "F", 4, mpi="openmpi")
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


# ---- the line of the program's own MPI: `map -o --program P` / `--mpi WORD` ----------------------------------

#: prints its rank, the world's size and its host: one world of N ranks, not N singletons
RANKS = r"""#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int c, char **v) {
    int r, n; char h[256];
    MPI_Init(&c, &v); MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    gethostname(h, sizeof h); printf("rank %d of %d on %s\n", r, n, h); fflush(stdout);
    MPI_Finalize(); return 0;
}
"""
#: per family: the compiler that builds a program of it, and the MPI that `map` would find without --program
#: (the other family, pinned with $FABSCOPE_MPICC: the line must follow the program, not the MPI found)
FAMILIES = {"openmpi": ("mpicc.openmpi", "/usr/bin/mpicc.mpich"), "mpich": ("mpicc.mpich", "/usr/bin/mpicc.openmpi")}


def _program(tmp_path, family):
    cc = shutil.which(FAMILIES[family][0])
    if cc is None:
        pytest.skip(f"no {FAMILIES[family][0]} (Debian's openmpi-bin / mpich)")
    (tmp_path / "ranks.c").write_text(RANKS)
    prog = tmp_path / f"ranks-{family}"
    subprocess.run([cc, str(tmp_path / "ranks.c"), "-o", str(prog)], check=True, capture_output=True)
    return str(prog)


def _map_line(tmp_path, capsys, monkeypatch, fmt, *extra):
    from fabscope.cli import main

    out_file = tmp_path / f"placed-{fmt}.txt"
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--nodes", "h[0000-0015]", "--ppn", "1",
                 "--comm", "ring:16", "--format", fmt, "-o", str(out_file), *extra]) == 0
    out = capsys.readouterr().out
    return out_file, out.split("; launch: ", 1)[1].rstrip("\n")


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_map_prints_the_line_of_the_programs_mpi(tmp_path, capsys, monkeypatch, family):
    """The program's MPI read from its ELF dependencies decides the line, whatever MPI `map` finds; the line
    printed for a host file, run on this host, starts one world of 2 ranks in the file's order."""
    prog = _program(tmp_path, family)
    other = FAMILIES[family][1]
    if os.access(other, os.X_OK):
        monkeypatch.setenv("FABSCOPE_MPICC", other)       # the MPI found is the other family's
        monkeypatch.delenv("FABSCOPE_MPIEXEC", raising=False)
    want = {"openmpi": {"hostfile": "mpirun --map-by seq --hostfile {F} -np 16 {P}",
                        "slurm": "SLURM_HOSTFILE={F} srun --mpi=pmix --distribution=arbitrary -n 16 {P}"},
            "mpich": {"hostfile": "mpiexec -f {F} -n 16 {P}", "machinefile": "mpiexec -f {F} -n 16 {P}",
                      "slurm": "SLURM_HOSTFILE={F} srun --mpi=pmi2 --distribution=arbitrary -n 16 {P}"}}[family]
    for fmt, line in want.items():
        f, got = _map_line(tmp_path, capsys, monkeypatch, fmt, "--program", prog)
        assert got == line.format(F=f, P=prog)
    # the host file's line, with this host in the file and 2 ranks, run by the family's own launcher
    from fabscope.measure.mpi import family_launcher, program_mpi

    host = socket.gethostname()
    local = tmp_path / "local.txt"
    local.write_text(f"{host}\n{host}\n")
    words = want["hostfile"].format(F=local, P=prog).replace("16", "2").split()
    exe = family_launcher(program_mpi(prog), env={"PATH": os.environ["PATH"]})
    extra = ["--allow-run-as-root", "--oversubscribe"] if family == "openmpi" else []
    p = subprocess.run([exe, *extra, *words[1:]], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OMPI_MCA_btl": "self,tcp", "UCX_TLS": "tcp,self"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(p.stdout.split("\n")[:-1]) == [f"rank 0 of 2 on {host}", f"rank 1 of 2 on {host}"], p.stdout


def test_rank_and_machine_files_name_what_the_programs_mpi_takes(tmp_path, capsys, monkeypatch):
    """A rank file for an MPICH program, a machine file for an Open MPI one: the line of the launcher that reads
    the file, and the format the program's MPI takes instead."""
    prog = _program(tmp_path, "mpich")
    f, got = _map_line(tmp_path, capsys, monkeypatch, "rankfile", "--program", prog)
    assert got.endswith(f"a rankfile is not MPICH's: for MPICH, write --format machinefile and run "
                        f"mpiexec -f {f} -n 16 {prog}")
    f, got = _map_line(tmp_path, capsys, monkeypatch, "machinefile", "--mpi", "openmpi")
    assert got == (f"mpiexec -f {f} -n 16 ./a.out; a machinefile is not Open MPI's: for Open MPI, write --format "
                   f"hostfile or rankfile and run mpirun --map-by seq --hostfile {f} -np 16 ./a.out")
    f, got = _map_line(tmp_path, capsys, monkeypatch, "slurm", "--mpi", "mpich-ucx")
    assert got == f"SLURM_HOSTFILE={f} srun --mpi=pmi2 --distribution=arbitrary -n 16 ./a.out"


def test_testbed_line_carries_the_users_word_and_program():
    assert launch_command("hostfile", "F", 4, mpi="openmpi", testbed="tb1", program="/usr/bin/lmp") == \
        "fabscope testbed run tb1 --placement F -- /usr/bin/lmp"
    assert launch_command("hostfile", "F", 4, mpi="mpich", testbed="tb1", mpi_word="mpich-ucx") == \
        "fabscope testbed run tb1 --mpi mpich-ucx --placement F -- ./a.out"


def test_a_program_of_no_known_mpi_is_refused_before_mapping(tmp_path, capsys):
    from fabscope.cli import main

    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    out_file = tmp_path / "placed.txt"
    rc = main(["map", "--fabric", "fat-tree:k=4,levels=2", "--nodes", "h[0000-0015]", "--ppn", "1",
               "--comm", "ring:16", "-o", str(out_file), "--program", str(script)])
    err = capsys.readouterr().err
    assert rc != 0 and not out_file.exists()
    assert len(err.strip().splitlines()) == 1 and "no ELF executable" in err and "--mpi" in err


def test_the_program_is_an_input_never_overwritten_and_found_on_path(tmp_path, capsys, monkeypatch):
    """`-o` naming the program itself is refused before anything is written; a bare name is the one on $PATH,
    and one that is nowhere is refused in one line."""
    from fabscope.cli import main

    prog = _program(tmp_path, "openmpi")
    before = open(prog, "rb").read()
    args = ["map", "--fabric", "fat-tree:k=4,levels=2", "--nodes", "h[0000-0015]", "--ppn", "1", "--comm", "ring:16"]
    assert main([*args, "-o", prog, "--program", prog]) != 0
    assert "is also an input" in capsys.readouterr().err and open(prog, "rb").read() == before
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    f, got = _map_line(tmp_path, capsys, monkeypatch, "hostfile", "--program", os.path.basename(prog))
    assert got == f"mpirun --map-by seq --hostfile {f} -np 16 {os.path.basename(prog)}"
    assert main([*args, "-o", str(tmp_path / "h.txt"), "--program", "no-such-program-here"]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no-such-program-here" in err and not (tmp_path / "h.txt").exists()
