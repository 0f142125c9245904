"""The PMPI library counts what a known MPI program sent (4 ranks on this host)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from fabscope.mapping.commfiles import read_comm_file

PMPI = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "pmpi")
BIN = os.path.dirname(sys.executable)


def _tool(name):
    p = os.path.join(BIN, name)
    return p if os.path.exists(p) else shutil.which(name)


pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(not (_tool("mpicc") and _tool("mpiexec")), reason="no mpicc/mpiexec")]


def test_counts_of_a_known_program(tmp_path):
    lib, prog = tmp_path / "libfabscope_pmpi.so", tmp_path / "test_sends"
    subprocess.run([_tool("mpicc"), "-O2", "-fPIC", "-shared", "-o", str(lib),
                    os.path.join(PMPI, "fabscope_pmpi.c")], check=True)
    subprocess.run([_tool("mpicc"), "-O2", "-o", str(prog), os.path.join(PMPI, "test_sends.c")], check=True)
    out = tmp_path / "comm.mtx"
    env = dict(os.environ, LD_PRELOAD=str(lib), FABSCOPE_PMPI_OUT=str(out))
    subprocess.run([_tool("mpiexec"), "-n", "4", str(prog)], check=True, env=env, timeout=120)
    g = read_comm_file(str(out))
    B = np.zeros((4, 4))
    B[g.src, g.dst] = g.bytes
    M = np.zeros((4, 4))
    M[g.src, g.dst] = g.msgs
    want_b = np.full((4, 4), 3.0)          # MPI_Alltoall: 3 chars to every other rank
    want_m = np.ones((4, 4))
    for r in range(4):
        want_b[r, (r + 1) % 4] += 2 * 4 * 100 * (r + 1)     # two MPI_Send of 100*(r+1) ints
        want_m[r, (r + 1) % 4] += 2
        want_b[r, (r + 2) % 4] += 10 * 8                    # one MPI_Isend of 10 doubles
        want_m[r, (r + 2) % 4] += 1
    np.fill_diagonal(want_b, 0)
    np.fill_diagonal(want_m, 0)
    assert np.array_equal(B, want_b)
    assert np.array_equal(M, want_m)
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
