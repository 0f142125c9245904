"""Exporters: ibsim net files, Slurm topology.conf, Graphviz, JSON."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabscope.errors import FabricError
from fabscope.fabric.exporters import (compress_hostlist, expand_hostlist, export_fabric, to_dot, to_ibsim,
                                       to_slurm)
from fabscope.fabric.generators import fat_tree, itasca, torus, xgft
from fabscope.fabric.io import read_json
from fabscope.fabric.model import FabricBuilder, Level


def parse_net(text):
    """ibsim net file -> {(node, port): (node, port, attrs)}, node kinds."""
    ends, kinds, cur = {}, {}, None
    for line in text.splitlines():
        m = re.match(r'^(Hca|Switch)\t(\d+)\t"(.*)"$', line)
        if m:
            cur = m.group(3)
            kinds[cur] = (m.group(1), int(m.group(2)))
            continue
        m = re.match(r'^\[(\d+)\]\t"(.*)"\[(\d+)\](.*)$', line)
        if m:
            ends[(cur, int(m.group(1)))] = (m.group(2), int(m.group(3)), m.group(4).strip())
    return ends, kinds


@pytest.mark.parametrize("fabric", [fat_tree(k=4, levels=3), itasca(leaves=18), torus((3, 3), hosts_per_router=2),
                                    xgft((4, 4), (1, 2), links_per_pair=2)], ids=lambda f: f.name)
def test_ibsim_net_lists_every_cable_from_both_ends(fabric):
    ends, kinds = parse_net(to_ibsim(fabric))
    assert len(ends) == fabric.n_links
    for (a, pa), (b, pb, attrs) in ends.items():
        assert ends[(b, pb)][:2] == (a, pa)
        assert ends[(b, pb)][2] == attrs              # width and speed set at both ends, as ibsim needs
        assert 1 <= pa <= kinds[a][1]
    names = list(kinds)
    assert names[:fabric.n_hosts] == list(fabric.host_names)      # hosts first: the SM attaches to one
    assert all(kinds[n][0] == "Hca" for n in names[:fabric.n_hosts])


def test_ibsim_rates_and_limits():
    ends, kinds = parse_net(to_ibsim(itasca()))
    assert {a for _, _, a in ends.values()} == {"w=2 s=4"}          # 4x QDR everywhere
    assert max(n for _, n in kinds.values()) == 36                  # 36-port switches
    text = to_ibsim(torus((4, 4)))                                  # Blue Gene/P link rate: no IB rate
    assert "default 4x SDR" in text.split("\n\n")[1]
    b = FabricBuilder('bad"name')
    h = b.add_hosts(['h"0'])
    s = b.add_switch("s")
    b.cable(h[0], s, 1e9)
    with pytest.raises(FabricError, match=r"ibsim net file: node name 'h\"0' has '\"' \(U\+0022\)"):
        to_ibsim(b.build(groups={"leaf": [0]}, levels=[Level("leaf", "Same Leaf")]))


def test_slurm_topology_of_itasca():
    text = to_slurm(itasca())
    lines = text.splitlines()[1:]
    leaves = [l for l in lines if " Nodes=" in l]
    assert len(leaves) == 67 and leaves[0] == "SwitchName=leaf01 Nodes=node[0001-0016]"
    line01 = next(l for l in lines if l.startswith("SwitchName=dirA-line01 "))
    assert line01 == "SwitchName=dirA-line01 Switches=leaf[01-09]"       # a near set of 9 leaves
    spine = next(l for l in lines if l.startswith("SwitchName=dirA-spine1 "))
    assert expand_hostlist(spine.split("Switches=")[1]) == [f"dirA-line{i:02d}" for i in range(1, 19)]
    every = [n for l in leaves for n in expand_hostlist(l.split("Nodes=")[1])]
    assert sorted(every) == sorted(itasca().host_names)


def test_slurm_refuses_a_torus_and_writes_nothing(tmp_path):
    out = tmp_path / "topology.conf"
    with pytest.raises(FabricError, match="not a tree of switches"):
        export_fabric(torus((4, 4)), "slurm", str(out))
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["node", "n", "gpu-", "x1y"]), st.integers(0, 300),
                          st.sampled_from([0, 3, 4])), min_size=1, max_size=40))
def test_hostlist_round_trip(items):
    names = [f"{p}{i:0{w}d}" if w else f"{p}{i}" for p, i, w in items]
    # names that differ only by padding would be ambiguous to Slurm too; keep one spelling per number
    seen, uniq = {}, []
    for n, (p, i, w) in zip(names, items):
        if seen.setdefault((p, i), n) == n and n not in uniq:
            uniq.append(n)
    assert sorted(expand_hostlist(compress_hostlist(uniq))) == sorted(uniq)


def test_dot_draws_parallel_cables_once():
    f = itasca(leaves=9)
    text = to_dot(f)
    edges = [l for l in text.splitlines() if " -- " in l]
    # 9 leaves x 4 line switches + 4 used line switches... every distinct switch pair once
    pairs = {tuple(sorted((f.link_src[i], f.link_dst[i]))) for i in range(0, f.n_links, 2)
             if f.link_src[i] >= f.n_hosts and f.link_dst[i] >= f.n_hosts}
    assert len(edges) == len(pairs)
    assert all('label="2"' in e for e in edges)
    assert '"leaf01" [label="leaf01\\n16 hosts"];' in text


def test_json_export_round_trip(tmp_path):
    f = xgft((4, 4), (1, 2))
    export_fabric(f, "json", str(tmp_path / "f.json"))
    g = read_json(tmp_path / "f.json")
    assert g.node_names == f.node_names and np.array_equal(g.link_src, f.link_src)
    with pytest.raises(FabricError, match="unknown export format 'xml'"):
        export_fabric(f, "xml", str(tmp_path / "f.xml"))


def test_cli_export(tmp_path):
    from test_import import run

    out = tmp_path / "itasca.net"
    assert run(["fabric", "export", "--fabric", "itasca:leaves=9", "--format", "ibsim", "-o", str(out)]) == 0
    ends, kinds = parse_net(out.read_text())
    assert len(kinds) == 144 + 9 + 54
