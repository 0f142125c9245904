"""``measure --testbed T --hostfile F`` where F is a placement ``fabscope map -o`` wrote: a host per
rank in rank order, so a cyclic placement repeats hosts.  The testbed is stood in for (no namespaces)."""

from __future__ import annotations

import io
import types
import warnings

import pytest

from fabscope.cli import main
from fabscope.fabric.generators import fat_tree
from fabscope.measure.hostlists import read_hostfile
from fabscope.testbed import launch


@pytest.fixture
def standin(monkeypatch):
    f = fat_tree(k=4, levels=2)
    monkeypatch.setattr(launch, "ready", lambda name: (types.SimpleNamespace(ppn=1), f))
    monkeypatch.setattr(launch, "hydra_args", lambda name: [])
    return f


def test_cyclic_placement_runs_in_rank_order_with_every_rank(tmp_path, monkeypatch, standin):
    monkeypatch.setattr("sys.stdin", io.StringIO("h0000\nh0001\nh0002\nh0003\n"))
    placement = tmp_path / "cyclic.hosts"
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "2", "--comm", "ring:8",
                 "--algorithm", "cyclic", "-o", str(placement)]) == 0
    lines = placement.read_text().split()
    assert lines == ["h0000", "h0001", "h0002", "h0003"] * 2          # what map writes: a host per rank
    _, machine, _, np_all = launch.job("t39", tmp_path / "out.jsonl", None, str(placement))
    assert np_all == 8
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert sum(k for _, k in read_hostfile(machine)) == 8          # what measure's plan allows
    ranks = [h for ln in open(machine) for h in [ln.split(":")[0]] * int(ln.split(":")[1])]
    assert ranks == lines


def test_host_listed_once_each_keeps_the_testbed_ranks_per_host(tmp_path, standin):
    hf = tmp_path / "hosts"
    hf.write_text("h0000\nh0005\n")
    _, machine, _, np_all = launch.job("t39", tmp_path / "out.jsonl", 3, str(hf))
    assert np_all == 6 and open(machine).read() == "h0000:3\nh0005:3\n"


def test_testbed_run_hostfile_keeps_rank_order(tmp_path, standin):
    from fabscope.testbed.run import rank_hosts

    hf = tmp_path / "cyclic.hosts"
    hf.write_text("h0000\nh0001\nh0000\nh0001\n")
    assert rank_hosts("t39", standin, 1, hostfile=str(hf)) == ["h0000", "h0001", "h0000", "h0001"]
    hf.write_text("h0000 slots=2\nh0001 slots=1\n")                  # slots: how many, not the order
    assert rank_hosts("t39", standin, 1, hostfile=str(hf)) == ["h0000", "h0000", "h0001"]
