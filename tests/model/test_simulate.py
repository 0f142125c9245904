"""The model on Itasca: what seed 000's structure implies, and the result files."""

import json

import numpy as np
import pytest

from fabscope.fabric import MB, Placement
from fabscope.model.simulate import simulate
from fabscope.result import Result
from fabscope.traffic import patterns as pt

QDR = 3071.0


def test_same_leaf_pairs_at_full_qdr_rate(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, 1024, 1)
    r = simulate(f, p, pt.random_pairs(1024, 2**20, seed=7))
    s = {x.label: x for x in r.summary()}
    assert s["Same Leaf"].min == pytest.approx(QDR)
    # far pairs meet contention: 16 nodes per leaf on 8 uplinks, and static routing
    assert s["Far Leafs"].avg < QDR / 2 * 1.05 and s["Far Leafs"].min < QDR / 4


def test_near_set_blocks_reach_full_rate_far_pairs_do_not(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, f.n_hosts, 1)
    r = simulate(f, p, pt.leaf_pairs(f, p, 2**20))
    cls = r.pairs["cls"]
    bw = r.pairs["bandwidth"] / MB
    near = cls == f.class_labels.index("Near Set")
    assert np.allclose(bw[near], QDR)
    assert bw[~near].min() < 0.6 * QDR


def test_offsets_within_a_near_set_are_contention_free(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, f.n_hosts, 1)
    for off in (1, 2, 4):
        r = simulate(f, p, pt.leaf_offset(f, p, off, 2**20))
        assert r.summary()[0].min == pytest.approx(QDR)


def test_adaptive_bound_is_at_least_as_good_on_average(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, 1024, 1)
    t = pt.random_pairs(1024, 2**20, seed=3)
    static = simulate(f, p, t, "minhop").summary()[0]
    ideal = simulate(f, p, t, "adaptive").summary()[0]
    assert ideal.min >= static.min and ideal.avg >= static.avg


def test_same_node_pairs_use_the_node_memory(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, 8, 8)                 # one node, 4 pairs
    r = simulate(f, p, pt.random_pairs(8, 2**20, seed=1))
    # 8 copies share 2 x 7474 MB/s of memory, each below the 3773.94 MB/s copy rate
    assert np.allclose(r.pairs["bandwidth"] / MB, 2 * 7474 / 8)
    assert "memory" in r.extra["limiting_links"]["Same Node"][0]["name"]


def test_result_json_and_csv_round_trip(itasca_fabric, tmp_path):
    f = itasca_fabric
    p = Placement.block(f, 64, 8)
    r = simulate(f, p, pt.random_pairs(64, 1e6, seed=2), meta={"ppn": 8})
    r.write_json(tmp_path / "r.json")
    back = Result.read_json(tmp_path / "r.json")
    assert back.class_labels == r.class_labels
    assert np.allclose(back.pairs["bandwidth"], r.pairs["bandwidth"])
    assert back.meta["routing"] == "minhop" and back.meta["fabscope_version"]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == "fabscope.result" and doc["version"] == 1
    r.write_csv(tmp_path / "r.csv")
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0].startswith("src,dst,src_host,dst_host,cls,bytes,bandwidth,time")
    assert len(lines) == 1 + r.n_pairs


def test_message_times_add_latency(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, 32, 1)
    r = simulate(f, p, pt.shift(32, 8, k=16))     # 8-byte messages: latency-bound
    assert np.all(r.pairs["time"] > 1.5e-6) and np.all(r.pairs["time"] < 5e-6)
