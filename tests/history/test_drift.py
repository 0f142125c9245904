"""Slow drift: a cable that loses 2 % a night is named before it has lost 20 %; healthy nights bring no alarm."""

from __future__ import annotations

from history_nights import night

from fabscope.fabric.generators import fat_tree
from fabscope.history.check import check
from fabscope.history.store import History

BAD_CABLE = 20   # a leaf-spine cable of fat_tree(k=4, levels=2)


def _nights(path, n: int, faults_of, seed0: int = 0) -> None:
    f = fat_tree(k=4, levels=2)
    with History(str(path), create=True) as h:
        h.set_fabric(f)
        for i in range(n):
            h.add(night(f, seed0 + i, faults_of(i)), time=f"2026-{9 + i // 30:02d}-{i % 30 + 1:02d}T02:00Z")


def test_a_cable_drifting_two_percent_a_night_is_named_before_it_loses_a_fifth(tmp_path):
    db = tmp_path / "drift.db"
    _nights(db, 60, lambda i: {BAD_CABLE: 0.98 ** (i - 29)} if i >= 30 else {})
    with History(str(db)) as h:
        runs = h.runs()
        alarms = {i: check(h, runs[i].id).alarms for i in range(30, 46)}   # 0.98 ** 16 = 0.72 by the last
    nights = [i for i, a in alarms.items() if a]
    assert nights, "never flagged"
    first = nights[0]
    assert 0.98 ** (first - 29) > 0.8                       # before it has lost 20 %
    a = alarms[first]
    assert [(x.what, x.cable) for x in a] == [("cable", "s1-0001[5] -- s2-0000[2]")]
    assert a[0].drifted and a[0].trend.p < 1e-3 and a[0].long.factor < 1     # falling, and below the long baseline
    # said once: later nights are "drifting, already", no alarm
    assert nights == [first]


def test_no_alarm_on_56_healthy_nights(tmp_path):
    db = tmp_path / "healthy.db"
    _nights(db, 56, lambda i: {}, seed0=500)
    with History(str(db)) as h:
        runs = h.runs()
        assert not [i for i in range(1, 56) if check(h, runs[i].id).alarms]
