"""Fuzz: communication matrices from files, dense CSV and Matrix Market."""

from __future__ import annotations

import os
import tempfile

from fuzzkit import fuzz_tests, text_like

from fabscope.traffic.commfiles import read_comm_file

CSV = ["# bytes sent, row rank to column rank", "0,10,0,5", "5,0,7,0", "0;3;0;1", "1 2 3 0"]
MTX = ["%%MatrixMarket matrix coordinate real general", "% fabscope communication graph", "4 4 5",
       "1 2 1048576", "2 1 1048576", "3 4 65536", "4 3 1e6", "1 4 8"]
MTX_ARRAY = ["%%MatrixMarket matrix array real general", "3 3", "0", "1", "2", "3", "0", "4", "5", "6", "0"]


def _read(suffix: str):
    def check(text: str) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "comm" + suffix)
            with open(p, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(text)
            g = read_comm_file(p)
            assert g.n >= 1 and len(g.src) == len(g.dst) == len(g.bytes)
    return check


test_csv, test_csv_nightly = fuzz_tests(text_like(CSV), _read(".csv"))
test_mtx, test_mtx_nightly = fuzz_tests(text_like(MTX), _read(".mtx"))
test_mtx_array, test_mtx_array_nightly = fuzz_tests(text_like(MTX_ARRAY), _read(".mtx"))


# fabscope reads Matrix Market itself (SciPy's reader crashed the interpreter, a segmentation fault, on a
# malformed file this fuzzing made); on valid files it must read what SciPy writes, in every form SciPy writes
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

import numpy as np  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.just(1)).map(lambda t: (t[0], t[0])),
              elements=st.sampled_from([0.0, 1.0, 8.0, 65536.0, 1e6, 2.5])),
       st.booleans(), st.booleans())
def test_reads_what_scipy_writes(dense, sparse, symmetric):
    import scipy.io
    import scipy.sparse

    from fabscope.traffic.commfiles import read_mtx

    if symmetric:
        dense = np.triu(dense) + np.triu(dense, 1).T
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.mtx")
        scipy.io.mmwrite(p, scipy.sparse.coo_matrix(dense) if sparse else dense,
                         symmetry="symmetric" if symmetric else "general")
        n, i, j, v = read_mtx(p)
    got = np.zeros((n, n))
    np.add.at(got, (i, j), v)
    assert n == len(dense) and np.array_equal(got, dense)
