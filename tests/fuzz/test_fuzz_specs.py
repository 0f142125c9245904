"""Fuzz: --fabric specs, --pattern specs (and --comm specs): grammar-shaped and junk."""

from __future__ import annotations

import inspect

from fuzzkit import fuzz_tests, junk_line
from hypothesis import strategies as st

from fabscope.fabric.generators import fat_tree, torus
from fabscope.fabric.io import GENERATORS, PRESETS, load_fabric
from fabscope.fabric.placement import Placement
from fabscope.mapping.commgraph import GENERATORS as COMM
from fabscope.mapping.commspec import load_comm
from fabscope.traffic.spec import PATTERNS, make_traffic

_KEYS = sorted({k for fn in GENERATORS.values() for k in inspect.signature(fn).parameters})
# small numbers only: a valid spec with large ones is a large fabric, not a parser fault
_num = st.integers(-2, 6).map(str) | st.sampled_from(["0", "1.5", "1e9", "x", "", "nan", "-0", "3x", "1x0x1"])
_dims = st.lists(st.integers(-1, 5).map(str), min_size=0, max_size=4).map("x".join)


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
comm_specs = st.one_of(_spec(sorted(COMM), ["halo", "size", "periodic", "arity", "degree", "seed", "x"],
                             st.integers(-3, 40).map(str) | _num | _dims | st.sampled_from(["1KiB", "1x1x0"])),
                       junk_line)


def _pattern(spec: str) -> None:
    make_traffic(spec, FT, PL, 1e6, seed=1)
    make_traffic(spec, TOR, PT, 1e6, seed=1)


test_fabric_spec, test_fabric_spec_nightly = fuzz_tests(fabric_specs, load_fabric)
test_pattern_spec, test_pattern_spec_nightly = fuzz_tests(pattern_specs, _pattern)
test_comm_spec, test_comm_spec_nightly = fuzz_tests(comm_specs, load_comm)
