"""A program's MPI read from its ELF dependencies (``fabscope.measure.mpi.program_mpi``), before anything launches it.

Programs are built here with each MPI this machine has (Open MPI's ``mpicc.openmpi``, Debian's MPICH
``mpicc.mpich``, the mpich wheel's ``mpicc``); the cases of no MPI, an MPI through another library, an MPI
fabscope does not know and a script are built with ``cc`` from stub libraries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from fabscope.errors import MeasureError
from fabscope.measure.elfdeps import closure, read_dynamic
from fabscope.measure.mpi import family_launcher, program_mpi, vendor_of

MAIN = "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"
CC = shutil.which("cc") or shutil.which("gcc")


def build(compiler: str | None, tmp_path, name: str) -> str:
    if not compiler or not shutil.which(compiler):
        pytest.skip(f"no {compiler}")
    (tmp_path / "m.c").write_text(MAIN)
    out = tmp_path / name
    subprocess.run([compiler, str(tmp_path / "m.c"), "-o", str(out)], check=True, capture_output=True)
    return str(out)


def test_open_mpi_program(tmp_path):
    prog = build("mpicc.openmpi", tmp_path, "ompi")
    pm = program_mpi(prog)
    assert (pm.family, pm.netmod) == ("openmpi", None) and pm.source.startswith("libmpi.so.40 (")
    exe = family_launcher(pm)
    p = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert vendor_of(p.stdout + p.stderr) == "openmpi"


def test_debian_mpich_is_a_ucx_build(tmp_path):
    prog = build("mpicc.mpich", tmp_path, "mpich")
    pm = program_mpi(prog)
    assert (pm.family, pm.netmod) == ("mpich", "ucx"), pm   # Debian's MPICH 4.0.2 is ch4:ucx: libmpich links libucp only
    assert "libucp.so.0" in closure(prog) and "libfabric.so.1" not in closure(prog)


def test_wheel_mpich_takes_ofi(tmp_path):
    wheel = os.path.join(sys.prefix, "bin", "mpicc")
    prog = build(wheel if os.access(wheel, os.X_OK) else None, tmp_path, "wheel")
    pm = program_mpi(prog)
    assert (pm.family, pm.netmod) == ("mpich", "ofi")          # links libfabric and libucp: OFI, as before


def _stub(tmp_path, soname: str) -> str:
    (tmp_path / "stub.c").write_text("int MPI_Init(int *c, char ***v) { return 0; }\n")
    lib = tmp_path / soname
    subprocess.run([CC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", str(tmp_path / "stub.c"), "-o", str(lib)],
                   check=True, capture_output=True)
    return str(lib)


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_mpi_through_another_library_and_an_unknown_mpi(tmp_path):
    """lmp -> liblammps.so.0 -> libmpi.so.40 (LAMMPS's shape); libmpi.so.20 is refused naming itself."""
    _stub(tmp_path, "libmpi.so.40")
    (tmp_path / "app.c").write_text("int MPI_Init(int *, char ***); int app(void) { return MPI_Init(0, 0); }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-Wl,-soname,libapp.so.0", str(tmp_path / "app.c"), "-o",
                    str(tmp_path / "libapp.so.0"), str(tmp_path / "libmpi.so.40"), "-Wl,-rpath,$ORIGIN"],
                   check=True, capture_output=True)
    (tmp_path / "main.c").write_text("int app(void); int main(void) { return app(); }\n")
    subprocess.run([CC, str(tmp_path / "main.c"), "-o", str(tmp_path / "lmp"), str(tmp_path / "libapp.so.0"),
                    "-Wl,-rpath,$ORIGIN"], check=True, capture_output=True)
    assert read_dynamic(str(tmp_path / "lmp")).needed[0] == "libapp.so.0"
    pm = program_mpi(str(tmp_path / "lmp"))
    assert pm.family == "openmpi" and str(tmp_path / "libmpi.so.40") in pm.source

    odd = tmp_path / "odd"
    odd.mkdir()
    _stub(odd, "libmpi.so.20")
    (odd / "m.c").write_text("int MPI_Init(int *, char ***); int main(void) { return MPI_Init(0, 0); }\n")
    subprocess.run([CC, str(odd / "m.c"), "-o", str(odd / "prog"), str(odd / "libmpi.so.20"), "-Wl,-rpath,$ORIGIN"],
                   check=True, capture_output=True)
    with pytest.raises(MeasureError, match=r"links libmpi\.so\.20, an MPI fabscope does not know how to launch"):
        program_mpi(str(odd / "prog"))
    os.unlink(odd / "libmpi.so.20")
    with pytest.raises(MeasureError, match=r"links libmpi\.so\.20, an MPI fabscope does not know"):
        program_mpi(str(odd / "prog"))                     # unknown before missing: the name is what matters


def test_script_and_no_mpi_are_refused_unless_told(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexec lmp \"$@\"\n")
    script.chmod(0o755)
    with pytest.raises(MeasureError, match=r"is no ELF executable \(a script\?\).* --mpi openmpi\|mpich\|mpich-ucx\|none"):
        program_mpi(str(script))
    with pytest.raises(MeasureError, match="links no MPI library"):
        program_mpi("/bin/true")
    assert program_mpi(str(script), "openmpi").family == "openmpi"
    assert program_mpi("/bin/true", "none").family == "none"
    with pytest.raises(MeasureError, match="--mpi 'lam'"):
        program_mpi("/bin/true", "lam")


def test_truncated_and_odd_files_are_no_elf(tmp_path):
    for i, data in enumerate([b"", b"\x7fELF", b"\x7fELF\x02\x01" + b"\xff" * 58, b"\x7fELF\x01\x01" + b"\0" * 200]):
        f = tmp_path / f"f{i}"
        f.write_bytes(data)
        d = read_dynamic(str(f))
        assert d is None or d.needed == (), (i, d)
        assert closure(str(f)) == {}


@pytest.mark.mpi
def test_measure_with_open_mpi_here(tmp_path):
    """fabscope-bench built with Open MPI (FABSCOPE_MPICC=mpicc.openmpi) and launched by its mpirun on this host:
    the result records Open MPI as the MPI that produced it."""
    import json

    if not shutil.which("mpicc.openmpi"):
        pytest.skip("no mpicc.openmpi")
    out = tmp_path / "pp.json"
    p = subprocess.run([sys.executable, "-m", "fabscope.cli", "measure", "--np", "2", "--timeout", "120", "pingpong",
                        "--max-size", "1KiB", "--iterations", "2", "--out", str(tmp_path / "pp.jsonl"), "-o", str(out)],
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                       env={**os.environ, "FABSCOPE_MPICC": "mpicc.openmpi"})
    assert p.returncode == 0, p.stderr
    assert "MPI: openmpi (" in p.stderr and ", launcher " in p.stderr
    mpi = json.loads(out.read_text())["meta"]["mpi"]
    assert mpi["name"] == "openmpi" and mpi["version"].startswith("Open MPI v")
    assert mpi["mpicc"] == shutil.which("mpicc.openmpi")
