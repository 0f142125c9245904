"""Importers: real ibnetdiscover / OpenSM / dump_fts output (tests/fabric/data, from ibsim) and bad input."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fabscope.errors import FabricError
from fabscope.fabric.importers import (build_fabric, import_fabric, parse_hostmap, parse_ibnetdiscover,
                                       parse_lfts, read_ibnetdiscover)
from fabscope.fabric.io import from_dict, to_dict
from fabscope.routing import default_engine, make_routing
from fabscope.routing.tables import minhop_tables

DATA = os.path.join(os.path.dirname(__file__), "data")
TOPO = os.path.join(DATA, "ibnetdiscover.small.txt")
TOPO_P = os.path.join(DATA, "ibnetdiscover-p.small.txt")


def data(name: str) -> str:
    return os.path.join(DATA, name)


def run(argv: list[str]) -> int:
    """The fabscope CLI in-process."""
    from fabscope.cli import main

    return main(argv)


def text(name: str) -> str:
    with open(data(name)) as fh:
        return fh.read()


def cables(f):
    even = np.arange(0, f.n_links, 2)
    return sorted((f.node_names[a], int(pa), f.node_names[b], int(pb), float(c)) for a, pa, b, pb, c in
                  zip(f.link_src[even], f.link_src_port[even], f.link_dst[even], f.link_dst_port[even],
                      f.link_capacity[even]))


def test_default_and_p_forms_give_the_same_fabric():
    a = import_fabric(TOPO, data("opensm-lfts.small.minhop"))
    b = import_fabric(TOPO_P, data("opensm-lfts.small.minhop"))
    assert (a.n_hosts, a.n_switches, a.n_links) == (16, 6, 64)
    assert a.node_names == b.node_names
    assert cables(a) == cables(b)
    assert np.array_equal(a.lft, b.lft)
    assert a.host_lid.tolist() == b.host_lid.tolist() == [1, 5, 8, 10] + list(range(11, 23))
    assert a.switch_lid.tolist() == [2, 3, 4, 6, 7, 9]
    assert a.switch_level.tolist() == [1, 1, 1, 1, 2, 2]
    # 4x SDR: 4 lanes x 2 Gb/s at QDR's 3071/4000 efficiency
    assert a.link_capacity[0] == pytest.approx(4 * 2e9 / 8 * 3071e6 / 4e9)
    assert a.class_labels == ("Same Node", "Same Leaf", "Diff Leafs")


def test_tables_route_as_ibtracert_says():
    f = import_fabric(TOPO, data("opensm-lfts.small.minhop"))
    assert default_engine(f) == "tables"
    r = make_routing(f, "tables").routes(np.array([f.host_index["H-0-1"]]), np.array([f.host_index["H-3-2"]]))
    # ibtracert 5 21 on the same fabric under minhop: L0[7] -> S1 -> L3[3] (samples/ibtracert.lid5-lid21.txt)
    assert [f.link_name(l) for l in r.path(0)] == ["H-0-1[1] -> L0[2]", "L0[7] -> S1[1]", "S1[7] -> L3[7]",
                                                     "L3[3] -> H-3-2[1]"]


def test_dump_fts_ibroute_and_opensm_dump_agree():
    f = import_fabric(TOPO, data("opensm-lfts.small.minhop"))
    g = import_fabric(TOPO, data("dump_fts.small.full.txt"))
    assert np.array_equal(f.lft, g.lft)
    t = parse_lfts(text("ibroute.lid2.txt"))
    (sw,) = t.switches.values()
    assert sw.desc == "L0" and len(sw.lids) == 22


def test_fabscope_minhop_matches_opensm_minhop_on_the_small_tree():
    f = import_fabric(TOPO, data("opensm-lfts.small.minhop"))
    assert np.array_equal(minhop_tables(f), f.lft)


def test_updn_tables_skip_switch_lids_they_cannot_reach():
    f = import_fabric(TOPO, data("opensm-lfts.small.updn"))
    assert f.params["lft_missing"] == 0


def test_json_round_trip_keeps_tables_and_lids():
    f = import_fabric(TOPO, data("opensm-lfts.small.ftree"))
    g = from_dict(to_dict(f))
    assert np.array_equal(f.lft, g.lft) and np.array_equal(f.host_lid, g.host_lid)
    assert default_engine(g) == "tables"


def test_hostmap_renames_hosts_and_sets_cores():
    lines = [f"H-{i}-{j},node{4 * i + j + 1:02d},8" for i in range(4) for j in range(4)]
    hm = parse_hostmap("\n".join(lines))
    f = build_fabric(read_ibnetdiscover(TOPO), hostmap=hm)
    assert f.host_names[:3] == ("node01", "node02", "node03")
    assert f.host_cores.tolist() == [8] * 16


# ---- bad input: one clear line naming the line or LID -----------------------------------------------
def test_truncated_ibnetdiscover_names_the_line():
    t = text("ibnetdiscover.small.txt")
    cut = "\n".join(t.splitlines()[:150])
    with pytest.raises(FabricError, match=r"line \d+: .*never describes .*truncated"):
        parse_ibnetdiscover(cut, "topo.txt")


def test_garbled_ibnetdiscover_names_the_line():
    lines = text("ibnetdiscover.small.txt").splitlines()
    lines[11] = '[2]	"H-000000000010001a"[1](10001b) 		# "H-3-1" lid twenty 4xSDR'
    with pytest.raises(FabricError, match=r"topo.txt line 12: garbled"):
        parse_ibnetdiscover("\n".join(lines), "topo.txt")
    with pytest.raises(FabricError, match=r"line 3: garbled ibnetdiscover -p"):
        parse_ibnetdiscover("\n".join(text("ibnetdiscover-p.small.txt").splitlines()[:2] + ["CA 22 1 0x1f 4x SDR - SW"]),
                            "p.txt")


def test_table_naming_a_lid_no_port_has():
    t = text("opensm-lfts.small.minhop").replace("0x0016 008", "0x0063 008", 1)
    n = 1 + t.splitlines().index(next(ln for ln in t.splitlines() if ln.startswith("0x0063")))
    with pytest.raises(FabricError, match=rf"lfts line {n}: switch 'L\d' has an entry for LID 99, which no port"):
        build_fabric(read_ibnetdiscover(TOPO), parse_lfts(t, "lfts"))


def test_loop_in_the_tables_names_the_lid():
    # L0 sends H-1-0 (LID 11) up to S0 port 1; make S0 send it back down to L0
    lines = text("opensm-lfts.small.minhop").splitlines()
    start = lines.index(next(ln for ln in lines if "('S0')" in ln))
    i = next(k for k in range(start, len(lines)) if lines[k].startswith("0x000b"))
    lines[i] = "0x000b 001 # Channel Adapter portguid 0x0000000000100009: 'H-1-0'"
    with pytest.raises(FabricError, match=r"a loop in the forwarding tables: LID 11 \(H-1-0\) goes"):
        build_fabric(read_ibnetdiscover(TOPO), parse_lfts("\n".join(lines), "lfts"))


def test_truncated_tables():
    lines = text("opensm-lfts.small.minhop").splitlines()[:30]
    with pytest.raises(FabricError, match=r"lfts line 30: the table of switch .* ends without .*truncated"):
        parse_lfts("\n".join(lines), "lfts")
    with pytest.raises(FabricError, match=r"lfts line 2: not a forwarding-table line"):
        parse_lfts(lines[0] + "\nhello\n", "lfts")


def test_hostmap_missing_a_host_names_it():
    lines = [f"H-{i}-{j},node{4 * i + j + 1:02d}" for i in range(4) for j in range(4)][:-1]
    with pytest.raises(FabricError, match=r"nodes.csv: no host for CA 'H-3-3' \(guid 0x000000000010001e, .*ibnetdiscover.small.txt line 94\)"):
        build_fabric(read_ibnetdiscover(TOPO), hostmap=parse_hostmap("\n".join(lines), "nodes.csv"))
    with pytest.raises(FabricError, match=r"nodes.csv line 2: expected"):
        parse_hostmap("a,b\nlonely\n", "nodes.csv")


def test_cli_import_writes_nothing_on_bad_input(tmp_path, capsys):
    bad = tmp_path / "lfts.dump"
    bad.write_text(text("opensm-lfts.small.minhop").replace("0x0016 008", "0x0063 008", 1))
    out = tmp_path / "fabric.json"
    assert run(["fabric", "import", "--ibnetdiscover", TOPO, "--lfts", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "LID 99" in err[0]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".fabscope")]
    assert run(["fabric", "import", "--ibnetdiscover", TOPO, "--lfts", data("opensm-lfts.small.minhop"),
                "-o", str(out)]) == 0
    from fabscope.fabric.io import read_json

    assert read_json(out).lft is not None
