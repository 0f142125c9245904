"""The PMPI library counts what known MPI programs sent (4 ranks on this host).

Each call family runs as its own small program (csrc/pmpi/tests/families.c)
under LD_PRELOAD, and the matrix it writes must equal the one worked out
here by hand from the program and the algorithms the library names.
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from fabscope.traffic.commfiles import read_comm_file

PMPI = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "pmpi")
BIN = os.path.dirname(sys.executable)
P = 4


def _tool(name):
    p = os.path.join(BIN, name)
    return p if os.path.exists(p) else shutil.which(name)


pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(not (_tool("mpicc") and _tool("mpiexec")), reason="no mpicc/mpiexec")]


def _build_library(mpicc, where):
    """Build libfabscope_pmpi.so from every C file of csrc/pmpi, as its Makefile does, into ``where``."""
    lib = where / "libfabscope_pmpi.so"
    sources = sorted(os.path.join(PMPI, f) for f in os.listdir(PMPI) if f.endswith(".c"))
    subprocess.run([mpicc, "-O2", "-Wall", "-Werror", "-fPIC", "-shared", "-o", str(lib), *sources], check=True)
    return lib


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("pmpi")
    lib = _build_library(_tool("mpicc"), d)
    progs = {}
    for name in ("sends", "families"):
        progs[name] = d / name
        subprocess.run([_tool("mpicc"), "-O2", "-o", str(progs[name]),
                        os.path.join(PMPI, "tests", f"{name}.c")], check=True)
    return lib, progs


def _profile(lib, cmd, tmp_path, mpiexec=None):
    out = tmp_path / "comm.mtx"
    env = dict(os.environ, LD_PRELOAD=str(lib), FABSCOPE_PMPI_OUT=str(out),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # Open MPI refuses root otherwise
    subprocess.run([mpiexec or _tool("mpiexec"), "-n", str(P), *cmd], check=True, env=env,
                   timeout=120, capture_output=True)
    g = read_comm_file(str(out))
    B, M = np.zeros((P, P)), np.zeros((P, P))
    B[g.src, g.dst] = g.bytes
    M[g.src, g.dst] = g.msgs
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    assert "collectives counted as: Bcast binomial tree" in out.read_text()
    return B, M


class Expect:
    """Bytes and messages a program should send, edge by edge."""

    def __init__(self):
        self.B, self.M = np.zeros((P, P)), np.zeros((P, P))

    def add(self, s, d, nbytes, msgs=1):
        self.B[s % P, d % P] += nbytes
        self.M[s % P, d % P] += msgs

    def pairwise(self, nbytes_to):
        for r in range(P):
            for i in range(P):
                if i != r:
                    self.add(r, i, nbytes_to(r, i))

    def ring_allreduce_10_doubles(self):
        # 10 elements in 4 chunks of 3,3,2,2; rank r sends every chunk but r+1, then every chunk but r+2
        for r, elems in enumerate((20 - 3 - 2, 20 - 2 - 2, 20 - 2 - 3, 20 - 3 - 3)):
            self.add(r, r + 1, 8 * elems, 6)


def test_point_to_point_and_alltoall(built, tmp_path):
    lib, progs = built
    B, M = _profile(lib, [str(progs["sends"])], tmp_path)
    e = Expect()
    e.pairwise(lambda r, i: 3)                        # MPI_Alltoall: 3 chars to every other rank
    for r in range(P):
        e.add(r, r + 1, 2 * 4 * 100 * (r + 1), 2)     # two MPI_Send of 100*(r+1) ints
        e.add(r, r + 2, 10 * 8)                       # one MPI_Isend of 10 doubles
    assert np.array_equal(B, e.B) and np.array_equal(M, e.M)


def _family(name):
    e = Expect()
    if name == "inplace":       # IN_PLACE Alltoall, Alltoallv (symmetric counts r+i+1) and Allreduce
        e.pairwise(lambda r, i: 12)
        e.pairwise(lambda r, i: 4 * (r + i + 1))
        e.ring_allreduce_10_doubles()
    elif name == "rooted":
        for s, d in ((1, 3), (1, 2), (3, 0)):         # Bcast of 100 ints from 1: binomial tree
            e.add(s, d, 400)
        for s, d in ((1, 0), (2, 0), (3, 2)):         # Reduce of 5 doubles to 0: binomial tree
            e.add(s, d, 40)
        for s in (0, 1, 3):                           # Gather of 7 chars to 2
            e.add(s, 2, 7)
        for d in (0, 1, 2):                           # Scatterv from 3: d+1 ints to d
            e.add(3, d, 4 * (d + 1))
    elif name == "gathers":
        for r in range(P):
            e.add(r, r + 1, 3 * 8, 3)                 # Allgather of 2 ints: ring, 3 steps
            # Allgatherv, rank i contributes i+1 ints: r passes the blocks of r, r-1, r-2
            e.add(r, r + 1, 4 * sum((r - s) % P + 1 for s in range(3)), 3)
            if r < P - 1:
                e.add(r, r + 1, 32)                   # Scan of 4 doubles: a chain
        e.pairwise(lambda r, i: 12)                   # Reduce_scatter_block of 3 ints
    elif name == "nonblocking":
        e.ring_allreduce_10_doubles()                 # Iallreduce
        e.pairwise(lambda r, i: 20)                   # Ialltoall of 5 ints
    elif name == "neighbors":
        for r in range(P):
            e.add(r, r - 1, 8)                        # periodic 1-D Cartesian: block 0 to the - neighbour
            e.add(r, r + 1, 8)                        # block 1 to the + neighbour
            e.add(r, r + 2, 24)                       # distributed graph r -> r+2: Neighbor_allgather
    elif name == "persistent":
        for r in range(P):
            e.add(r, r + 1, 3 * 200, 3)               # Send_init once, Start twice and Startall once
    elif name == "rma":
        for r in range(P):
            e.add(r, r + 1, 40)                       # Put of 10 ints
            e.add(r + 2, r, 24)                       # Get of 6 ints from r+2: r+2 sends
            e.add(r, r + 3, 16)                       # Accumulate of 4 ints
    elif name == "alltoallw":
        e.pairwise(lambda r, i: 4 * (i + 1))
    elif name == "bigcount":
        e.add(0, 1, 1000)                             # MPI_Send_c
        e.add(2, 3, 1000)
        e.ring_allreduce_10_doubles()                 # MPI_Allreduce_c
    return e


FAMILIES = ["inplace", "rooted", "gathers", "nonblocking", "neighbors", "persistent", "rma",
            "alltoallw", "bigcount"]


@pytest.mark.parametrize("family", FAMILIES)
def test_call_family(built, tmp_path, family):
    lib, progs = built
    B, M = _profile(lib, [str(progs["families"]), family], tmp_path)
    e = _family(family)
    assert np.array_equal(B, e.B), f"bytes\n{B}\nwant\n{e.B}"
    assert np.array_equal(M, e.M), f"messages\n{M}\nwant\n{e.M}"


def test_in_place_programs_run_unchanged(built, tmp_path):
    """The program's own output (exit status) is the same with and without the profiler."""
    lib, progs = built
    plain = subprocess.run([_tool("mpiexec"), "-n", str(P), str(progs["families"]), "inplace"],
                           capture_output=True, timeout=120)
    assert plain.returncode == 0
    _profile(lib, [str(progs["families"]), "inplace"], tmp_path)


def _fortran_mpis():
    """Fortran MPIs on PATH, by their suffixed names (the mpich wheel has none).

    Both matter: MPICH's Fortran binding calls the C MPI_ functions, Open MPI's
    calls PMPI_ directly, so only the Fortran wrappers see its calls."""
    found = []
    for kind in ("mpich", "openmpi"):
        tools = [shutil.which(f"{t}.{kind}") for t in ("mpifort", "mpicc", "mpiexec")]
        if all(tools):
            found.append(pytest.param(tools, id=kind))
    return found or [pytest.param(None, marks=pytest.mark.skip(
        reason="no Fortran MPI on PATH (mpifort.mpich or mpifort.openmpi; .ci/run installs both)"))]


@pytest.mark.parametrize("tools", _fortran_mpis())
def test_fortran_program(tmp_path, tools):
    fc, cc, run = tools
    lib, prog = _build_library(cc, tmp_path), tmp_path / "families_f"
    subprocess.run([fc, "-O1", "-o", str(prog), os.path.join(PMPI, "tests", "families.f90")], check=True)
    extra = ["--oversubscribe"] if "openmpi" in run else []
    B, M = _profile(lib, extra + [str(prog)], tmp_path, mpiexec=run)
    e = Expect()
    for r in range(P):
        e.add(r, r + 1, 2 * 100, 2)                   # two MPI_SEND of 25 integers
    e.ring_allreduce_10_doubles()                     # MPI_ALLREDUCE of 10 double precision
    for s, d in ((0, 2), (0, 1), (2, 3)):             # MPI_BCAST of 8 integers from 0
        e.add(s, d, 32)
    assert np.array_equal(B, e.B), f"bytes\n{B}\nwant\n{e.B}"
    assert np.array_equal(M, e.M), f"messages\n{M}\nwant\n{e.M}"
