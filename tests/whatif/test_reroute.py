"""Rerouting after a cut with the fabric's own engine where it can, saying which engine did,
and the cut cable's own loss apart from the loss rerouting the rest causes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.critical import criticality
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
from fabscope.routing import make_routing
from fabscope.traffic.patterns import random_pairs
from fabscope.whatif import cut_cables, whatif
from fabscope.whatif.cuts import KeptRoutes, link_map, reroute


def test_dmodk_tree_cut_reroutes_as_opensm_would_and_says_so(capsys):
    """A cut that made D-mod-K fail with 'dmodk: switch s2-0000 has no route to h0000'."""
    assert main(["fabric", "whatif", "--fabric", "fat-tree:k=4,levels=2", "--fail", "s1-0000[5]"]) == 0
    out = capsys.readouterr().out
    assert ("routing after: minhop (dmodk cannot route the cut fabric, and OpenSM's ftree, its subnet-manager "
            "counterpart, falls back to minhop: switch s2-0000 has no route to h0000") in out
    assert "with only the cut cables' flows moved to their new paths (the cut's own loss)" in out


def test_an_engine_that_still_routes_the_cut_fabric_keeps_routing():
    f = load_fabric("fat-tree:k=4,levels=2")
    g, _ = cut_cables(f, ["s1-0000[5]"])
    r, label = reroute(g, "updn", (np.arange(16), np.arange(16)[::-1]))
    assert label == "updn" and r.name == "updn"
    w = whatif(f, ["s1-0000[5]"], Placement.block(f, 16, 1), random_pairs(16, 1e6, seed=2), "minhop")
    assert w.routing_after == "minhop" and w.after.meta["rerouted_by"] == "minhop"


def test_dmodk_hands_every_cut_to_ftree_even_one_it_could_still_compute():
    """A whole top switch gone leaves a tree textbook D-mod-K still routes, but no subnet manager
    computes D-mod-K: OpenSM reruns ftree, which routes the 2-level tree without a spine (pure) and
    falls back to min-hop on the 3-level k=3 tree without s3-0001 (bench/route_agreement.py --more:
    OpenSM's ftree falls back there too, and D-mod-K's routes agree with ftree's on 648 of 702 pairs
    once ftree is given the roots)."""
    g, _ = cut_cables(load_fabric("fat-tree:k=4,levels=2"), ["s2-0000"])
    make_routing(g, "dmodk")                                   # the textbook rule would route it
    r, label = reroute(g, "dmodk", (np.arange(16), np.arange(16)[::-1]))
    assert r.name == "ftree" and label.startswith("ftree (the subnet manager's counterpart of dmodk")
    g, _ = cut_cables(load_fabric("fat-tree:k=3,levels=3"), ["s3-0001"])
    make_routing(g, "dmodk")
    r, label = reroute(g, "dmodk")
    assert r.name == "minhop"
    assert label.startswith("minhop (OpenSM's ftree, the subnet manager's counterpart of dmodk, falls back to "
                            "minhop: not a pure fat tree")
    # an uncut tree is dmodk's own
    assert reroute(load_fabric("fat-tree:k=4,levels=2"), "dmodk")[0].name == "dmodk"


def test_kept_routes_move_only_the_flows_of_the_cut_cable():
    f = load_fabric("fat-tree:k=4,levels=3")
    g, gone = cut_cables(f, ["s2-0000[5]"])
    new = link_map(f, g)
    before, after = make_routing(f, "dmodk"), make_routing(g, "minhop")
    n = f.n_hosts
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    kept = KeptRoutes(before, after, new).routes(src, dst)
    rb, ra = before.routes(src, dst), after.routes(src, dst)
    crossed = np.zeros(len(src), bool)
    crossed[rb.flow[new[rb.link] < 0]] = True
    assert 0 < crossed.sum() < len(src)
    for i in np.r_[np.flatnonzero(crossed)[:20], np.flatnonzero(~crossed)[:20]]:
        want = ra.path(i) if crossed[i] else [int(new[x]) for x in rb.path(i)]
        assert kept.path(i) == want
    assert np.all(kept.link >= 0) and np.all(kept.link < g.n_links)
    # moving no flow at all changes nobody: a pattern none of whose flows crosses the cable loses nothing
    pl = Placement.block(f, n, 1)
    tr = random_pairs(n, 1e6, seed=4)
    w = whatif(f, [gone[0].split(" -- ")[0]], pl, tr)
    r_b = before.routes(pl.host[tr.src], pl.host[tr.dst])
    if not np.any(new[r_b.link] < 0):
        np.testing.assert_allclose(w.bw_own, w.bw_before)


def test_criticality_reports_own_loss_and_the_rerouting_engine(tmp_path, capsys):
    """On a 3-level D-mod-K tree the whole-fabric min-hop reroute costs ~30% after any spine-side
    cut; the cut cable's own loss is a few percent, and a cable no flow crosses loses exactly 0."""
    spec = "fat-tree:k=4,levels=3"
    out = tmp_path / "crit.json"
    assert main(["fabric", "critical", "--fabric", spec, "--ppn", "1", "--size", "1MB", "--workers", "0", "--top", "200",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rerouted by minhop (dmodk cannot route the cut fabric, and OpenSM's ftree" in text
    assert "own %" in text
    doc = json.loads(out.read_text())
    rows = doc["extra"]["criticality"]
    assert all({"lost_own", "lost_own_fraction", "rerouted_by"} <= set(r) for r in rows)
    assert sum(doc["meta"]["rerouted_by"].values()) == doc["meta"]["cables"]
    f = load_fabric(spec)
    pl = Placement.block(f, f.n_hosts, 1)
    tr = random_pairs(f.n_hosts, 1e6, seed=0)
    router = make_routing(f, "dmodk")
    used = set(router.routes(pl.host[tr.src], pl.host[tr.dst]).link.tolist())
    switch_rows = [r for r in rows if not r["cable"].startswith("h")]
    idle = [r for r in switch_rows if not set(r["links"]) & used]
    assert idle and all(r["lost_own"] == pytest.approx(0.0, abs=1e-3) for r in idle)
    assert max(r["lost_fraction"] for r in idle) > 0.2          # what the whole reroute costs
    # the own loss is the what-if's with the same cut
    r0 = switch_rows[0]
    w = whatif(f, [_spec(f, r0["links"][0])], pl, tr)
    assert r0["lost_own"] == pytest.approx(float(w.bw_before.sum() - w.bw_own.sum()), rel=1e-6, abs=1e-3)
    assert r0["lost"] == pytest.approx(float(w.bw_before.sum() - w.bw_after.sum()), rel=1e-6)
    # host cables and degraded cables reroute nothing: own loss = loss
    host_rows = [r for r in rows if r["cable"].startswith("h")]
    assert all(r["lost_own"] == pytest.approx(r["lost"]) for r in host_rows)
    deg = criticality(f, pl, tr, cables=[100, 101], workers=0, mode="degrade", factor=0.5)
    assert all(r["lost_own"] == r["lost"] for r in deg.extra["criticality"])


def _spec(f, link):
    i = int(link)
    s = int(f.link_src[i])
    if s < f.n_hosts:
        i += 1
    return f"{f.node_names[int(f.link_src[i])]}[{int(f.link_src_port[i])}]"
