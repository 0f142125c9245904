"""bench/run_all.py, the one entry ``make bench`` runs: each case points at a full bench that exists."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "bench" / "run_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_case_names_a_full_bench_that_exists():
    cases = _run_all().CASES
    assert len(cases) >= 5
    for name, (what, fn, cmd) in cases.items():
        script = cmd.split()[1]
        assert cmd.startswith("python bench/") and (ROOT / script).is_file(), (name, cmd)
        assert callable(fn) and what


def test_make_bench_runs_the_one_entry():
    make = (ROOT / "Makefile").read_text()
    target = make.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "bench/run_all.py" in target
