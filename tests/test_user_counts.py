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


def test_a_large_trace_is_announced_before_it_is_read(tmp_path, capsys, monkeypatch):
    """The count a trace's size implies is said before the trace is read (here the bound is lowered:
    the announcement is for traces of a million messages and more)."""
    from fabscope.cli import mapping
    from fabscope.dynamic import programs

    trace = tmp_path / "t.csv"
    trace.write_text("time,src,dst,bytes\n" + "".join(f"{i * 1e-6:.6f},{i % 4},{(i + 1) % 4},65536\n"
                                                      for i in range(200)))
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))     # no node list there: the fabric's first hosts
    monkeypatch.setattr(mapping, "TRACE_ANNOUNCED", 100)
    order = []
    real = programs.replay_trace
    monkeypatch.setattr(programs, "replay_trace", lambda *a, **k: (order.append("read"), real(*a, **k))[1])
    monkeypatch.setattr(mapping, "_announce_trace", lambda *a, _f=mapping._announce_trace: (order.append("said"),
                                                                                            _f(*a))[1])
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "1", "--comm", "ring:4", "--trace",
                 str(trace)]) == 0
    err = capsys.readouterr().err
    assert "about 0.0 million messages, replayed on 1 mapping" in err and order[:2] == ["said", "read"], (err, order)


@pytest.mark.parametrize("lines, limit", [(20_000, "10MB"), (None, "1G")])
def test_a_trace_that_would_not_fit_the_memory_limit_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch,
                                                                                  lines, limit):
    """From the count its size implies: 20,000 messages under FABSCOPE_MAX_MEMORY=10MB, and a 72 MB trace
    (about 3 million messages; a sparse file, its content never read) under 1G.  One line, the trace
    never read."""
    import io
    import sys

    from fabscope.dynamic import programs

    trace = tmp_path / "t.csv"
    if lines:
        trace.write_text("".join(f"{i * 1e-6:.6f},{i % 4},{(i + 1) % 4},65536\n" for i in range(lines)))
    else:
        with open(trace, "wb") as fh:
            fh.truncate(72 * 10**6)
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", limit)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    read = []
    monkeypatch.setattr(programs, "replay_trace", lambda *a, **k: read.append(a) or pytest.fail("the trace was read"))
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "1", "--comm", "ring:4", "--trace",
                 str(trace)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"fabscope: error: --trace {trace}: a trace of "), err
    assert f"the limit is {'10.0 MB' if lines else '1.0 GB'} (FABSCOPE_MAX_MEMORY)" in err, err
    if not lines:
        assert "about 3,000,000 messages" in err, err
    assert not read
