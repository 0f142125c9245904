"""Counts a user types (iterations, nights) that drive an allocation are refused from the count, in one
line, before anything is allocated or written (bench/bench_junk_input.py prints the time and memory)."""

from __future__ import annotations

import os

import pytest

from fabscope.cli import main


@pytest.mark.parametrize("pattern", ["random-pairs", "random-messaging", "bucket-brigade", "natural-ring"])
def test_a_trillion_iterations_refused_from_the_count(capsys, pattern):
    rc = main(["simulate", "--dynamic", "--fabric", "fat-tree:k=4,levels=2", "--pattern", pattern,
               "--iterations", "1000000000000"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "messages" in err and "GiB are available" in err, err


def test_pingpong_is_refused_before_its_arrays(monkeypatch):
    """The refusal comes from the count: NumPy is never asked for the arrays."""
    import numpy as np

    from fabscope.dynamic.programs import pingpong
    from fabscope.dynamic.sizes import SimulationTooLarge

    def no_repeat(*a, **k):
        raise AssertionError("an array was made before the count was checked")

    monkeypatch.setattr(np, "repeat", no_repeat)
    with pytest.raises(SimulationTooLarge, match="16,000,000,000,032 messages"):
        pingpong(np.arange(8), np.arange(8, 16), 1e6, 10 ** 12, n_ranks=16)


def test_a_billion_nights_refused_before_the_folder_is_made(tmp_path, capsys):
    folder = tmp_path / "nights"
    rc = main(["history", "example", str(folder), "--nights", "1000000000"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "--nights 1,000,000,000" in err and "free" in err, err
    assert not folder.exists() and os.listdir(tmp_path) == []
