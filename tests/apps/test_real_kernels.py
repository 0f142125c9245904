"""Real runs of fabscope-bench's kernels (4 ranks on this host): the bytes each kernel counted are the
bytes fabscope's program of it sends, so the prediction runs the kernel's own program, and compare
and map --predict read the runs as written."""

import io
import json
import socket
import sys

import pytest

from fabscope.cli import main
from fabscope.errors import MeasureError

KERNELS = [
    (["halo2d", "--size", "4KiB"], "kernel halo2d"),
    (["halo2d", "--dims", "4x1", "--periodic", "no", "--size", "1000"], "kernel halo2d"),
    (["halo3d", "--dims", "1x2x2", "--size", "800"], "kernel halo3d"),
    (["fft-transpose", "--size", "4KiB"], "kernel fft-transpose (pairwise)"),
    (["allreduce-loop", "--size", "64KiB"], "kernel allreduce-loop (ring)"),
    (["allreduce-loop", "--size", "1KiB"], "kernel allreduce-loop (ring)"),   # counted as a ring: the ring
]


@pytest.fixture(scope="module")
def mpi():
    from fabscope.measure.mpi import find_mpi

    try:
        return find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")


@pytest.mark.parametrize("args,program", KERNELS, ids=lambda x: x if isinstance(x, str) else "-".join(x[:2]))
def test_a_real_run_is_predicted_by_its_kernels_program(mpi, tmp_path, capsys, monkeypatch, args, program):
    run = tmp_path / "run.jsonl"
    assert main(["measure", "--np", "4", *args, "--iterations", "4", "--warmup", "1", "--out", str(run)]) == 0
    hm = tmp_path / "hosts.map"
    hm.write_text(f"{socket.gethostname()} h0000\n")        # the four ranks ran here: one host of a star
    out = tmp_path / "c.json"
    capsys.readouterr()
    assert main(["compare", str(run), "--fabric", "fat-tree:k=4,levels=1", "--host-map", str(hm),
                 "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["program"] == program and row["ranks"] == 4 and row["hosts"] == 1
    assert row["measured_median"] > 0 and row["predicted"] > 0 and row["model_iterations"] == 4
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["map", "--fabric", "fat-tree:k=4,levels=1", "--ppn", "1", "--comm", str(run), "--compare",
                 "block", "--predict"]) == 0
    assert program in capsys.readouterr().out
