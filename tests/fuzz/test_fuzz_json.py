"""Fuzz: fabric JSON and result JSON, as documents with parts changed and as raw text."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from typing import Any, Callable

from fuzzkit import fuzz_tests, junk_line
from hypothesis import strategies as st

from fabscope.fabric.generators import fat_tree, torus
from fabscope.fabric.importers.samples import sample_text
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts
from fabscope.fabric.io import from_dict, read_json, to_dict
from fabscope.fabric.placement import Placement
from fabscope.model.simulate import simulate
from fabscope.result import Result
from fabscope.traffic.spec import make_traffic

_imported = build_fabric(parse_ibnetdiscover(sample_text("ibnetdiscover.txt")), parse_lfts(sample_text("opensm-lfts.dump")))
FABRICS = [json.loads(json.dumps(to_dict(f))) for f in (fat_tree(k=2, levels=2), torus((2, 3)), _imported)]
_f = fat_tree(k=2, levels=2)
_p = Placement.block(_f, 4, 1)
RESULT = json.loads(json.dumps(simulate(_f, _p, make_traffic("random-pairs", _f, _p, 1e6)).to_dict()))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10 ** 6) | st.sampled_from([2 ** 63, -(2 ** 63) - 1, 10 ** 30, -1])
    | st.sampled_from(["fast", "", "1e400", "NaN"])
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=8)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list) and doc:
        for i in {0, len(doc) - 1}:
            out += _paths(doc[i], prefix + (i,))
    return out


@st.composite
def mutated_doc(draw: Callable, docs: list[dict]) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(docs)))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            doc = draw(json_values) if draw(st.integers(0, 9)) == 0 else doc
            continue
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "grow", "shrink"]))
        if op == "delete" and isinstance(parent, dict):
            del parent[key]
        elif op == "grow" and isinstance(parent[key], list):
            parent[key] = parent[key] + [draw(json_values)]
        elif op == "shrink" and isinstance(parent[key], list):
            parent[key] = parent[key][:-1]
        else:
            parent[key] = draw(json_values)
    return doc


def _read_fabric_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "fabric.json")
        with open(p, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        read_json(p)


def _read_result_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "run.json")
        with open(p, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        Result.read_json(p).summary()


def _fabric(doc: Any) -> None:
    f = from_dict(doc, "fabric.json")
    f.class_labels                       # a fabric that loads can say how it classes pairs


def _result(doc: Any) -> None:
    Result.from_dict(doc).summary()


def _texts(docs: list[dict]) -> st.SearchStrategy[str]:
    return st.one_of(mutated_doc(docs).map(lambda d: json.dumps(d, allow_nan=True)),
                     st.tuples(st.sampled_from([json.dumps(d) for d in docs]), st.integers(0, 4000))
                     .map(lambda t: t[0][: t[1]]),
                     st.lists(junk_line, max_size=4).map("\n".join),
                     st.tuples(st.sampled_from(["[", '{"a":', '{"pairs":[']), st.integers(1, 100_000))
                     .map(lambda t: t[0] * t[1]),
                     mutated_doc(docs).map(lambda d: json.dumps(d, allow_nan=True)).map(
                         lambda t: t.replace("1", "1e400", 1).replace("0", "-1", 1)))


test_fabric_json, test_fabric_json_nightly = fuzz_tests(mutated_doc(FABRICS), _fabric)
test_fabric_text, test_fabric_text_nightly = fuzz_tests(_texts(FABRICS), _read_fabric_text, default=100)
test_result_json, test_result_json_nightly = fuzz_tests(mutated_doc([RESULT]), _result)
test_result_text, test_result_text_nightly = fuzz_tests(_texts([RESULT]), _read_result_text, default=100)
