"""End to end against the real tools: fabscope fabric -> ibsim -> opensm -> ibnetdiscover/dump_fts/ibtracert -> fabscope.

Needs Debian's ibsim-utils, opensm and infiniband-diags (CI installs them);
skipped only when they are absent.  Every ibsim runs under its own socket
name in a scratch folder and is stopped by the ``IbSim`` context manager
even when a check fails.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from fabscope.errors import FabricError, RoutingError
from fabscope.fabric import Placement
from fabscope.fabric.exporters import write_ibsim
from fabscope.fabric.generators import fat_tree, itasca, torus, xgft
from fabscope.routing.ftree import FtreeRefused
from fabscope.fabric.ibtools import IbSim, check_lids, have_ibsim, parse_ibtracert, run_diag
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts, read_lfts
from fabscope.routing.agreement import compare_routes, unroutable
from fabscope.whatif import cut_cables, whatif
from fabscope.model.simulate import simulate
from fabscope.routing import make_routing
from fabscope.routing.tables import minhop_tables
from fabscope.traffic.spec import make_traffic

pytestmark = [pytest.mark.ibsim,
              pytest.mark.skipif(not have_ibsim(), reason="needs ibsim-utils, opensm and infiniband-diags")]


def cable_set(f):
    even = np.arange(0, f.n_links, 2)
    return {frozenset([(f.node_names[a], int(pa)), (f.node_names[b], int(pb))]) for a, pa, b, pb in
            zip(f.link_src[even], f.link_src_port[even], f.link_dst[even], f.link_dst_port[even])}


def bring_up(fabric, tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim(fabric, net)
    return IbSim(net, workdir=str(tmp_path / "sim"))


def check_engine(sim, fabric, engine, extra=(), samples=12, seed=0):
    """Route with opensm, import, and check the routes three ways; return the imported fabric."""
    dump = sim.opensm(engine, extra)
    topo = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout, "ibnetdiscover")
    check_lids(topo)
    g = build_fabric(topo, read_lfts(dump), name=f"{fabric.name} under opensm {engine}")
    # the fabric comes back whole: same hosts, cables, ports and rates
    assert set(g.host_names) == set(fabric.host_names)
    assert cable_set(g) == cable_set(fabric)
    assert np.allclose(np.sort(g.link_capacity), np.sort(fabric.link_capacity))
    # the tables read back from the switches (dump_fts) route every pair as opensm's dump says
    fts = build_fabric(topo, parse_lfts(sim.run(["dump_fts"]).stdout, "dump_fts"))
    checked, same = compare_routes(g, g.lft, fts.lft)
    assert same == checked == g.n_hosts * (g.n_hosts - 1)
    # ibtracert agrees hop by hop on sampled pairs
    rng = np.random.default_rng(seed)
    src = rng.integers(0, g.n_hosts, samples)
    dst = (src + rng.integers(1, g.n_hosts, samples)) % g.n_hosts
    r = make_routing(g, "tables").routes(src, dst)
    for k in range(samples):
        out = sim.run(["ibtracert", str(g.host_lid[src[k]]), str(g.host_lid[dst[k]])]).stdout
        ours = [(g.node_names[g.link_src[l]], int(g.link_src_port[l])) for l in r.path(k)]
        assert parse_ibtracert(out) == ours, (engine, g.host_names[src[k]], g.host_names[dst[k]])
    return g


def named_routes(fabric, routing, src=None, dst=None):
    """Every pair's path as ((node name, port), ...): comparable across fabrics that order links differently."""
    if src is None:
        src, dst = (x.ravel() for x in np.meshgrid(np.arange(fabric.n_hosts), np.arange(fabric.n_hosts)))
        src, dst = src[src != dst], dst[src != dst]
    r = routing.routes(src, dst) if not isinstance(routing, str) else make_routing(fabric, routing).routes(src, dst)
    order = np.argsort(r.flow, kind="stable")
    cut = np.flatnonzero(np.diff(r.flow[order])) + 1
    names, ports = fabric.node_names, fabric.link_src_port
    out = {}
    for fl, links in zip(r.flow[order][np.r_[0, cut]].tolist(), np.split(r.link[order], cut)):
        out[(fabric.host_names[src[fl]], fabric.host_names[dst[fl]])] = tuple(
            (names[fabric.link_src[l]], int(ports[l])) for l in links.tolist())
    return out


def agree(a, b):
    """(pairs checked, pairs identical) between two {pair: path} maps over the same pairs."""
    assert a.keys() == b.keys()
    return len(a), sum(a[k] == b[k] for k in a)


def assert_engine_equals_opensm(f, g, engine):
    """fabscope's ``engine`` routes every pair as OpenSM did, on the generated ``f`` and the imported ``g``."""
    theirs = named_routes(g, "tables")
    n = len(theirs)
    assert agree(named_routes(g, engine), theirs) == (n, n), (engine, "imported")
    assert agree(named_routes(f, engine), theirs) == (n, n), (engine, "generated")


def test_fat_tree_under_minhop_updn_ftree(tmp_path):
    f = fat_tree(k=4, levels=3)             # 64 hosts, 48 switches, 3 levels
    with bring_up(f, tmp_path) as sim:
        got = {e: check_engine(sim, f, e) for e in ("minhop", "updn", "ftree")}
        got["dor"] = route_with(sim, "dor")
    for e, g in got.items():                # fabscope's four engines write OpenSM's tables, pair for pair
        assert_engine_equals_opensm(f, g, e)
    g = got["minhop"]
    assert g.class_labels == ("Same Node", "Same Leaf", "Near Set", "Far Leafs")   # pods found from the graph
    # fabscope's min-hop engine writes the very tables opensm's minhop wrote
    assert np.array_equal(minhop_tables(g), g.lft)
    # the flow model runs on the real tables: ftree spreads a shift pattern without contention
    p = Placement.block(g, 64, ppn=1)
    t = make_traffic("shift:k=16", g, p, 1e6)
    res = simulate(got["ftree"], Placement.block(got["ftree"], 64, ppn=1), t, "tables")
    assert res.pairs["bandwidth"].min() > 0
    assert res.links["load"].max() <= res.links["capacity"].max() * (1 + 1e-9)


def test_torus_under_dor(tmp_path):
    f = torus((4, 4, 2), hosts_per_router=2, capacity=3071e6)
    with bring_up(f, tmp_path) as sim:
        g = check_engine(sim, f, "dor")
        m = route_with(sim, "minhop")
        for e in ("ftree", "updn"):                      # OpenSM falls back, and fabscope refuses, on a torus
            with pytest.raises(FabricError, match=f"did not route with {e}"):
                sim.opensm(e)
            with pytest.raises(RoutingError, match="minhop"):
                make_routing(f, e)
    # dor: by coordinates on the generated torus (tie: +), by port order on the imported one (no coordinates)
    assert g.coords is None and make_routing(g, "dor").lft is not None
    assert_engine_equals_opensm(f, g, "dor")
    assert_engine_equals_opensm(f, m, "minhop")
    # SimGrid's tie rule differs exactly on pairs whose X, Y or Z goes half-way round from k/2 to 0
    sg = named_routes(f, "dor:tie=simgrid")
    theirs = named_routes(g, "tables")
    differ = {k for k in theirs if sg[k] != theirs[k]}
    c = {h: f.coords[f.host_index[h]] for h in f.host_names}
    half = {(a, b) for a, b in theirs if any(c[a][i] == 2 and c[b][i] == 0 for i in range(2))}
    assert differ and differ == half
    assert g.class_labels == ("Same Node", "Same Switch", "Diff Switches")
    res = simulate(g, Placement.block(g, g.n_hosts, ppn=1), make_traffic("random-pairs", g,
                   Placement.block(g, g.n_hosts, ppn=1), 1e6), "tables")
    assert np.isfinite(res.pairs["bandwidth"]).all()


def test_itasca_under_opensm_minhop(tmp_path):
    f = itasca()
    with bring_up(f, tmp_path) as sim:
        g = check_engine(sim, f, "minhop", samples=6)
        with pytest.raises(FabricError, match="did not route with ftree"):
            sim.opensm("ftree")          # Itasca is no pure fat tree: opensm falls back, and we say so
    assert g.class_labels == f.class_labels
    assert np.array_equal(g.groups["near"], f.groups["near"])
    # the seed's patterns on the real tables: same leaf at full rate, far pairs contended
    p = Placement.block(g, g.n_hosts, ppn=1)
    res = simulate(g, p, make_traffic("random-pairs", g, p, 1e6), "tables")
    s = {row.label: row for row in res.summary()}
    assert s["Same Leaf"].min == pytest.approx(3071, rel=1e-3)
    assert s["Far Leafs"].min < 1000


def test_cut_cable_reroute_and_whatif(tmp_path):
    f = fat_tree(k=4, levels=2, up=2)            # 4 leaves of 4 hosts, 2 spines
    with bring_up(f, tmp_path) as sim:
        g = check_engine(sim, f, "minhop", samples=4)
        leaf, port = g.node_names[g.n_hosts], 5     # the leaf's first uplink
        sim.unlink(leaf, port)
        dump = sim.opensm("minhop")
        topo = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout)
        h = build_fabric(topo, read_lfts(dump))
    assert h.n_links == g.n_links - 2
    p = Placement.block(g, 16, ppn=1)
    w = whatif(g, [f"{leaf}[{port}]"], p, make_traffic("shift:k=4", g, p, 1e6), "tables", fabric_after=h)
    assert w.routing_after == "tables (rerouted)"
    assert w.n_losing > 0 and w.worst_loss == pytest.approx(0.5)
    # the model's own cut, rerouted by fabscope's min-hop, predicts the same losses as opensm's new tables
    m = whatif(g, [f"{leaf}[{port}]"], p, make_traffic("shift:k=4", g, p, 1e6), "tables")
    assert np.allclose(np.sort(m.loss), np.sort(w.loss))


def route_with(sim, engine, extra=()):
    """Route with opensm and import: the fabric with OpenSM's tables (no further checks)."""
    dump = sim.opensm(engine, extra)
    return build_fabric(parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout), read_lfts(dump))


def irregular():
    """A 3-level k=4 fat tree with four cables cut: no longer a fat tree (ftree refuses it)."""
    return cut_cables(fat_tree(k=4, levels=3), ["s1-0000[5]", "s2-0005[4]", "s2-0005[8]", "s3-0002[1]"])[0]


@pytest.mark.parametrize("make, engines, refused", [
    (lambda: fat_tree(k=4, levels=2, up=2), ("minhop", "dor", "ftree", "updn"), ()),    # 2:1 oversubscribed
    (irregular, ("minhop", "dor", "updn"), ("ftree",)),
    (lambda: fat_tree(k=4, levels=2, links_per_pair=2), ("minhop", "dor", "ftree", "updn"), ()),
], ids=["oversubscribed", "irregular", "two-cables-per-pair"])
def test_engines_equal_opensm(tmp_path, make, engines, refused):
    f = make()
    with bring_up(f, tmp_path) as sim:
        got = {e: route_with(sim, e) for e in engines}
        for e in refused:
            with pytest.raises(FabricError, match=f"did not route with {e}"):
                sim.opensm(e)
            with pytest.raises(FtreeRefused, match="not a pure fat tree"):
                make_routing(f, e)
    for e, g in got.items():
        assert_engine_equals_opensm(f, g, e)
    if f.params.get("links_per_pair", 1) > 1:
        # docs/real-fabrics.md: textbook D-mod-K is not OpenSM's ftree once switches are joined by bundles
        n, same = agree(named_routes(f, "dmodk"), named_routes(got["ftree"], "tables"))
        assert same < n


def test_lmc_1_tables_route_every_pair_by_base_lid(tmp_path):
    """opensm -l 1: each CA owns 2 LIDs, switches 1, packed after them; every pair routes as OpenSM's tables say."""
    f = xgft((6, 4, 3), (1, 3, 2))
    with bring_up(f, tmp_path) as sim:
        g = check_engine(sim, f, "minhop", ("-l", "1"), samples=8)
    assert g.lmc == 1 and np.all(g.host_lid % 2 == 0)
    assert g.params["lft_missing"] == 0
    assert_engine_equals_opensm(f, g, "minhop")


def test_p_form_and_ibroute_read_as_the_default_form_and_the_opensm_dump(tmp_path):
    f = torus((3, 3, 3), capacity=3071e6)               # odd rings, one host per router
    with bring_up(f, tmp_path) as sim:
        dump = sim.opensm("dor")
        default, p_form = (sim.run(["ibnetdiscover", *a]).stdout for a in ((), ("-p",)))
        g = build_fabric(parse_ibnetdiscover(default), read_lfts(dump))
        ibroute = "".join(sim.run(["ibroute", str(lid)]).stdout for lid in g.switch_lid.tolist())
    gp = build_fabric(parse_ibnetdiscover(p_form), read_lfts(dump))
    assert gp.node_names == g.node_names and cable_set(gp) == cable_set(g)
    assert np.array_equal(np.sort(gp.link_capacity), np.sort(g.link_capacity))
    assert np.array_equal(gp.lft, g.lft)
    gr = build_fabric(parse_ibnetdiscover(default), parse_lfts(ibroute, "ibroute"))
    n = g.n_hosts * (g.n_hosts - 1)
    assert compare_routes(g, g.lft, gr.lft) == (n, n)


#: MPI's share of each speed's data rate, as fabscope.fabric.rates documents it
MPI_SHARE = {"SDR": 0.76775, "DDR": 0.76775, "QDR": 0.76775, "FDR": 0.92, "EDR": 0.97, "HDR": 0.97}
#: lane data rates in Gb/s as docs/real-fabrics.md lists them, and ibsim's codes for them
LANE = {"DDR": (4.0, "s=2"), "QDR": (8.0, "s=4"), "SDR": (2.0, "s=1"), "FDR": (13.64, "s=4 e=1"),
        "EDR": (25.0, "s=4 e=2"), "HDR": (50.0, "s=4 e=4")}


def test_link_rates_are_width_times_lane_rate_at_mpis_share(tmp_path):
    """A cable's capacity is read from ibnetdiscover's width and speed, for each speed ibsim gives."""
    cables = [("1x", 1, "w=1", "DDR"), ("4x", 4, "w=2", "FDR"), ("4x", 4, "w=2", "EDR"), ("12x", 12, "w=8", "SDR"),
              ("4x", 4, "w=2", "QDR"), ("4x", 4, "w=2", "HDR")]
    net = tmp_path / "rates.net"
    hosts = "".join(f'Hca\t1\t"h{i}"\n[1]\t"sw"[{i}]\t{w} {LANE[sp][1]}\n\n' for i, (_, _, w, sp) in enumerate(cables, 1))
    sw = "".join(f'[{i}]\t"h{i}"[1]\t{w} {LANE[sp][1]}\n' for i, (_, _, w, sp) in enumerate(cables, 1))
    net.write_text(hosts + f'Switch\t{len(cables) + 2}\t"sw"\n' + sw)
    with IbSim(net, workdir=str(tmp_path / "sim")) as sim:
        sim.opensm("minhop")
        text = sim.run(["ibnetdiscover"]).stdout
    g = build_fabric(parse_ibnetdiscover(text))
    for i, (width, lanes, _, sp) in enumerate(cables, 1):
        assert f'"h{i}" lid ' in text and f"{width}{sp}" in text.split(f'"h{i}" lid ')[1].splitlines()[0]
        cap = g.link_capacity[(g.link_src == g.host_index[f"h{i}"])]
        assert cap.tolist() == pytest.approx([lanes * LANE[sp][0] * 1e9 / 8 * MPI_SHARE[sp]])
    # and back: fabscope's own net file of the imported fabric brings up the same rates
    write_ibsim(g, tmp_path / "again.net")
    with IbSim(tmp_path / "again.net", workdir=str(tmp_path / "sim2")) as sim:
        sim.opensm("minhop")
        h = build_fabric(parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout))
    assert cable_set(h) == cable_set(g)
    for name in g.host_names:
        assert h.link_capacity[h.link_src == h.host_index[name]] == pytest.approx(
            g.link_capacity[g.link_src == g.host_index[name]])


def test_dump_fts_past_port_127_is_said(tmp_path, capsys):
    """dump_fts leaves out entries on ports >= 128: discover says so, and opensm's dump is whole."""
    from fabscope.cli import main
    from fabscope.fabric.ibtools import discover

    f = xgft((128, 2), (1, 1))                  # 2 leaves of 128 hosts, their spine cable on port 129
    with bring_up(f, tmp_path) as sim:
        dump = sim.opensm("minhop")
        fab = discover(timeout=60, env=sim.env, cwd=sim.workdir, save_dir=str(tmp_path / "raw"))
        topo = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout)
        whole = build_fabric(topo, read_lfts(dump))
        ibroute = "".join(sim.run(["ibroute", str(lid)]).stdout for lid in whole.switch_lid.tolist())
    assert "dump_fts omits ports >= 128 ('s1-0000' has a cable on port 129)" in fab.params["warning"]
    # exactly the pairs whose route leaves a switch by port 128 or 129: to the other leaf, to a leaf's last host
    src, dst = (x.ravel() for x in np.meshgrid(np.arange(256), np.arange(256)))
    src, dst = src[src != dst], dst[src != dst]
    lost = unroutable(fab, fab.lft, src, dst)
    assert np.array_equal(lost, (src // 128 != dst // 128) | (dst % 128 == 127))
    n = len(src)
    assert compare_routes(whole, whole.lft, build_fabric(topo, parse_lfts(ibroute, "ibroute")).lft) == (n, n)
    assert whole.params["lft_missing"] == 0
    with pytest.raises(RoutingError, match="has no route to"):
        make_routing(fab, "tables").routes(np.array([0]), np.array([200]))
    assert main(["fabric", "discover", "--from", str(tmp_path / "raw"), "-o", str(tmp_path / "f.json")]) == 0
    assert "warning: dump_fts omits ports >= 128" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["ftree", "updn"])
def test_whatif_reroutes_as_opensm(tmp_path, engine):
    """A cable cut in the running ibsim, opensm rerun: fabscope's what-if reroute equals OpenSM's new tables."""
    f = fat_tree(k=4, levels=3)
    top = [n for n in f.node_names[f.n_hosts:] if n.startswith("s3-")]
    cut = "s1-0000[5]"                                  # a leaf's first uplink
    with bring_up(f, tmp_path) as sim:
        roots = ()
        if engine == "ftree":          # with roots named, OpenSM's ftree routes the cut tree (else: minhop)
            # no SM has run yet, so every LID is 0 and the importer refuses the fabric: read the GUIDs alone
            found = re.findall(r'^Switch\s+\d+\s+"S-([0-9a-fA-F]+)"\s+#\s+"([^"]+)"',
                               sim.run(["ibnetdiscover"]).stdout, flags=re.M)
            guids = [int(g, 16) for g, desc in found if desc in top]
            assert len(guids) == len(top)
            path = tmp_path / "roots.guids"
            path.write_text("".join(f"{g:#018x}\n" for g in guids))
            roots = ("-a", str(path))
        g = route_with(sim, engine, roots)
        sim.unlink("s1-0000", 5)
        h = route_with(sim, engine, roots)
    spec = engine + (":roots=" + "+".join(top) if roots else "")
    # the reroute itself: fabscope's engine on the cut fabric writes OpenSM's rerouted tables, pair for pair
    theirs = named_routes(h, "tables")
    assert agree(named_routes(cut_cables(g, [cut])[0], spec), theirs) == (len(theirs), len(theirs))
    p = Placement.block(g, g.n_hosts, ppn=1)
    t = make_traffic("shift:k=4", g, p, 1e6)
    real = whatif(g, [cut], p, t, "tables", fabric_after=h)
    ours = whatif(g, [cut], p, t, spec)
    assert ours.routing_after == spec
    assert real.n_losing > 0
    losing = real.loss > 1e-6
    assert np.array_equal(ours.loss > 1e-6, losing)              # the same pairs lose bandwidth ...
    assert np.allclose(ours.bw_after[losing], real.bw_after[losing])     # ... and by as much
    # imported tables alone: fabscope finds the engine that wrote them and reroutes with it
    auto = whatif(g, [cut], p, t, "tables", reroute_with=spec)
    assert np.allclose(auto.bw_after, real.bw_after)


def test_discover_says_what_failed(tmp_path, monkeypatch):
    f = fat_tree(k=2, levels=2)
    with bring_up(f, tmp_path) as sim:
        from fabscope.fabric.ibtools import discover

        with pytest.raises(FabricError, match="no subnet manager has configured the fabric"):
            discover(timeout=20, env=sim.env, cwd=sim.workdir)
        sim.opensm("minhop")
        fab = discover(timeout=20, env=sim.env, cwd=sim.workdir, save_dir=str(tmp_path / "raw"))
        assert fab.lft is not None and fab.n_hosts == 4
        assert os.path.exists(tmp_path / "raw" / "dump_fts.txt")
    # nothing answering: a socket with no ibsim behind it
    with pytest.raises(FabricError, match="did not answer within 2 s"):
        run_diag(["ibnetdiscover"], timeout=2, env={**sim.env, "IBSIM_SOCKNAME": "fabscope-nobody"},
                 cwd=str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("fabscope.fabric.ibtools.EXTRA_PATH", ())
    with pytest.raises(FabricError, match="ibnetdiscover, dump_fts not found: .*apt-get install infiniband-diags"):
        discover(timeout=2)


def test_ibsim_is_stopped_even_when_the_block_fails(tmp_path):
    net = tmp_path / "f.net"
    write_ibsim(fat_tree(k=2, levels=2), net)
    with pytest.raises(RuntimeError):
        with IbSim(net) as sim:
            pid, workdir = sim.proc.pid, sim.workdir
            raise RuntimeError("a failing check")
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    assert not os.path.exists(workdir)                  # its own scratch folder is removed
    bad = tmp_path / "bad.net"
    bad.write_text('Switch\t2\t"s"\n[1]\t"h"[1]\tw=2 s=4\n\nHca\t1\t"h"\n[1]\t"s"[1]\tw=1 s=4\n')
    with pytest.raises(FabricError, match="ibsim stopped while reading"):
        with IbSim(bad):
            pass


def test_shipped_samples_are_what_ibsim_and_opensm_write(tmp_path):
    """``fabric example``'s files are the real tools' output on the net file they came from (minhop)."""
    from fabscope.fabric.importers.samples import sample_text

    net = os.path.join(os.path.dirname(__file__), "data", "net.small.fattree-4x4-2spine")
    with IbSim(net, workdir=str(tmp_path / "sim")) as sim:
        dump = sim.opensm("minhop")
        topo, fts = sim.run(["ibnetdiscover"]).stdout, sim.run(["dump_fts"]).stdout

    def body(t):                        # ibnetdiscover's header comments carry the time it ran
        return [ln for ln in t.splitlines() if not ln.startswith("#")]

    assert body(topo) == body(sample_text("ibnetdiscover.txt"))
    with open(dump) as fh:
        assert fh.read() == sample_text("opensm-lfts.dump")
    assert fts == sample_text("dump_fts.txt")


@pytest.mark.skipif(bool(os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband")),
                    reason="this host has an InfiniBand device")
def test_discover_without_an_hca_says_so(tmp_path):
    """The real ibnetdiscover, with no HCA and no ibsim preload: the one line docs/real-fabrics.md shows."""
    from fabscope.fabric.ibtools import discover

    with pytest.raises(FabricError, match=r"^ibnetdiscover: no InfiniBand port to talk through \(can't open MAD "
                                          r"port\): no HCA on this host"):
        discover(timeout=20, cwd=str(tmp_path))
