"""Fixtures of the measure tests: the MPI found, the built program, a runner
that wraps every job in ``timeout`` so nothing hangs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabscope.errors import MeasureError
from fabscope.measure.build import bench_binary
from fabscope.measure.mpi import find_mpi
from fabscope.measure.runner import Plan

JOB_TIMEOUT = 60


@pytest.fixture(scope="session")
def mpi():
    try:
        return find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")


@pytest.fixture(scope="session")
def binary(mpi):
    return bench_binary(mpi)[0]


class Bench:
    def __init__(self, mpi, binary, tmp: Path):
        self.mpi, self.binary, self.tmp = mpi, binary, tmp

    def argv(self, np: int, args: list[str], out: Path, wrap: list[str] | None = None) -> list[str]:
        plan = Plan(self.mpi, self.binary, np, list(args), out)
        argv = plan.argv()
        if wrap:  # run every rank through a wrapper: [... launcher opts ..., wrapper, binary, ...]
            i = argv.index(str(self.binary))
            argv = argv[:i] + wrap + argv[i:]
        return argv

    def env(self, **extra: str) -> dict[str, str]:
        return {**Plan(self.mpi, self.binary, 1, [], Path("x")).env(), **extra}

    def run(self, np: int, *args: str, env: dict[str, str] | None = None, name: str = "out.jsonl",
            wrap: list[str] | None = None) -> tuple[subprocess.CompletedProcess, Path]:
        out = self.tmp / name
        p = subprocess.run(["timeout", "-k", "5", str(JOB_TIMEOUT), *self.argv(np, list(args), out, wrap)],
                           capture_output=True, text=True, env=self.env(**(env or {})))
        assert p.returncode != 124, f"job timed out: {p.stderr[-500:]}"
        return p, out


@pytest.fixture
def bench(mpi, binary, tmp_path):
    return Bench(mpi, binary, tmp_path)


