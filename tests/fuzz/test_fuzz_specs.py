"""Fuzz: --fabric specs, --pattern specs (and --comm specs): grammar-shaped and junk."""

from __future__ import annotations

import inspect

import os

from fuzzkit import EDGE_NUMBERS, HOSTILE_NAMES, fuzz_tests, junk_line
from hypothesis import strategies as st

from fabscope.fabric.generators import fat_tree, torus
from fabscope.fabric.io import GENERATORS, PRESETS, load_fabric
from fabscope.fabric.placement import Placement
from fabscope.mapping.commgraph import GENERATORS as COMM
from fabscope.mapping.commspec import load_comm
from fabscope.traffic.spec import PATTERNS, make_traffic

_KEYS = sorted({k for fn in GENERATORS.values() for k in inspect.signature(fn).parameters})
# extreme numbers too: a spec naming a huge fabric is refused by its size estimate before it is built
# (the fuzz runs under a 50 MB limit, so what passes the estimate is built in well under a second)
_num = (st.integers(-2, 6).map(str) | st.sampled_from(["0", "1.5", "1e9", "x", "", "nan", "-0", "3x", "1x0x1"])
        | st.sampled_from(EDGE_NUMBERS) | st.integers(-10 ** 6, 10 ** 12).map(str))
_dims = st.lists(st.integers(-1, 5).map(str) | st.sampled_from(EDGE_NUMBERS) | st.integers(0, 10 ** 6).map(str),
                 min_size=0, max_size=4).map("x".join)


def _limited(fn):
    """``fn`` under FABSCOPE_MAX_MEMORY=50MB (the sizes checks refuse what would take long to build)."""
    def check(x):
        old = os.environ.get("FABSCOPE_MAX_MEMORY")
        os.environ["FABSCOPE_MAX_MEMORY"] = "50MB"
        try:
            fn(x)
        finally:
            if old is None:
                del os.environ["FABSCOPE_MAX_MEMORY"]
            else:
                os.environ["FABSCOPE_MAX_MEMORY"] = old
    return check


def _spec(names: list[str], keys: list[str], value: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    param = st.one_of(st.tuples(st.sampled_from(keys) | st.text(max_size=4), value).map("=".join), value)
    return st.tuples(st.sampled_from(names) | st.text(max_size=6),
                     st.lists(param, max_size=4).map(",".join),
                     st.sampled_from([":", "", "::", ": "])).map(lambda t: t[0] + (t[2] + t[1] if t[1] else ""))


fabric_specs = st.one_of(_spec(sorted(GENERATORS) + sorted(PRESETS), _KEYS, _num | _dims), junk_line)

FT = fat_tree(k=4, levels=2)
PL = Placement.block(FT, 16, 1)
TOR = torus((4, 4))
PT = Placement.block(TOR, 16, 1)
_PKEYS = sorted({k for fn in PATTERNS.values() for k in inspect.signature(fn).parameters} - {"f", "p", "size"})
pattern_specs = st.one_of(_spec(sorted(PATTERNS), _PKEYS, st.integers(-3, 40).map(str) | _num | _dims), junk_line)
_ENGINES = ["dor", "dmodk", "minhop", "ftree", "updn", "minimal", "tables", "ecmp", "random"]
routing_specs = st.one_of(_spec(_ENGINES, ["tie", "roots", "x", ""], st.sampled_from(
    ["simgrid", "first", "s2-0000+s2-0001", "r(0,0)+r(1,1)", "", "+", "nope"] + HOSTILE_NAMES) | _num), junk_line)
comm_specs = st.one_of(_spec(sorted(COMM), ["halo", "size", "periodic", "arity", "degree", "seed", "x"],
                             st.integers(-3, 40).map(str) | _num | _dims | st.sampled_from(["1KiB", "1x1x0"])),
                       junk_line)


def _pattern(spec: str) -> None:
    make_traffic(spec, FT, PL, 1e6, seed=1)
    make_traffic(spec, TOR, PT, 1e6, seed=1)


def _routing(spec: str) -> None:
    import numpy as np

    from fabscope.routing import make_routing

    for f in (FT, TOR):
        make_routing(f, spec).routes(np.array([0, 1]), np.array([5, 9]))


def _size(text: str) -> None:
    from fabscope.units import parse_size

    assert 0 <= parse_size(text) <= 1e15


def _cut(text: str) -> None:
    from fabscope.whatif.cuts import cut_cables

    cut_cables(FT, [text])


test_fabric_spec, test_fabric_spec_nightly = fuzz_tests(fabric_specs, _limited(load_fabric))
test_pattern_spec, test_pattern_spec_nightly = fuzz_tests(pattern_specs, _limited(_pattern))
test_comm_spec, test_comm_spec_nightly = fuzz_tests(comm_specs, _limited(load_comm))
test_routing_spec, test_routing_spec_nightly = fuzz_tests(routing_specs, _routing)
test_size, test_size_nightly = fuzz_tests(
    st.tuples(_num, st.sampled_from(["", "KiB", "MiB", "M", "k", "GB", "x", "e400", "e99999"])).map("".join)
    | junk_line, _size)
test_cut, test_cut_nightly = fuzz_tests(
    st.tuples(st.sampled_from(["s1-0000", "s2-0001", "h0003", '"s1-0001"'] + HOSTILE_NAMES),
              st.sampled_from(["", "[1]", "[0]", "[99999999999999999999]", "[-1]", "[", "]"])).map("".join)
    | junk_line, _cut)
