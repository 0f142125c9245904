"""Inputs the fuzz tests found that crashed fabscope, kept so the default run checks each fix."""

from __future__ import annotations

import json
import os

import pytest
from fuzzkit import refuses_cleanly

from fabscope.fabric.importers import parse_ibnetdiscover
from fabscope.fabric.importers.samples import sample_text
from fabscope.fabric.io import load_fabric
from fabscope.mapping.commspec import load_comm
from fabscope.measure.hostlists import expand_nodelist
from fabscope.result import Result

TOPO = sample_text("ibnetdiscover.txt")


@pytest.mark.parametrize("text", [
    TOPO.replace('[1](100001) \t"S-', '[1](²) \t"S-', 1),     # a non-ASCII digit where a CA's port GUID goes
    TOPO.replace("lid 1 lmc 0", "lid 1 lmc 99999", 1),        # an LMC that would span 2**99999 LIDs
    TOPO.replace('Switch\t8 "S-0000000000200003"', 'Switch\t99999 "S-0000000000200003"', 1),
])
def test_ibnetdiscover(text):
    refuses_cleanly(lambda t: parse_ibnetdiscover(t, "topo"), text)


@pytest.mark.parametrize("spec", ["/", "/\x00", "x.json", "./nonexistent/f.json"])
def test_fabric_spec_naming_no_readable_file(spec):
    refuses_cleanly(load_fabric, spec)


@pytest.mark.parametrize("doc", [None, [], "x", {"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"},
                                                  "class_labels": [], "pairs": {"cls": [], "bandwidth": []},
                                                  "links": {"\r": None}}])
def test_result_documents(doc):
    refuses_cleanly(Result.from_dict, doc)


def test_result_file_of_another_shape(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"},
                             "class_labels": ["a"], "pairs": {"cls": [0], "bandwidth": [{"x": 1}]}}))
    refuses_cleanly(lambda path: Result.read_json(path).summary(), str(p))
    refuses_cleanly(Result.read_json, str(tmp_path))             # a folder


@pytest.mark.parametrize("text", [
    "%%MatrixMarket matrix array real general\n99999999999999999999999\n1\n",
    "%%MatrixMarket matrix coordinate real general\n4 4 1\n2147483648 2 1048576\n",
    "%%MatrixMarket matrix coordinate real general\n99999999999999999999999 4 5\n1 2 1\n",
    "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 0\n",
    "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n",          # truncated triangle
])
def test_matrix_market(tmp_path, text):
    p = tmp_path / "m.mtx"
    p.write_text(text)
    refuses_cleanly(lambda path: load_comm(path), str(p))


def test_nodelist_with_a_superscript_digit():
    refuses_cleanly(expand_nodelist, "n[²-3]")


def test_error_text_is_always_one_line():
    from fabscope.errors import FabscopeError

    assert len(str(FabscopeError("a\nb\u2028c\x85d")).splitlines()) == 1
    assert os.linesep not in str(FabscopeError("x" + os.linesep))


def test_hostmap_with_a_huge_core_count():
    from fabscope.fabric.importers import build_fabric, parse_hostmap

    topo = parse_ibnetdiscover(TOPO, "topo")
    refuses_cleanly(lambda t: build_fabric(topo, hostmap=parse_hostmap(t, "nodes.csv")),
                    "H-0-0,node01,99999999999999999999999")
    refuses_cleanly(lambda c: build_fabric(topo, cores=c), 10 ** 30)


def test_fabric_file_with_a_huge_torus_side():
    # a torus side of 10**30 made counting its hop classes take all memory (24 GB, then the OOM killer)
    from fabscope.fabric.generators import torus
    from fabscope.fabric.io import from_dict, to_dict

    doc = json.loads(json.dumps(to_dict(torus((2, 3)))))
    doc["dims"] = [2, 10 ** 30]
    refuses_cleanly(lambda d: from_dict(d, "fabric.json").class_labels, doc)
    doc["dims"] = [2, 2]                         # a host at y = 2 lies outside
    refuses_cleanly(lambda d: from_dict(d, "fabric.json").class_labels, doc)


def test_a_bench_line_with_a_count_beyond_64_bits(tmp_path):
    """A pair line's ``iters`` of 10**23 had reached an int64 array in compare's reader (OverflowError)."""
    from fabscope.diagnose.measured import read_source

    lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2, "nnodes": 2, "seed": 1},
             {"type": "ranks", "host": ["a", "b"], "core": [0, 0], "socket": [0, 0]},
             {"type": "test", "test": "random-pairs"},
             {"type": "pair", "test": "random-pairs", "src": 0, "dst": 1, "bytes": 1048576,
              "iters": 10 ** 23, "time": 0.001, "bandwidth": 2.1e9, "scenario": 0},
             {"type": "end", "status": 0, "elapsed": 1.5}]
    path = tmp_path / "run.json"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    refuses_cleanly(read_source, str(path))
    with pytest.raises(Exception, match="'iters' is 100000000000000000000000, not an integer in"):
        read_source(str(path))
