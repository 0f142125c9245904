"""Closed-form counts of generated fabrics, JSON round trips, bad specs."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabscope.errors import FabricError, PlacementError, SchemaError
from fabscope.fabric import Placement
from fabscope.fabric.generators import director, dragonfly, fat_tree, hypercube, itasca, torus, xgft
from fabscope.fabric.io import from_dict, load_fabric, read_json, to_dict, write_json


@pytest.mark.parametrize("k,n", [(2, 1), (2, 3), (3, 2), (4, 3), (8, 2)])
def test_kary_ntree_counts(k, n):
    f = fat_tree(k=k, levels=n)
    assert f.n_hosts == k**n
    assert f.n_switches == n * k ** (n - 1)
    assert f.n_links == 2 * n * k**n
    # every switch has 2k ports except the top level (k down ports)
    deg = np.bincount(f.link_src, minlength=f.n_nodes)[f.n_hosts:]
    top = f.switch_level == n
    assert np.all(deg[~top] == 2 * k) and np.all(deg[top] == k)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_xgft_counts(m, data):
    w = [1] + [data.draw(st.integers(1, 3)) for _ in m[1:]]
    f = xgft(m, w)
    h = len(m)
    assert f.n_hosts == int(np.prod(m))
    n_at = [int(np.prod(m[l:]) * np.prod(w[:l])) for l in range(h + 1)]
    assert f.n_switches == sum(n_at[1:])
    assert f.n_links // 2 == sum(n_at[l] * w[l] for l in range(h))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.booleans())
def test_torus_counts(dims, periodic):
    f = torus(dims, periodic=periodic)
    n = int(np.prod(dims))
    per_dim = [(k if (periodic and k > 2) else k - 1) * (n // k) for k in dims]
    assert f.n_switches == n
    assert f.n_links // 2 == n + sum(per_dim)


def test_dragonfly_and_hypercube_counts():
    f = dragonfly(a=8, p=4, h=4, g=33)
    assert f.n_hosts == 33 * 8 * 4 and f.n_switches == 33 * 8
    assert f.n_links // 2 == f.n_hosts + 33 * 8 * 7 // 2 + 33 * 8 * 4 // 2
    h = hypercube(5)
    assert h.n_links // 2 - h.n_hosts == 5 * 2**4


def test_itasca_as_seed_000_describes_it():
    f = itasca()
    assert f.n_hosts == 67 * 16 and f.total_cores == 67 * 16 * 8
    h = f.n_hosts
    names = f.node_names
    leaf0 = names.index("leaf01")
    up = [names[d] for s, d in zip(f.link_src, f.link_dst) if s == leaf0 and d >= h]
    # 2 QDR cables to each of 2 line switches in each of 2 directors
    assert sorted(up) == sorted(["dirA-line01", "dirA-line02", "dirB-line01", "dirB-line02"] * 2)
    # each director: 18 line switches x 9 spines, 2 cables per pair
    line = names.index("dirA-line05")
    spines = [names[d] for s, d in zip(f.link_src, f.link_dst) if s == line and "spine" in names[d]]
    assert len(spines) == 18 and len(set(spines)) == 9
    # near sets of 9 leaves
    assert f.groups["near"][16 * 8] == 0 and f.groups["near"][16 * 9] == 1
    d = director()
    assert d.n_hosts == 324 and d.n_switches == 27


@pytest.mark.parametrize("spec", ["itasca", "fat-tree:k=4,levels=3", "torus:4x3x2", "redstorm",
                                  "dragonfly:a=4,p=2,h=2,g=9", "xgft:m=4x4,w=1x2", "hypercube:d=3"])
def test_json_round_trip(spec, tmp_path):
    f = load_fabric(spec)
    path = tmp_path / "f.json"
    write_json(f, path)
    g = read_json(path)
    assert g.node_names == f.node_names and g.n_hosts == f.n_hosts
    for a in ("link_src", "link_dst", "link_capacity", "link_latency", "link_src_port", "switch_level",
              "host_cores"):
        assert np.array_equal(getattr(g, a), getattr(f, a)), a
    assert g.class_labels == f.class_labels
    assert {k: v.tolist() for k, v in g.groups.items()} == {k: v.tolist() for k, v in f.groups.items()}
    assert (g.coords is None) == (f.coords is None)


@pytest.mark.parametrize("spec,words", [
    ("nosuch", "unknown fabric 'nosuch'"),
    ("torus:8xAx16", "is not a list"),
    ("fat-tree:k=x", "is not an integer"),
    ("fat-tree:k=4,bogus=1", "no parameter 'bogus'"),
    ("dragonfly:a=2,p=1,h=1,g=9", "needs a*h >= g-1"),
    ("missing-file.json", "does not exist"),
])
def test_bad_specs_say_what_is_wrong(spec, words):
    with pytest.raises(FabricError, match=None) as e:
        load_fabric(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_fabric_file_faults(tmp_path):
    doc = to_dict(fat_tree(k=2, levels=2))
    bad = json.loads(json.dumps(doc))
    bad["cables"]["b"][3] = "ghost"
    with pytest.raises(FabricError, match="cable 3 is dangling.*'ghost'"):
        from_dict(bad)
    old = dict(doc, version=99)
    with pytest.raises(SchemaError, match="version 99.*version 1"):
        from_dict(old)
    p = tmp_path / "garbled.json"
    p.write_text('{"schema": "fabscope.fabric", ')
    with pytest.raises(FabricError, match="not valid JSON"):
        read_json(p)


def test_placements_and_their_errors():
    f = fat_tree(k=2, levels=2, cores=2)
    assert Placement.block(f, 8, 2).host.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert Placement.cyclic(f, 6, 2).host.tolist() == [0, 1, 2, 0, 1, 2]
    with pytest.raises(PlacementError, match="need 5 hosts"):
        Placement.block(f, 10, 2)
    with pytest.raises(PlacementError, match="3 ranks per node.*2 cores"):
        Placement.block(f, 6, 3)
    with pytest.raises(PlacementError, match="'nowhere' is not in fabric"):
        Placement.from_hostlist(f, ["h0000", "nowhere"])
    with pytest.raises(PlacementError, match="3 ranks on host 'h0000'"):
        Placement.from_hostlist(f, ["h0000"] * 3)


def test_schema_violations_name_the_place():
    doc = to_dict(fat_tree(k=2, levels=2))
    del doc["cables"]["capacity"]
    with pytest.raises(SchemaError, match="at cables: 'capacity' is a required property"):
        from_dict(doc, "f.json")
