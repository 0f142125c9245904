"""The history's page (fabscope history report), rendered for real in headless Chromium, offline."""

from __future__ import annotations

import os
import sys

from fabscope.cli import main
from fabscope.fabric.generators import fat_tree
from fabscope.history.store import History

from report_pixels import coloured, pixels

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "history"))
from history_nights import night  # noqa: E402


def test_history_page_renders_offline_in_chromium(tmp_path, chromium_ok, capsys):
    from fabscope.report.browser import open_report

    f = fat_tree(k=4, levels=2)
    db = str(tmp_path / "h.db")
    with History(db, create=True) as h:
        h.set_fabric(f)
        for n in range(10):
            h.add(night(f, n, {20: 0.5} if n >= 7 else {}), time=f"2026-11-{n + 2:02d}T02:00Z")
    out = tmp_path / "history.html"
    assert main(["history", "report", "--db", db, "-o", str(out)]) == 0
    assert "3 pictures, 1 alarms" in capsys.readouterr().out
    page = open_report(out)
    (tmp_path / "page.png").write_bytes(page.screenshot)
    assert page.errors == [] and page.requests == [] and page.failed == []
    assert page.pictures == 3 and page.drawn == 3
    box = {b["name"]: b for b in page.boxes}
    assert set(box) == {"history-classes", "history-calendar", "history-cables"}
    for name in box:
        assert coloured(pixels(page.screenshot, box[name])) > 200, name
    html = out.read_text()
    assert "s1-0001[5] -- s2-0000[2]" in html          # the cable the alarm names, in the table
