"""Fixtures of the diagnose tests: one real fabscope-bench run on this host, and
small fabrics that name this host."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabscope.errors import MeasureError
from fabscope.fabric.model import FabricBuilder, Level


@pytest.fixture(scope="session")
def real_run(tmp_path_factory) -> Path:
    """A real 4-rank job: random pairs in 3 rounds, and leaf-offset over ranks (2 per 'leaf')."""
    from fabscope.measure.mpi import find_mpi
    from fabscope.measure.runner import measure

    try:
        mpi = find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")
    out = tmp_path_factory.mktemp("real") / "run.jsonl"
    run = measure(["random-pairs,leaf-offset", "--size", "65536", "--iterations", "20", "--rounds", "3",
                   "--per-rank", "--leaf-size", "2"], np=4, out=out, timeout=60, mpi=mpi)
    assert run.complete, run.describe()
    return out


def named_fabric(host: str, others: int = 3, capacity: float = 3e9):
    """Two leaves under one spine; ``host`` is the first host, then ``n1``, ``n2``..."""
    b = FabricBuilder("named")
    h = b.add_hosts([host] + [f"n{i}" for i in range(1, others + 1)])
    leaves = [b.add_switch("leaf0", level=1), b.add_switch("leaf1", level=1)]
    spine = b.add_switch("spine", level=2)
    half = (len(h) + 1) // 2
    for i, x in enumerate(h):
        b.cable(x, leaves[i >= half], capacity)
    for s in leaves:
        b.cable(s, spine, capacity)
    return b.build(groups={"leaf": [int(i >= half) for i in range(len(h))]},
                   levels=[Level("leaf", "Same Leaf")], host_cores=[4] * len(h))
