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


def test_a_step_on_a_cable_that_holds_back_few_of_the_pairs_crossing_it_is_one_alarm(tmp_path):
    """A director's internal cable at x0.5 (Itasca at 20 leaves, the plan's rounds that cross it): the night's
    diagnosis names it at x0.5, but most of its 157 crossing pairs are held by other links, so their median
    moves about 1 %.  Significant, and named: an alarm on its first night (the loss the tomography's), and
    "slow, already" the next (it was no alarm while the crossing pairs had to lose 10 %)."""
    import numpy as np

    from fabscope.diagnose.cables import cable_name
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.synthetic import as_result, synthetic
    from fabscope.fabric.generators import itasca
    from fabscope.routing import make_routing

    f = itasca(leaves=20)
    router = make_routing(f, None)
    plan = make_plan(f, router)
    hs, hd, rnd = plan.pairs
    name = "dirB-line05[1] -- dirB-spine1[9]"
    c = next(k for k in range(f.n_links // 2) if cable_name(f, k) == name)
    r = router.routes(np.r_[hs, hd], np.r_[hd, hs])
    crossing = np.unique(np.asarray(r.flow)[np.asarray(r.link) // 2 == c] % len(hs))
    keep = np.isin(rnd, rnd[crossing])                   # the rounds some pair crosses it in
    hs, hd, rnd = hs[keep], hd[keep], rnd[keep]
    with History(str(tmp_path / "step.db"), create=True) as h:
        h.set_fabric(f)
        for i in range(5):
            m = synthetic(f, hs, hd, rnd, {c: 0.5} if i >= 3 else {}, 0.02, seed=100 + i, size=plan.size)
            h.add(as_result(m), time=f"2026-09-{i + 1:02d}T02:00Z")
        runs = h.runs()
        first, second = check(h, runs[3].id), check(h, runs[4].id)
    (a,) = first.alarms
    assert (a.what, a.cable, a.named) == ("cable", name, True)
    assert a.test.n > 100 and 0.95 < a.test.factor < 1.0 and a.test.p < 1e-4 and a.estimate < 0.6
    assert not second.alarms and [x.first_run for x in second.findings if x.cable == name] == [runs[3].id]


def test_no_alarm_on_56_healthy_nights(tmp_path):
    db = tmp_path / "healthy.db"
    _nights(db, 56, lambda i: {}, seed0=500)
    with History(str(db)) as h:
        runs = h.runs()
        assert not [i for i in range(1, 56) if check(h, runs[i].id).alarms]


def test_a_check_routes_each_list_of_pairs_once(tmp_path, monkeypatch):
    """The nights of one plan measure the same pairs: a check routes them once, for every candidate
    cable and every night of its baselines together (it routed each night, and each night again per
    cable for the long baseline, which took seconds at 109,800 pairs a night)."""
    from fabscope.history import check as check_mod

    import numpy as np

    from fabscope.diagnose.synthetic import as_result, synthetic

    f = fat_tree(k=4, levels=2)
    plan = night(f, 7)                    # one plan's pairs, measured each night with fresh noise
    hs = np.array([f.host_index[x] for x in plan.pairs["src_host"]])
    hd = np.array([f.host_index[x] for x in plan.pairs["dst_host"]])
    db = tmp_path / "plan.db"
    with History(str(db), create=True) as h:
        h.set_fabric(f)
        for i in range(12):
            m = synthetic(f, hs, hd, np.asarray(plan.pairs["scenario"]), {BAD_CABLE: 0.5} if i >= 10 else {},
                          0.02, seed=100 + i, routing="dmodk")
            h.add(as_result(m), time=f"2026-09-{i + 1:02d}T02:00Z")
    calls = []
    real = check_mod._crossing
    monkeypatch.setattr(check_mod, "_crossing", lambda *a: calls.append(a[3]) or real(*a))
    with History(str(db)) as h:
        rep = check(h)
        lists = {tuple(h.pairs(r.id, ("src_host",))["src_host"]) for r in h.runs()}
    assert [f.cable for f in rep.findings if f.what == "cable"]       # a candidate: the long baseline ran
    assert len(calls) == len(lists) == 1


def test_pairs_reads_the_columns_asked(tmp_path):
    db = tmp_path / "one.db"
    _nights(db, 1, lambda i: {})
    with History(str(db)) as h:
        rid = h.runs()[0].id
        p = h.pairs(rid, ("ratio", "cls"))
        assert list(p) == ["ratio", "cls"] and len(p["ratio"]) == len(h.pairs(rid)["src_host"]) > 0
        try:
            h.pairs(rid, ("bandwidth; DROP TABLE pairs",))
        except ValueError as err:
            assert "no pair column" in str(err)
        else:
            raise AssertionError("an unknown column was read")
