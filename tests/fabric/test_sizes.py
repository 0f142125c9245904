"""Sizes before work: every generator's estimate is exact on small fabrics, and huge specs are refused
at once, with the estimate in the message, before anything is allocated."""

from __future__ import annotations

import json
import time
import tracemalloc
import warnings

import pytest

from fabscope.errors import FabricError, FabscopeError, FabscopeWarning
from fabscope.fabric.generators import size as sz
from fabscope.fabric.io import ESTIMATORS, GENERATORS, _parse_params, from_dict, load_fabric, to_dict

SMALL = ["torus:4x4x4", "torus:3x5,periodic=0x1,hosts_per_router=2", "torus:2x2x2", "torus:1x7", "mesh:3x4",
         "hypercube:d=5", "hypercube:d=3,hosts_per_router=3", "dragonfly:a=4,p=2,h=2,g=9",
         "dragonfly:a=2,p=3,h=1,g=3", "director:radix=36", "director:radix=12,links_per_pair=3",
         "itasca", "itasca:leaves=3,nodes_per_leaf=2", "fat-tree:k=4,levels=3", "fat-tree:k=4,levels=2,up=2",
         "fat-tree:k=3,levels=1", "xgft:m=4x4,w=1x2", "xgft:m=2x3x2,w=1x2x3,links_per_pair=2",
         "fat-tree:k=4,levels=3,rails=3", "fat-tree:k=4,levels=2,up=2,rails=2,rail_optimised=1",
         "xgft:m=2x3x2,w=1x2x3,links_per_pair=2,rails=4,rail_optimised=1", "director:radix=12,host_ports=2",
         "itasca:leaves=4,nodes_per_leaf=2,host_ports=2", "gpu-pod"]


@pytest.mark.parametrize("spec", SMALL)
def test_the_estimate_counts_what_the_generator_builds(spec):
    from fabscope.fabric.io import PRESETS

    name, _, arg = PRESETS.get(spec, spec).partition(":")
    kwargs = _parse_params(name, GENERATORS[name], arg)
    est = ESTIMATORS[name](**kwargs)
    f = load_fabric(spec)
    assert (est.hosts, est.switches, est.links) == (f.n_hosts, f.n_switches, f.n_links)


HUGE = ["torus:100000x100000x100000", "fat-tree:k=1000,levels=5", "hypercube:d=60",
        "xgft:m=1000x1000x1000,w=1x1000x1000", "director:radix=100000", "dragonfly:a=1000,p=1000,h=1000,g=1001",
        "itasca:nodes_per_leaf=100000000", "mesh:100000x100000", "fat-tree:k=1000,levels=5,rails=8,rail_optimised=1",
        "director:radix=100000,host_ports=2"]


@pytest.mark.parametrize("spec", HUGE)
def test_a_huge_spec_is_refused_before_allocation(spec):
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(FabricError) as err:
        load_fabric(spec)
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    msg = str(err.value)
    assert msg.startswith(spec + ": ") and " hosts, " in msg and " of fabric; the limit is " in msg
    assert "about" in msg and ("FABSCOPE_MAX_MEMORY" in msg)
    assert peak < 5e6 and took < 5


def test_the_limit_is_fabscope_max_memory_when_set(monkeypatch):
    load_fabric("torus:16x16")
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "100kB")
    with pytest.raises(FabricError, match=r"torus:16x16: 256 hosts, 256 switches, 1,536 links: about 583.7 kB "
                                          r"of fabric; the limit is 100.0 kB \(FABSCOPE_MAX_MEMORY\)"):
        load_fabric("torus:16x16")
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "lots")
    with pytest.raises(FabscopeError, match="FABSCOPE_MAX_MEMORY='lots' is not a memory size"):
        load_fabric("torus:16x16")


def test_more_nodes_than_32_bit_indices_hold_are_refused():
    with pytest.raises(FabricError, match="32-bit integers"):
        sz.check_size("x", sz.Size(2 ** 31, 1, 2 ** 31, bytes_per_link=0), limit=(10 ** 30, "test"))


def test_a_slow_build_is_announced_with_its_time():
    with pytest.warns(FabscopeWarning, match=r"torus:2000x2000: 4,000,000 hosts.*building it takes about 2.4 min"):
        sz.check_size("torus:2000x2000", ESTIMATORS["torus"]((2000, 2000)), limit=(10 ** 12, "test"))


@pytest.mark.parametrize("spec,msg", [
    ("torus:4x4,periodic=5x5", "periodic flag '5' is neither 0 nor 1"),
    ("torus:4x4,periodic=1x2", "periodic flag '2' is neither 0 nor 1"),
    ("torus:4x4,periodic=1x1x1", "periodic has 3 entries for 2 dimensions"),
    ("torus:4x4,cores=1000000000", "cores is 1000000000, not a number in [1, 1,048,576]"),
    ("fat-tree:k=2,capacity=nan", "capacity is nan, not a finite number"),
    ("fat-tree:k=2,capacity=1e400", "capacity is inf, not a finite number"),
    ("itasca:memory_bw=-1", "memory_bw is -1.0, not a number > 0"),
    ("dragonfly:a=2,p=1,h=1,g=3,latency=-1", "latency is -1.0, not a number >= 0"),
    ("xgft:m=1000x1000x1000", "missing a required argument: 'w'"),
])
def test_spec_numbers_are_checked(spec, msg):
    with pytest.raises(FabricError) as err:
        load_fabric(spec)
    assert msg in str(err.value)


def test_a_mesh_still_takes_periodic_zero():
    assert load_fabric("torus:4x4,periodic=0x1").periodic == (False, True)


@pytest.mark.parametrize("where,key,value,msg", [
    ("hosts", "memory_bw", -1, "memory_bw of host 'h0001' is -1.0, not a number > 0"),
    ("hosts", "copy_rate", float("nan"), "copy_rate of host 'h0001' is nan, not a finite number"),
    ("hosts", "cores", 10 ** 9, "cores of host 'h0001' is 1000000000, not a number in [1, 1,048,576]"),
    ("cables", "capacity", float("nan"), "capacity of link 'h0001 -> s1-0000' is nan, not a finite number"),
    ("cables", "latency", float("inf"), "latency of link 'h0001 -> s1-0000' is inf, not a finite number"),
])
def test_fabric_file_numbers_are_refused_by_field(where, key, value, msg):
    doc = json.loads(json.dumps(to_dict(load_fabric("fat-tree:k=2"))))
    doc[where][key][1] = value
    with pytest.raises(FabscopeError) as err:
        from_dict(doc, "f.json")
    assert msg in str(err.value)


def test_memory_bw_of_minus_one_does_not_reach_the_solver():
    # it hung the max-min solver; now the fabric cannot be made at all
    from fabscope.fabric.generators import itasca

    with pytest.raises(FabricError, match=r"memory_bw of host 'node0001' is -1.0, not a number > 0"):
        itasca(leaves=2, memory_bw=-1)


def test_report_does_not_rebuild_a_huge_fabric_a_result_names():
    import numpy as np

    from fabscope.report.inputs import Run, attach_fabric
    from fabscope.result import Result

    r = Result(meta={"kind": "model", "fabric": "torus(100000x100000x100000)",
                     "fabric_params": {"generator": "torus"}}, class_labels=("a",),
               pairs={"src": np.array([0]), "dst": np.array([1]), "cls": np.array([0]),
                      "bandwidth": np.array([1.0])})
    run = Run("r", r)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attach_fabric([run])
    assert run.fabric is None and time.perf_counter() - t0 < 2


def test_critical_workers_beyond_the_cores_are_refused():
    from fabscope.diagnose.critical import check_workers

    with pytest.raises(FabscopeError, match=r"--workers 100000: this machine has \d+ cores"):
        check_workers(100000)
    check_workers(1)


def test_fabric_critical_refuses_100000_workers_before_building_anything(capsys):
    from fabscope.cli import main

    # the fabric named is unknown: the workers are refused first, so that is what the line says
    assert main(["fabric", "critical", "--fabric", "no-such-fabric", "--workers", "100000"]) == 1
    err = capsys.readouterr().err
    assert "--workers 100000: this machine has" in err and err.count("\n") == 1
