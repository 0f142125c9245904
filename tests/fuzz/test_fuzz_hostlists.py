"""Fuzz: host files ($PBS_NODEFILE, 'host slots=N', 'host:N') and Slurm's compressed node lists."""

from __future__ import annotations

from fuzzkit import fuzz_tests, junk_line, text_like
from hypothesis import strategies as st

from fabscope.measure.hostlists import expand_nodelist, job_hosts, parse_hostfile

PBS = ["# PBS node file", "node0001", "node0001", "node0002 slots=4", "node0003:2", "gpu7 max_slots=8",
       "n1.cluster.example.org", "  node0004  # comment"]


def _nodelist_piece() -> st.SearchStrategy[str]:
    num = st.integers(0, 40).map(str) | st.sampled_from(["", "-", "007", "99999999999999999999", "a", "1-", "-3"])
    rng = st.tuples(num, st.sampled_from(["-", ",", ""]), num).map("".join)
    inner = st.lists(rng, min_size=0, max_size=3).map(",".join)
    return st.tuples(st.sampled_from(["node", "gpu", "r", "", "n-"]), st.sampled_from(["[", "", "[["]), inner,
                     st.sampled_from(["]", "", "]]"]), st.sampled_from(["", "-n", "[1-2]", "x"])).map("".join)


nodelists = st.one_of(st.lists(_nodelist_piece(), min_size=1, max_size=4).map(",".join), junk_line)

test_hostfile, test_hostfile_nightly = fuzz_tests(text_like(PBS), lambda t: parse_hostfile(t.splitlines()))
test_nodelist, test_nodelist_nightly = fuzz_tests(nodelists, expand_nodelist)
test_slurm_env, test_slurm_env_nightly = fuzz_tests(
    st.fixed_dictionaries({"SLURM_JOB_NODELIST": nodelists,
                           "SLURM_NTASKS_PER_NODE": st.sampled_from(["4", "4(x2)", "", "x", "0", "-1"]) | junk_line}),
    job_hosts)


def test_a_huge_range_is_refused_not_expanded():
    import pytest

    from fabscope.errors import MeasureError

    with pytest.raises(MeasureError, match=r"range '0-99999999999999999999' names more than 1000000 nodes"):
        expand_nodelist("node[0-99999999999999999999]")


def test_a_product_of_ranges_is_counted_before_it_is_expanded():
    # each range is under the bound, their product (10^8 names) ran on without end
    import time

    import pytest

    from fabscope.errors import MeasureError

    t0 = time.perf_counter()
    with pytest.raises(MeasureError, match=r"names 100,000,000 nodes; at most 1,000,000"):
        expand_nodelist("r[0-999]-n[0-999]-c[0-99]")
    with pytest.raises(MeasureError, match=r"names 1,000,002 nodes"):
        expand_nodelist("a[1-500001],b[1-500001]")
    assert time.perf_counter() - t0 < 1
