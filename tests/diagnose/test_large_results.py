"""Results of any size through every reader: a result is bounded by its size, not by its one line."""

from __future__ import annotations

import numpy as np

from fabscope.cli import main
from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.fabric.io import load_fabric
from fabscope.textio import MAX_LINE

SPEC = "fat-tree:k=8,levels=2"


def test_a_result_whose_one_line_is_over_the_line_bound_is_read_by_compare_and_diagnose(tmp_path, capsys):
    f = load_fabric(SPEC)
    rng = np.random.default_rng(0)
    rounds = 400
    hs, hd, sc = [], [], []
    for r in range(rounds):                     # 400 rounds of 32 pairs: 12,800 pairs
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist()
        hd += p[1::2].tolist()
        sc += [r] * (f.n_hosts // 2)
    m = synthetic(f, np.array(hs), np.array(hd), np.array(sc), {}, 0.01, seed=1)
    meas = tmp_path / "big.json"
    as_result(m).write_json(meas)
    raw = meas.read_bytes()
    assert raw.count(b"\n") <= 1 and len(raw) > MAX_LINE       # one line, over the line bound
    assert main(["compare", str(meas), "--fabric", SPEC, "--model", "static"]) == 0
    diag = tmp_path / "diag.json"
    assert main(["diagnose", str(meas), "--fabric", SPEC, "--model", "static", "-o", str(diag)]) == 0
    assert len(diag.read_bytes()) > MAX_LINE
    # the diagnosis is read again (the confirmation script's last line reads it with the new runs)
    assert main(["compare", str(diag), "--fabric", SPEC, "--model", "static"]) == 0
    assert "longer than" not in capsys.readouterr().err
