"""diagnose's terminal lines at a testbed's rates: figures in units that keep them readable."""

from __future__ import annotations

import numpy as np

from fabscope.cli import main
from fabscope.diagnose.plan import make_plan
from fabscope.diagnose.report import diagnosis_lines
from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.fabric.io import load_fabric
from fabscope.result import Result

SPEC = "fat-tree:k=4,levels=2"


def test_suspect_line_at_testbed_rates_is_not_about_0_of_0(tmp_path, capsys):
    f = load_fabric(SPEC)
    plan = make_plan(f)
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[3])
    meas, out = tmp_path / "meas.json", tmp_path / "diag.json"
    as_result(synthetic(f, *plan.pairs, {inner: 0.4}, noise=0.03, seed=1)).write_json(meas)
    assert main(["diagnose", str(meas), "--fabric", SPEC, "--model", "static", "-o", str(out)]) == 0
    capsys.readouterr()
    res = Result.read_json(out)
    scale = 0.5e6 / res.extra["suspects"][0]["nominal"]      # a 4 Mbit testbed link: 0.5 MB/s
    for s in res.extra["suspects"]:
        s["capacity"] *= scale
        s["nominal"] *= scale
    line = next(ln for ln in diagnosis_lines(res) if "about " in ln and "confidence" in ln)
    assert "about 0 of 0" not in line
    assert "of 500 kB/s (x" in line and "kB/s of" in line, line
