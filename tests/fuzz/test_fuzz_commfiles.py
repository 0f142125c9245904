"""Fuzz: communication matrices from files, dense CSV and Matrix Market."""

from __future__ import annotations

import os
import tempfile

from fuzzkit import fuzz_tests, text_like

from fabscope.mapping.commfiles import read_comm_file

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
