"""Readers that took a value on trust and failed deep inside: history add's first line parsed before the
bounded reader, app-traffic ranks of 1e+308, a ranks line's machine_ranks holding an object, a result's
extra entries and link columns of the wrong type or length.  Each is one line now, and a fuzz test of
a result's extra entries through the report."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import sys

import pytest
from fuzzkit import DEFAULT, NIGHTLY, _SETTINGS, refuses_cleanly
from hypothesis import given, settings
from hypothesis import strategies as st

from fabscope.cli import main

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from apps.apprun_files import write_run  # noqa: E402


def _one_line(capsys, rc):
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and err.startswith("fabscope: error: "), (rc, err)
    return err


@pytest.mark.parametrize("doc", ["[" * 1000 + "]" * 1000, '{"a":' * 1000 + "1" + "}" * 1000])
def test_history_add_of_a_result_nested_1000_deep(tmp_path, capsys, doc):
    p = tmp_path / "deep.json"
    p.write_text(doc + "\n")
    err = _one_line(capsys, main(["history", "add", "--db", str(tmp_path / "h.db"), str(p)]))
    assert "nested deeper than" in err and str(p) in err, err
    assert not (tmp_path / "h.db").exists()


@pytest.fixture
def app_run(tmp_path):
    """A halo2d kernel's run on 4 ranks: its lines, to damage."""
    p = write_run(tmp_path / "app.jsonl", "halo2d", ["h0000", "h0001", "h0002", "h0003"], [0.1, 0.1],
                  params={"dims": [2, 2]})
    return [json.loads(line) for line in open(p)]


def _write(tmp_path, recs):
    p = tmp_path / "bad.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(p)


@pytest.mark.parametrize("where", [1, 0, 2])
@pytest.mark.parametrize("argv", [["analyze", "{p}"], ["map", "--fabric", "fat-tree:k=4,levels=2", "--comm", "{p}"]])
def test_app_traffic_rank_1e308(tmp_path, capsys, app_run, where, argv):
    for r in app_run:
        if r["type"] == "app-traffic":
            r["sent"][0][where] = 1e308
    p = _write(tmp_path, app_run)
    err = _one_line(capsys, main([a.replace("{p}", p) for a in argv]))
    assert "1e+308, more than a 64-bit integer holds" in err and "'sent'" in err, err


@pytest.mark.parametrize("key,value", [("machine_ranks", [4, {}, 4, 4]), ("machine_cpus", [1, 1, "1", 1]),
                                       ("host_cpus", [1, None, 1, 1]), ("pid", [1, 2, 3]),
                                       ("wait", ["spin", 3, "spin", "spin"])])
def test_ranks_line_lists_are_typed(tmp_path, capsys, app_run, key, value):
    for r in app_run:
        if r["type"] == "ranks":
            r.update(machine_ranks=[4] * 4, machine_cpus=[1] * 4, host_cpus=[1] * 4, wait=["spin"] * 4)
            r[key] = value
    err = _one_line(capsys, main(["analyze", _write(tmp_path, app_run)]))
    assert repr(key) in err, err


# ---- a result's extra entries and link columns, through the report ------------------------------
@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A simulation (hot and limiting links), a diagnosis (suspects) and a criticality sweep, as JSON."""
    d = tmp_path_factory.mktemp("res")
    fab = "fat-tree:k=4,levels=2"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["simulate", "--fabric", fab, "-o", str(d / "sim.json")]) == 0
        assert main(["history", "example", str(d / "n"), "--nights", "2", "--degrade-from", "1", "--factor", "0.2",
                     "--noise", "0.01"]) == 0
        assert main(["diagnose", str(d / "n" / "night02.json"), "--fabric", fab, "-o", str(d / "diag.json")]) == 0
        assert main(["fabric", "critical", "--fabric", fab, "--workers", "0", "--cables", "3",
                     "-o", str(d / "crit.json")]) == 0
    out = {k: json.loads((d / f"{k}.json").read_text()) for k in ("sim", "diag", "crit")}
    assert out["diag"]["extra"]["suspects"] and out["sim"]["extra"]["hot_links"] and out["crit"]["extra"]["criticality"]
    return out


def _report(doc, tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    from fabscope.report.build import read_inputs, report_sections

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        report_sections(read_inputs([str(p)], model=None, fabric=None, partial=False), lambda s: None)


CASES = [("sim", "hot_links", "entry", "link", "x"), ("sim", "hot_links", "entry", "load", None),
         ("sim", "hot_links", "entry", "name", None), ("sim", "hot_links", "whole", None, 3),
         ("sim", "limiting_links", "whole", None, [1]), ("diag", "suspects", "entry", "capacity", "x"),
         ("diag", "suspects", "entry", "pairs", 3), ("diag", "suspects", "whole", None, True),
         ("diag", "explained", "whole", None, {"nominal": "many"}), ("crit", "criticality", "entry", "lost", "x")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_report_of_malformed_extra_entries(results, tmp_path, capsys, case):
    kind, key, how, field, value = case
    doc = copy.deepcopy(results[kind])
    if how == "whole":
        doc["extra"][key] = value
    else:
        for e in doc["extra"][key]:
            e[field] = value
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    err = _one_line(capsys, main(["report", str(p), "-o", str(tmp_path / "r.html")]))
    assert str(p) in err and key in err, err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("column", ["link", "load", "capacity"])
def test_report_of_link_columns_of_unequal_length(results, tmp_path, capsys, column):
    doc = copy.deepcopy(results["sim"])
    doc["links"][column] = doc["links"][column][:-1]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    err = _one_line(capsys, main(["report", str(p), "-o", str(tmp_path / "r.html")]))
    assert "one row per link" in err and repr(column) in err, err


def test_report_of_a_link_beyond_the_fabric(results, tmp_path, capsys):
    doc = copy.deepcopy(results["sim"])
    doc["links"]["link"][0] = 10 ** 9
    doc["extra"]["hot_links"][0]["link"] = 10 ** 9
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    err = _one_line(capsys, main(["report", str(p), "-o", str(tmp_path / "r.html")]))
    assert "1000000000" in err, err


json_values = st.recursive(st.none() | st.booleans() | st.integers(-10, 10 ** 12) | st.floats(allow_nan=False)
                           | st.text(max_size=5), lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(st.sampled_from(["link", "name", "load", "utilisation", "flows",
                                                              "capacity", "pairs", "lost", "cable", "x"]), c,
                                             max_size=4), max_leaves=8)
_extra = st.tuples(st.sampled_from(["sim", "diag", "crit"]),
                   st.sampled_from(["hot_links", "limiting_links", "suspects", "candidates", "explained",
                                    "criticality", "uncovered_cables"]), json_values)


def _check_extra(results, tmp_path, x):
    kind, key, value = x
    doc = copy.deepcopy(results[kind])
    doc["extra"][key] = value
    refuses_cleanly(lambda d: _report(d, tmp_path), doc)


@settings(max_examples=max(DEFAULT // 4, 20), **_SETTINGS)
@given(x=_extra)
def test_report_extra_fuzz(results, tmp_path, x):
    _check_extra(results, tmp_path, x)


@pytest.mark.nightly
@settings(max_examples=NIGHTLY // 10, **_SETTINGS)
@given(x=_extra)
def test_report_extra_fuzz_nightly(results, tmp_path, x):
    _check_extra(results, tmp_path, x)
