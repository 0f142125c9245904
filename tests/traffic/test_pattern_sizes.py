"""Pattern sizes before work: the flow count bounds what each pattern makes, huge ones are refused at once."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from fabscope.errors import PlacementError, TrafficError
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.placement import Placement
from fabscope.traffic.spec import FLOWS, PATTERNS, make_traffic

F = fat_tree(k=4, levels=2, cores=4)
P = Placement.block(F, 64, 4)


@pytest.mark.parametrize("spec", ["random-pairs", "leaf-offset:nodes_per_leaf=2", "leaf-pairs:nodes_per_leaf=2",
                                  "partner-hops:hops=2", "bisection:samples=3", "shift:k=5", "permutation",
                                  "all-to-all", "natural-ring", "random-ring", "bucket-brigade",
                                  "random-messaging", "stencil2d:8x8", "stencil3d:4x4x4"])
def test_the_flow_bound_holds(spec):
    name, _, arg = spec.partition(":")
    kw = dict(p.split("=") for p in arg.split(",") if "=" in p)
    if arg and "=" not in arg:
        kw = {"dims": arg}
    assert make_traffic(spec, F, P, 1e6, seed=3).n_flows <= FLOWS[name](P.n_ranks, kw)


def test_every_pattern_has_a_bound():
    assert set(FLOWS) == set(PATTERNS)


@pytest.mark.parametrize("spec", ["bisection:samples=1e8", "bisection:samples=100000000"])
def test_a_huge_pattern_is_refused_with_its_estimate(spec, monkeypatch):
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "16G")
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(TrafficError, match=r"6,400,000,000 flows, about 512.0 GB; the limit is 16.0 GB"):
        make_traffic(spec, F, P, 1e6)
    assert time.perf_counter() - t0 < 2 and tracemalloc.get_traced_memory()[1] < 5e6
    tracemalloc.stop()


@pytest.mark.parametrize("spec,msg", [("bisection:samples=-3", "samples is -3, not an integer >= 1"),
                                      ("shift:k=1e400", "k is inf, not a finite number"),
                                      ("random-messaging:low=nan", "low is nan, not a finite number"),
                                      ("leaf-pairs:nodes_per_leaf=fast", "nodes_per_leaf is 'fast', not a number")])
def test_pattern_numbers_are_checked(spec, msg):
    with pytest.raises(TrafficError) as err:
        make_traffic(spec, F, P, 1e6)
    assert msg in str(err.value)


def test_all_to_all_of_a_million_ranks_is_refused(monkeypatch):
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "8G")
    f = fat_tree(k=32, levels=2, cores=1024)                     # 1,024 hosts of 1,024 cores
    p = Placement.block(f, 1 << 20, 1024)
    with pytest.raises(TrafficError, match=r"all-to-all: 1,099,511,627,776 flows, about 88.0 TB; the limit is 8.0 GB"):
        make_traffic("all-to-all", f, p, 1e6)


def test_placing_more_ranks_than_memory_holds_is_refused(monkeypatch):
    monkeypatch.setenv("FABSCOPE_MAX_MEMORY", "1MB")
    f = fat_tree(k=32, levels=2, cores=2048)
    with pytest.raises(PlacementError, match=r"2,097,152 ranks \(2,048 a node\): about 100.7 MB to place them; "
                                             r"the limit is 1.0 MB \(FABSCOPE_MAX_MEMORY\)"):
        Placement.block(f, 2 << 20, 2048)
