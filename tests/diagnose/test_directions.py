"""Faults real fabrics have: one direction of a cable, a slow host, many slow pairs over few cables.

Each direction of every cable is an unknown of its own (a host's injection and ejection too), and
the noise model cannot take a fault's pairs in as jitter."""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.diagnose.cables import direction_name
from fabscope.diagnose.measured import Measured
from fabscope.diagnose.noise import nominal_level
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.plan import make_plan
from fabscope.diagnose.tomography import diagnose
from fabscope.fabric.io import load_fabric


def measured(f, pm, link_factor: dict[int, float], seed: int, jitter: float = 0.05) -> Measured:
    """The model's pairs with each directed link ``l`` at ``link_factor[l]``, 1.5 % lognormal noise, and a
    share ``jitter`` of the pairs cut to 30-80 %."""
    rng = np.random.default_rng(seed)
    cap = f.link_capacity.copy()
    for link, x in link_factor.items():
        cap[link] *= x
    bw = pm.bandwidth(cap) * np.exp(rng.normal(0, 0.015, pm.n_pairs))
    j = rng.random(pm.n_pairs) < jitter
    bw[j] *= rng.uniform(0.3, 0.8, int(j.sum()))
    n = pm.n_pairs
    sc = np.unique(pm.scenario)
    return Measured(f, np.arange(n), np.arange(n), pm.hs, pm.hd, pm.bytes, bw, 2 * pm.bytes / bw,
                    np.searchsorted(sc, pm.scenario), pm.pingpong, np.full(n, "random-pairs"), ("run",),
                    tuple(("run", "random-pairs", int(s)) for s in sc))


def _planned(spec: str):
    f = load_fabric(spec)
    hs, hd, r = make_plan(f).pairs
    return f, PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(1 << 20)))


@pytest.fixture(scope="module")
def oversub():
    return _planned("fat-tree:k=8,levels=2,up=2")


@pytest.fixture(scope="module")
def small():
    return _planned("fat-tree:k=4,levels=2")


def _switch_links(f):
    return np.flatnonzero((f.link_src >= f.n_hosts) & (f.link_dst >= f.n_hosts))


def test_one_direction_of_an_uplink_is_named_with_its_direction(oversub):
    f, pm = oversub
    for k, link in enumerate(_switch_links(f)[[0, 3, 9]].tolist()):
        d = diagnose(measured(f, pm, {link: 0.5}, k))
        assert [s["links"] for s in d.suspects] == [[link]], (f.link_name(link), d.suspects)
        s = d.suspects[0]
        assert s["direction"] == direction_name(f, link) and s["host"] is None
        assert s["factor"] == pytest.approx(0.5, abs=0.05)


def test_a_down_link_fault_is_not_blamed_on_a_host(small):
    f, pm = small
    base = pm.bandwidth()
    # spine -> leaf links whose cut to x0.5 slows some pairs (elsewhere contention already holds them lower)
    down = [int(x) for x in _switch_links(f) if f.link_src[x] > f.link_dst[x]
            and np.sum(pm.bandwidth(f.link_capacity * np.where(np.arange(f.n_links) == x, 0.5, 1.0)) < 0.9 * base) >= 3]
    down = down[:3]
    assert len(down) == 3
    for k, link in enumerate(down):
        d = diagnose(measured(f, pm, {link: 0.5}, k))
        assert [s["links"] for s in d.suspects] == [[link]], (f.link_name(link), d.suspects)
        assert d.suspects[0]["host"] is None


def test_a_slow_host_is_named_beside_a_one_way_cable_fault(oversub):
    f, pm = oversub
    host_link = int(np.flatnonzero(f.link_src == f.host_index["h0007"])[0])      # its injection
    link = int(_switch_links(f)[5])
    d = diagnose(measured(f, pm, {host_link: 0.6, host_link ^ 1: 0.6, link: 0.5}, 3))
    got = {tuple(s["links"]): s for s in d.suspects}
    assert set(got) == {(host_link, host_link ^ 1), (link,)}
    slow = got[(host_link, host_link ^ 1)]
    assert slow["host"] == "h0007" and slow["direction"] == "both"
    assert slow["factor"] == pytest.approx(0.6, abs=0.05)


def test_a_hosts_ejection_alone_is_the_host_as_ping_pong_cannot_tell_its_directions(oversub):
    f, pm = oversub
    eject = int(np.flatnonzero(f.link_dst == f.host_index["h0020"])[0])
    d = diagnose(measured(f, pm, {eject: 0.5}, 5))
    assert [s["host"] for s in d.suspects] == ["h0020"]
    s = d.suspects[0]
    assert not s["directions_told_apart"] and s["direction"] == "both"
    # x0.5 one way slows a ping-pong to 2 x 0.5 / 1.5 = 0.67 of its rate: the cable both ways at that
    assert s["factor"] == pytest.approx(2 / 3, abs=0.05)


def test_many_slow_pairs_over_few_cables_are_faults_not_noise(oversub):
    """8 of the 16 leaf uplinks at 1/4, both ways: 45 % of the pairs slow, all by about one amount.  Jitter
    fitted to all pairs would hold them (a tight cluster at x0.25), and moving one cable part of the
    way would only cost; every one is named, nothing else, and the nominal spread stays the pairs'."""
    f, pm = oversub
    sw = _switch_links(f)
    ups = [int(x) for x in sw[f.link_src[sw] < f.link_dst[sw]][:8]]
    faults = {x: 0.25 for u in ups for x in (u, u ^ 1)}
    pl = pm.pair_links.tocsc()
    slow = np.unique(np.concatenate([pl[:, x].indices for x in faults]))
    assert 0.4 < len(slow) / pm.n_pairs < 0.5
    d = diagnose(measured(f, pm, faults, 7))
    assert sorted(s["link"] for s in d.suspects) == sorted(ups)
    assert d.sigma < 0.02 and d.meta["noise_model"]["w"] < 0.1


@pytest.mark.parametrize("share, holds", [(0.45, True), (0.49, True), (0.55, False)])
def test_the_nominal_level_holds_until_half_the_pairs_are_slow(share, holds):
    """The breakdown point (docs/diagnose.md) where no pair is marked unshared: the centre and spread come
    from the pairs at the model's rate while they are more than half of all; past that, from the slow ones."""
    rng = np.random.default_rng(2)
    n = 2000
    k = int(share * n)
    e = np.r_[rng.normal(0.0, 0.015, n - k), rng.normal(np.log(0.5), 0.015, k)]
    centre, sigma = nominal_level(e)
    assert (abs(centre) < 0.01 and sigma == pytest.approx(0.015, rel=0.15)) == holds


@pytest.mark.parametrize("share, holds", [(0.45, True), (0.49, True), (0.55, False)])
def test_the_nominal_level_of_the_unshared_pairs_holds_until_half_of_them_are_slow(share, holds):
    """The breakdown point where faults speed pairs too (docs/diagnose.md): the shared pairs, 4 of 5, all
    slowed or sped by faults; the level is the unshared pairs' while more than half of them are at the
    model's rate.  Over all pairs it breaks (the first assertion: what it did before)."""
    rng = np.random.default_rng(3)
    n_u, n_s = 400, 1600
    k = int(share * n_u)
    e_u = np.r_[rng.normal(0.0, 0.015, n_u - k), rng.normal(np.log(0.5), 0.015, k)]
    e_s = np.r_[rng.normal(np.log(0.4), 0.015, n_s // 2), rng.normal(np.log(1.6), 0.015, n_s // 2)]
    e = np.r_[e_u, e_s]
    centre, _ = nominal_level(e)
    assert abs(centre) > 0.1
    centre, sigma = nominal_level(e, unshared=np.arange(len(e)) < n_u)
    assert (abs(centre) < 0.01 and sigma == pytest.approx(0.015, rel=0.15)) == holds


@pytest.mark.parametrize("draw", [0, 2])
def test_two_uplinks_of_an_oversubscribed_tree_are_named_though_they_speed_their_neighbours(draw):
    """On a 2:1 tree two uplinks at 1/4 slow about half the random pairs and speed a tenth or more (a pair
    sharing an uplink with a flow held back elsewhere gets more than its modeled share).  With the nominal
    level taken over all pairs its centre and spread went with them (spread 12-15 %, 1 and 7 false
    suspects in these two draws); from the pairs the model puts at their path's rate, which no fault can
    speed, both cables are named and nothing else."""
    f = load_fabric("fat-tree:k=4,levels=2,up=2")
    rng = np.random.default_rng(0)
    hs, hd, sc = [], [], []
    for r in range(16):
        p = rng.permutation(16)
        hs += p[0::2].tolist()
        hd += p[1::2].tolist()
        sc += [r] * 8
    pm = PairModel(f, hs, hd, sc, bytes=np.full(len(hs), float(1 << 20)))
    sw = _switch_links(f)
    ups = [int(x) for x in sw[f.link_src[sw] < f.link_dst[sw]]]
    r = np.random.default_rng(100 + draw)
    a = ups[int(r.integers(len(ups)))]
    others = [u for u in ups if f.link_src[u] != f.link_src[a]]
    b = others[int(r.integers(len(others)))]
    faults = {x: 0.25 for u in (a, b) for x in (u, u ^ 1)}
    cap = f.link_capacity.copy()
    cap[list(faults)] *= 0.25
    ratio = pm.bandwidth(cap) / pm.bandwidth(f.link_capacity)
    assert np.mean(ratio < 0.9) > 0.45 and np.mean(ratio > 1.1) > 0.1
    d = diagnose(measured(f, pm, faults, draw))
    assert sorted(s["link"] // 2 for s in d.suspects) == sorted([a // 2, b // 2])
    assert d.sigma < 0.03


# ---- the confirmation round ------------------------------------------------------------
def _one_way_suspect(f, link: int) -> dict:
    from fabscope.diagnose.cables import cable_name

    return {"cable": cable_name(f, link // 2), "name": cable_name(f, link // 2), "links": [link], "link": link,
            "host": None, "tied": [], "pairs": []}


def test_confirmation_pairs_cross_a_one_way_suspect_in_its_direction(oversub):
    from fabscope.diagnose.confirm import confirm_pairs

    f, pm = oversub
    for link in _switch_links(f)[[1, 6, 12]].tolist():
        cp = confirm_pairs(f, [_one_way_suspect(f, link)], set(), pm.router, seed=4)
        cross = [(a, b) for a, b, role, _ in cp if role == "cross"]
        assert len(cross) == 4
        for a, b in cross:
            check = PairModel(f, np.array([a]), np.array([b]), routing=pm.router)
            assert link in set(check.routes.link.tolist()), (f.link_name(link), a, b)
        for a, b, role, _ in cp:
            if role == "control":
                check = PairModel(f, np.array([a]), np.array([b]), routing=pm.router)
                assert not {link, link ^ 1} & set(check.routes.link.tolist())


def test_the_joint_diagnosis_confirms_keeps_what_it_could_not_test_and_never_adds(oversub):
    from fabscope.diagnose.confirm import confirm_pairs, pack_rounds
    from fabscope.diagnose.measured import concat
    from fabscope.diagnose.settle import settle

    f, pm = oversub
    sw = _switch_links(f)
    x, y = int(sw[2]), int(sw[20])
    a = measured(f, pm, {x: 0.4}, 11)
    da = diagnose(a)
    assert [s["links"] for s in da.suspects] == [[x]]
    cp = confirm_pairs(f, da.suspects, set(), pm.router, seed=3)
    rounds = pack_rounds(cp)
    hs = np.array([cp[i][0] for r in rounds for i in r])
    hd = np.array([cp[i][1] for r in rounds for i in r])
    sc = np.array([k for k, r in enumerate(rounds) for _ in r])
    pm2 = PairModel(f, hs, hd, sc, bytes=np.full(len(hs), float(1 << 20)), routing=pm.router)
    crossed = np.unique(pm2.pair_links.tocoo().col)
    # a cable none of the new pairs crosses either way, named (wrongly or not) by the first diagnosis
    z = next(int(c) for c in sw.tolist() if c != x and c not in crossed and c ^ 1 not in crossed
             and pm.pair_links[:, c].nnz)
    b = measured(f, pm2, {x: 0.4, y: 0.3}, 12, jitter=0.0)      # y degraded in the new round only
    both = diagnose(concat([a, b]))
    assert {s["link"] // 2 for s in both.suspects} >= {x // 2}
    out = settle(both, [*da.suspects, _one_way_suspect(f, z)], 0)
    assert out["confirmed"] == [da.suspects[0]["name"]]
    assert out["kept_untested"] == [_one_way_suspect(f, z)["name"]] and out["cleared"] == []
    assert [s["links"] for s in both.suspects] == [[x], [z]] and both.suspects[1]["kept"] == "untested"
    # whatever else the joint fit names (y, slow in the new round only) is a candidate, not a suspect
    assert all(c["link"] // 2 != z // 2 for c in both.meta["candidates"] if c.get("new"))
    res = both.to_result()
    assert res.meta["confirmation"] == out


def test_the_confirmation_round_is_sized_from_the_run_it_confirms(small, tmp_path, capsys):
    from fabscope.cli import main
    from fabscope.diagnose.synthetic import as_result, synthetic

    f, _ = small
    hs, hd, r = make_plan(f).pairs
    link = [int(x) for x in _switch_links(f)][0]
    m = synthetic(f, hs, hd, r, {link // 2: 0.3}, noise=0.01, seed=2, size=65536)
    meas, diag = tmp_path / "m.json", tmp_path / "d.json"
    as_result(m).write_json(meas)
    assert main(["diagnose", str(meas), "--fabric", "fat-tree:k=4,levels=2", "--model", "static", "-o", str(diag)]) == 0
    capsys.readouterr()
    assert main(["diagnose", "--plan", "--confirm", str(diag), "--fabric", "fat-tree:k=4,levels=2"]) == 0
    script = capsys.readouterr().out
    measure = [ln for ln in script.splitlines() if " measure " in ln or ln.startswith("$FABSCOPE measure")]
    assert measure and all("--size 65536" in ln for ln in measure), measure[:2]


def test_the_plan_says_which_cables_directions_its_pairs_cannot_tell_apart():
    """A 4:1 tree's plan separates the two directions of every switch cable.  On a torus under DOR a
    ping-pong's way back takes other cables, so a plan that counts a cable's pairs leaves one of its
    directions crossed by fewer than 4 (72 cables, said); counting each direction's, it covers them all."""
    tree = make_plan(load_fabric("fat-tree:k=8,levels=2,up=2")).summary()
    assert tree["directions_not_told_apart"] == 0
    f = load_fabric("torus:dims=4x4x4")
    cables = make_plan(f, directions=False).summary()
    assert cables["directions_not_told_apart"] > 0
    assert len(cables["directions_not_told_apart_cables"]) == min(50, cables["directions_not_told_apart"])
    torus = make_plan(f).summary()
    assert torus["directions_not_told_apart"] == 0 and torus["rounds"] > cables["rounds"]


def test_a_suspect_whose_new_pairs_are_slow_too_is_kept_though_the_joint_fit_blames_a_neighbour(oversub):
    from fabscope.diagnose.confirm import confirm_pairs, pack_rounds
    from fabscope.diagnose.measured import concat
    from fabscope.diagnose.settle import settle

    f, pm = oversub
    x = int(_switch_links(f)[2])
    a = measured(f, pm, {x: 0.4}, 11)
    da = diagnose(a)
    cp = confirm_pairs(f, da.suspects, set(), pm.router, seed=3)
    rounds = pack_rounds(cp)
    hs = np.array([cp[i][0] for r in rounds for i in r])
    hd = np.array([cp[i][1] for r in rounds for i in r])
    sc = np.array([k for k, r in enumerate(rounds) for _ in r])
    pm2 = PairModel(f, hs, hd, sc, bytes=np.full(len(hs), float(1 << 20)), routing=pm.router)
    both = diagnose(concat([a, measured(f, pm2, {x: 0.4}, 12, jitter=0.0)]))
    both.suspects = []          # as if the joint fit had put the blame elsewhere (a neighbour the new pairs share)
    out = settle(both, da.suspects, 0)
    assert out["kept_slow_again"] == [da.suspects[0]["name"]] and out["cleared"] == []
    assert both.suspects[0]["kept"] == "slow again"


def test_diagnose_of_a_diagnosis_and_new_runs_applies_the_confirmation_rules(small, tmp_path, capsys):
    from fabscope.cli import main
    from fabscope.diagnose.synthetic import as_result, synthetic

    f, _ = small
    hs, hd, r = make_plan(f).pairs
    cable = int(_switch_links(f)[0]) // 2
    first, again, diag = tmp_path / "m1.json", tmp_path / "m2.json", tmp_path / "d.json"
    as_result(synthetic(f, hs, hd, r, {cable: 0.3}, noise=0.01, seed=2)).write_json(first)
    as_result(synthetic(f, hs, hd, r, {cable: 0.3}, noise=0.01, seed=3)).write_json(again)
    spec = "fat-tree:k=4,levels=2"
    assert main(["diagnose", str(first), "--fabric", spec, "--model", "static", "-o", str(diag)]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(diag), str(again), "--fabric", spec, "--model", "static"]) == 0
    out = capsys.readouterr().out
    assert "confirmation round: 1 confirmed, 0 cleared" in out


def test_a_cable_taken_one_direction_at_a_time_both_ways_is_named_as_the_cable(oversub):
    """Once one direction of a cable is taken the other is a unit of its own, so a cable slow both ways can
    end as two one-way suspects (seen on the testbed: x0.27 one way, x0.36 the other).  Started from the two
    directions, the search names the cable, both ways, at one factor; a cable slow by different amounts each
    way stays two directions."""
    from fabscope.diagnose.fit import Fit
    from fabscope.diagnose.greedy import search
    from fabscope.diagnose.noise import fit_noise

    f, pm = oversub
    L = f.n_links
    u = int(_switch_links(f)[4])
    for x_rev, merged in ((0.25, True), (0.5, False)):
        m = measured(f, pm, {u: 0.25, u ^ 1: x_rev}, 3, jitter=0.0)
        log_meas = np.log(m.bandwidth)
        bw0 = pm.bandwidth(f.link_capacity)
        fit = Fit(pm, log_meas, 0.0, fit_noise(log_meas - np.log(bw0), centre=0.0))
        factor = np.ones(L)
        factor[[u, u ^ 1]] = [0.3, 0.3 if merged else 0.5]
        _, chosen, gains, _ = search(fit, factor, 6.0, 0.05, start=[u, u ^ 1])
        if merged:
            assert chosen == [L + u // 2] and gains[L + u // 2] > 6.0
        else:
            assert sorted(chosen) == sorted([u, u ^ 1])


def test_a_suspect_below_the_fault_is_cleared_by_the_pairs_that_avoid_the_fault():
    """The first diagnosis named a spine-to-leaf direction, the fault is the core-to-spine direction above
    it (every first-run pair through the fault went on through the suspect).  Of the new pairs through
    the suspect, those that also cross the fault are slow; the others run at full rate and clear it,
    however many of the first kind there are."""
    from fabscope.diagnose.measured import concat
    from fabscope.diagnose.settle import settle

    f = load_fabric("fat-tree:k=6,levels=3")
    hs, hd, r = make_plan(f).pairs
    pm = PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(1 << 20)))
    ix = {n: i for i, n in enumerate(f.node_names)}
    link = lambda a, b: int(np.flatnonzero((f.link_src == ix[a]) & (f.link_dst == ix[b]))[0])  # noqa: E731
    fault, below = link("s3-0030", "s2-0018"), link("s2-0018", "s1-0023")
    # new pairs through the suspect, each in a round of its own: 3 through the fault too, 2 not
    a = np.repeat(np.arange(f.n_hosts), f.n_hosts)
    b = np.tile(np.arange(f.n_hosts), f.n_hosts)
    a, b = a[a < b], b[a < b]
    routes = pm.router.routes(np.r_[a, b], np.r_[b, a])
    n = len(a)
    on = lambda l: set((routes.flow[routes.link == l] % n).tolist())  # noqa: E731
    both, apart = sorted(on(below) & on(fault)), sorted(on(below) - on(fault))
    pick = both[:3] + apart[:2]
    assert len(pick) == 5
    pm2 = PairModel(f, a[pick], b[pick], np.arange(5), bytes=np.full(5, float(1 << 20)), routing=pm.router)
    joint = diagnose(concat([measured(f, pm, {fault: 0.5}, 5, jitter=0.0),
                             measured(f, pm2, {fault: 0.5}, 6, jitter=0.0)]))
    assert fault in [s["link"] for s in joint.suspects]          # the joint fit names the fault itself
    out = settle(joint, [_one_way_suspect(f, below)], 0)
    assert out["cleared"] == [_one_way_suspect(f, below)["name"]] and joint.suspects == []
    assert out["not_added"]                                      # the fault: a candidate for a round of its own



def test_candidates_name_a_cable_whose_directions_the_pairs_cannot_tell_apart(small):
    """A host's injection and ejection are crossed by the same ping-pong pairs: listed one way at a time
    they were two candidates at one confidence, one of them wrong whatever was degraded.  Such a
    direction is its cable, both ways, among the candidates as in the search and the null."""
    f, pm = small
    pu = pm.pair_links.tocsc()
    seen = 0
    for k in range(6):
        d = diagnose(measured(f, pm, {}, 40 + k, jitter=0.1))
        for c in d.meta["candidates"]:
            seen += 1
            if c["direction"] != "both":
                a, b = pu[:, [c["link"]]], pu[:, [c["link"] ^ 1]]
                assert (a != b).nnz > 0, c
    assert seen >= 10
