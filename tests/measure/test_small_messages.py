"""Small messages on a testbed and kinks that are not protocol changes.

A testbed's shaper passes a message within its bucket at the veths' speed: ``measure --testbed`` says below
which size its figures are not the links' (``fabscope.testbed.smallmsg``), records it, and fits the latency model
from there up; ``compare`` repeats the warning.  A start-up step of the latency model is called a protocol change
only when the fit is not poor and every repeat of the sweep finds it."""

from __future__ import annotations

import json

import numpy as np

from fabscope.measure.analysis import fit_latency_model, format_model

SWEEP = 2.0 ** np.arange(0, 23)


def _noisy(t, sd, seed):
    return t * np.exp(np.random.default_rng(seed).normal(0, sd, len(t)))


def _step(at):
    return np.where(SWEEP < at, 2e-7 + SWEEP / 2e10, 2e-6 + SWEEP / 1.1e10)


def test_a_kink_that_repeats_disagree_on_is_no_protocol_change():
    # the testbed's run-to-run kinks: one sweep steps at 1 KiB, the next at 32 KiB
    a, b = _noisy(_step(1024), 0.02, 1), _noisy(_step(32768), 0.02, 2)
    fit = fit_latency_model(np.concatenate([SWEEP, SWEEP]), np.concatenate([a, b]))
    assert fit.repeats == 2 and fit.kinks and "protocol change" not in fit.kink_kinds()
    text = format_model(fit)
    assert ": protocol change" not in text and "not every one of the 2 repeats finds it" in text
    # each sweep alone calls its own step a protocol change: the repeats are what tell
    assert fit_latency_model(SWEEP, a).kink_kinds() == ["protocol change"]


def test_a_kink_every_repeat_finds_is_a_protocol_change():
    t = _step(8192)
    fit = fit_latency_model(np.concatenate([SWEEP] * 3), np.concatenate([_noisy(t, 0.02, s) for s in range(3)]))
    assert fit.kinks == [8192] and fit.kink_kinds() == ["protocol change"]
    assert "every one of the 3 repeats finds it" in format_model(fit)


def test_no_protocol_change_from_a_poor_fit():
    from fabscope.measure.analysis import LatencyModel, Regime

    fit = LatencyModel((Regime(1, 512, 1e-7, 1e9), Regime(1024, 4096, 1e-6, 1e9)), 0.35)
    assert fit.poor and fit.kink_kinds() == ["start-up step"]
    assert "not called a protocol change: the fit is poor" in format_model(fit)


def _run(tmp_path, sizes):
    from fabscope.measure.parse import BenchRun

    recs = [{"type": "size", "test": "pingpong", "src": 0, "dst": 1, "bytes": m, "iters": 4,
             "latency": 1e-3 + m / 5e6, "bandwidth": m / (1e-3 + m / 5e6)} for m in sizes]
    return BenchRun(str(tmp_path / "x.jsonl"), {"mpi_library": "MPICH", "nranks": 2, "nnodes": 2, "cpu_mhz": 2000.0},
                    {"host": ["a", "b"]}, recs, ["pingpong"], 0)


def test_report_fits_a_testbed_sweep_from_the_links_size_up_one_line_each(tmp_path):
    from fabscope.cli.analyze import report

    sizes = [1 << k for k in range(10, 22)]
    lines = report(_run(tmp_path, sizes), link_from=524288)
    assert not any("\n" in ln for ln in lines)        # the model was one element with newlines: printed as "\n"
    i = lines.index("latency model alpha + m/beta per regime (sizes from 524288 B: the links' own):")
    assert lines[i + 2].split()[0] == "524288"
    lines = report(_run(tmp_path, sizes[:5]), link_from=524288)
    assert "no latency model: fewer than two sizes from 524288 B, the first the links' own" in lines


def test_compare_warns_of_sizes_below_the_links(tmp_path, capsys):
    from fabscope.cli.compare import warn_not_link_bound

    f = tmp_path / "rp.jsonl"
    f.write_text(json.dumps({"type": "testbed", "testbed": "tb1", "link_bound": True, "link_sizes_from": 524288,
                             "smallest_size": 65536}) + "\n")
    warn_not_link_bound([str(f)])
    err = capsys.readouterr().err
    assert "testbed tb1: sizes below 524288 B (here from 65536 B) are not its links' figures" in err
    f.write_text(json.dumps({"type": "testbed", "testbed": "tb1", "link_bound": True, "link_sizes_from": 524288,
                             "smallest_size": 1048576}) + "\n")
    warn_not_link_bound([str(f)])
    assert capsys.readouterr().err == ""
