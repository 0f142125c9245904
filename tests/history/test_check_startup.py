"""``fabscope history check`` imports no scipy.stats (nor scipy.special, which it brings): its rank tests
are fabscope.history.ranktests (importing scipy.stats was 1.3 of the 4.3 CPU s of a check of 109,800
pairs a night, docs/history.md).  On this fabric it imports no SciPy module at all."""

from __future__ import annotations

import json
import subprocess
import sys

from history_nights import night

from fabscope.fabric.generators import fat_tree
from fabscope.history.store import History


def test_history_check_imports_no_scipy_stats(tmp_path):
    f = fat_tree(k=4, levels=2)
    db = tmp_path / "h.db"
    with History(str(db), create=True) as h:    # a cable slow from night 9: candidates, the drift tests too
        h.set_fabric(f)
        for i in range(10):
            h.add(night(f, i, {20: 0.5} if i >= 8 else {}), time=f"2026-09-{i + 1:02d}T02:00Z")
    code = ("import sys, json\nfrom fabscope.cli import main\nrc = main(['history', 'check', '--db', %r, '--all'])\n"
            "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')]), file=sys.stderr)"
            % str(db))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    rc, scipy_modules = json.loads(p.stderr.strip().splitlines()[-1])
    assert "cable s1-0001[5] -- s2-0000[2]" in p.stdout and "Kendall p=" in p.stdout, p.stdout
    assert rc == 0
    assert not [m for m in scipy_modules if m.startswith(("scipy.stats", "scipy.special"))], scipy_modules
    assert scipy_modules == []
