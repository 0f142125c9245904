"""What if cables fail: the cut fabric, its tables, and which pairs lose how much."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabscope.errors import FabricError
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree, itasca
from fabscope.whatif import cut_cables, whatif
from fabscope.routing.tables import minhop_tables
from fabscope.traffic.spec import make_traffic


def test_cut_removes_the_cable_and_keeps_link_pairs():
    f = fat_tree(k=4, levels=2)
    g, gone = cut_cables(f, ["s1-0000[5]", "s2-0003"])
    assert gone[0] == "s1-0000[5] -- s2-0000[1]"
    assert len(gone) == 1 + 4                     # a whole spine: its 4 cables
    assert g.n_links == f.n_links - 10
    assert np.array_equal(g.link_src[1::2], g.link_dst[0::2])


def test_cut_carries_tables_over_and_empties_cut_entries():
    f = fat_tree(k=4, levels=2)
    f = dataclasses.replace(f, lft=minhop_tables(f))
    g, _ = cut_cables(f, ["s1-0000[5]"])
    cut_link = int(np.flatnonzero((f.link_src == f.node_index["s1-0000"]) & (f.link_src_port == 5))[0])
    was = f.lft == cut_link
    assert was.any() and np.all(g.lft[was] == -1)
    kept = (f.lft >= 0) & ~was & (f.lft != (cut_link ^ 1))
    assert np.all(g.link_src[g.lft[kept]] == f.link_src[f.lft[kept]])
    assert np.all(g.link_src_port[g.lft[kept]] == f.link_src_port[f.lft[kept]])


@pytest.mark.parametrize("cut, message", [
    ("nowhere[1]", "no node 'nowhere'"),
    ("s1-0000[99]", "s1-0000 has no cable on port 99"),
    ("h0000", r"name a host's port, e.g. h0000\[1\]"),
    ("h0000[1]", "leave host 'h0000' without a cable"),
    ("s1-0000[", "cannot read cut"),
])
def test_bad_cuts(cut, message):
    with pytest.raises(FabricError, match=message):
        cut_cables(fat_tree(k=4, levels=2), [cut])


def test_itasca_one_uplink_cut_costs_only_pairs_through_it():
    f = itasca()
    p = Placement.block(f, f.n_hosts, ppn=1)
    t = make_traffic("leaf-offset:9", f, p, 1e6)         # every leaf talks to the next near set
    w = whatif(f, ["leaf01[17]"], p, t, "minhop")
    src_leaf = f.groups["leaf"][p.host[t.src]]
    assert w.n_losing > 0
    losing = np.flatnonzero(w.loss > 1e-6)
    hosts = set(w.before.pairs["src_host"][losing]) | set(w.before.pairs["dst_host"][losing])
    assert any(f.groups["leaf"][f.host_index[h]] == 0 for h in hosts)   # leaf01 is in every losing pair
    assert src_leaf.min() == 0
    text = "\n".join(w.lines(5))
    assert "leaf01[17] -- dirA-line01" in text and "pairs lose bandwidth" in text


def test_cli_whatif(capsys):
    from fabscope.cli import main

    assert main(["fabric", "whatif", "--fabric", "fat-tree:k=4,levels=2,up=2", "--fail", "s1-0000[5]",
                "--pattern", "shift:k=4", "--routing", "minhop", "--ppn", "1"]) == 0
    out = capsys.readouterr().out
    assert "pairs lose bandwidth; worst loses 50%" in out
    assert main(["fabric", "whatif", "--fabric", "fat-tree:k=4,levels=3", "--fail", "s1-0000[5]",
                 "--pattern", "shift:k=4", "--routing", "ftree"]) == 0
    assert "routing after: minhop (OpenSM's ftree falls back: not a pure fat tree" in capsys.readouterr().out


def test_ftree_whatif_falls_back_to_minhop_as_opensm_does_unless_roots_are_named():
    f = fat_tree(k=4, levels=3)
    p = Placement.block(f, f.n_hosts, ppn=1)
    t = make_traffic("shift:k=4", f, p, 1e6)
    w = whatif(f, ["s1-0000[5]"], p, t, "ftree")
    assert w.routing_after.startswith("minhop (OpenSM's ftree falls back: not a pure fat tree: s1-0001 has 4 up")
    top = "+".join(n for n in f.node_names if n.startswith("s3-"))
    r = whatif(f, ["s1-0000[5]"], p, t, f"ftree:roots={top}")
    assert r.routing_after == f"ftree:roots={top}"
    assert np.array_equal(r.bw_before, w.bw_before)         # ftree either way before the cut
    m = whatif(f, ["s1-0000[5]"], p, t, "minhop")
    assert np.allclose(w.bw_after, m.bw_after)


def test_imported_tables_reroute_with_the_engine_that_wrote_them(capsys):
    from fabscope.routing import make_routing

    f = fat_tree(k=4, levels=3)
    g = dataclasses.replace(f, lft=make_routing(f, "ftree").lft)
    p = Placement.block(g, g.n_hosts, ppn=1)
    t = make_traffic("shift:k=4", g, p, 1e6)
    w = whatif(g, ["s1-0000[5]"], p, t, "tables")
    assert w.routing_after.startswith("minhop (OpenSM's ftree falls back") and "reproduces" in w.routing_after
    u = whatif(g, ["s1-0000[5]"], p, t, "tables", reroute_with="updn")
    assert u.routing_after == "updn"
    # tables no engine reproduces (one leaf sends one host up its other uplink): min-hop stands in, and says so
    lft = make_routing(f, "ftree").lft.copy()
    leaf = f.node_index["s1-0000"] - f.n_hosts
    up = [l for l in range(f.n_links) if f.link_src[l] == f.n_hosts + leaf and f.link_dst[l] >= f.n_hosts]
    d = 4                                          # a host on another leaf
    lft[leaf, d] = next(l for l in up if l != lft[leaf, d])
    x = whatif(dataclasses.replace(f, lft=lft), ["s1-0000[5]"], p, t, "tables")
    assert x.routing_after.startswith("minhop (standing in for the subnet manager: no fabscope engine")


def _tables_fabric(engine: str):
    from fabscope.routing import make_routing

    f = fat_tree(k=4, levels=2)
    return dataclasses.replace(f, lft=make_routing(f, engine).lft)


def test_imported_tables_label_names_the_engine_that_reproduces_them_not_its_fallback():
    """Tables ftree made (as on a testbed); a cut ftree refuses: min-hop reroutes, ftree reproduced the tables."""
    f = _tables_fabric("ftree")
    p = Placement.block(f, 16, ppn=1)
    w = whatif(f, ["s1-0000[5]"], p, make_traffic("shift:k=4", f, p, 1e6), routing="tables")
    assert w.routing_after.startswith("minhop")
    assert "the engine that reproduces the imported tables" not in w.routing_after
    assert w.routing_after.endswith("; ftree reproduces the imported tables")


def test_imported_tables_rerouted_by_their_own_engine_say_so():
    f = _tables_fabric("ftree")
    p = Placement.block(f, 16, ppn=1)
    w = whatif(f, ["s2-0000"], p, make_traffic("shift:k=4", f, p, 1e6), routing="tables")
    assert w.routing_after.startswith("ftree") and "the engine that reproduces the imported tables" in w.routing_after


def test_whatif_pair_lines_scale_units_at_testbed_rates():
    """At a testbed's rates (under 1 MB/s) the losing pairs read in kB/s, not '1 -> 0 MB/s'."""
    f = fat_tree(k=4, levels=2)
    p = Placement.block(f, 16, ppn=1)
    w = whatif(f, ["s1-0000[5]"], p, make_traffic("shift:k=4", f, p, 1e6))
    scale = 0.6e6 / float(w.bw_before.max())                  # the fastest pair at 0.6 MB/s (5 Mbit)
    slow = dataclasses.replace(w, bw_before=w.bw_before * scale, bw_after=w.bw_after * scale, bw_own=None)
    pairs = [ln for ln in slow.lines() if ln.startswith("  ") and " -> " in ln and "%)" in ln]
    assert pairs, slow.lines()
    assert not any(" -> 0 MB/s" in ln or ": 0 -> " in ln for ln in pairs), pairs
    assert all(ln.count("kB/s") == 2 for ln in pairs), pairs


def test_whatif_class_table_takes_the_unit_of_its_figures():
    """On 0.5 MB/s links (a 4 Mbit testbed) the class table reads in kB/s, every cell above 0."""
    from fabscope.fabric.generators import fat_tree as ft

    f = ft(k=4, levels=2, capacity=5e5)
    p = Placement.block(f, 16, ppn=1)
    lines = whatif(f, ["s1-0000[5]"], p, make_traffic("shift:k=4", f, p, 1e6)).lines()
    assert "Max/Avg/Min kB/s" in lines[1]
    cells = [float(x) for ln in lines[2:] if ln.split()[0] in ("Overall", "Same", "Diff") for x in ln.split()[-6:]]
    assert cells and min(cells) > 0, lines[:6]
