"""measure says how long a sweep will take before it starts: the sweep's numbers are the C program's,
and a run on slow links says it."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

import fabscope
from fabscope.cli import main
from fabscope.measure.estimate import SWEEPS, sizes, sweep_seconds

P2P = Path(fabscope.__file__).parent / "csrc" / "p2p.c"


def _body(src: str, start: str) -> str:
    i = src.index(start)
    return src[i:src.index("\n}\n", i)]


@pytest.mark.parametrize("test,function", [("pingpong", "int fb_pingpong("), ("multi-lat", "int fb_multi_lat("),
                                           ("bw", "static int windowed("), ("mbw", "static int windowed(")])
def test_sweeps_are_the_c_programs(test, function):
    body = _body(P2P.read_text(), function)
    lo, hi, shift = (int(x) for x in re.search(r"fb_sizes\(c, (\d+), (\d+)u << (\d+)", body).groups())
    it = tuple(int(x) for x in re.search(r"fb_iters\(c, b, (\d+), (\d+)\)", body).groups())
    warm = tuple(int(x) for x in re.search(r"fb_warm\(c, b, (\d+), (\d+)\)", body).groups())
    s = SWEEPS[test]
    assert (s.min_size, s.max_size, s.iters, s.warmup) == (lo, hi << shift, it, warm)


def test_sizes_follow_the_options():
    assert sizes(SWEEPS["pingpong"], [])[:3] == [0, 1, 2] and len(sizes(SWEEPS["pingpong"], [])) == 24
    assert sizes(SWEEPS["bw"], ["--min-size", "1KiB", "--max-size=3000"]) == [1024, 2048, 3000]
    assert sizes(SWEEPS["bw"], ["--size", "64KiB"]) == [65536]


def test_time_grows_with_iterations_and_falls_with_rate():
    a = sweep_seconds("pingpong", ["--iterations", "10"], 5e6, 1e-3)
    assert sweep_seconds("pingpong", ["--iterations", "20"], 5e6, 1e-3) > a > sweep_seconds(
        "pingpong", ["--iterations", "10"], 5e9, 1e-3)


class _Launched(Exception):
    pass


def test_measure_on_slow_links_says_the_time_before_the_run(monkeypatch, capsys):
    from fabscope.measure import mpi, runner

    monkeypatch.setattr(runner, "plan", lambda *a, **k: types.SimpleNamespace(mpi=None))
    monkeypatch.setattr(mpi, "describe", lambda m: "MPI: stand-in")

    def launched(*a, **k):
        raise _Launched

    monkeypatch.setattr(runner, "execute", launched)
    with pytest.raises(_Launched):
        main(["measure", "--np", "2", "--fabric", "fat-tree:k=4,levels=2,capacity=5e6", "pingpong,bw,bibw",
              "--out", "x.jsonl"])
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "estimated time" in ln)
    assert "at 5.00 MB/s" in line and "pingpong" in line and "bibw" in line and " h " in line


def test_a_short_sweep_says_nothing(monkeypatch, capsys):
    from fabscope.measure import mpi, runner

    monkeypatch.setattr(runner, "plan", lambda *a, **k: types.SimpleNamespace(mpi=None))
    monkeypatch.setattr(mpi, "describe", lambda m: "MPI: stand-in")
    monkeypatch.setattr(runner, "execute", lambda *a, **k: (_ for _ in ()).throw(_Launched()))
    with pytest.raises(_Launched):
        main(["measure", "--np", "2", "--fabric", "fat-tree:k=4,levels=2", "pingpong", "--max-size", "64KiB",
              "--out", "x.jsonl"])
    assert "estimated time" not in capsys.readouterr().err
