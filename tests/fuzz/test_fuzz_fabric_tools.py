"""Fuzz: ibnetdiscover (both forms), OpenSM's opensm-lfts.dump, dump_fts, ibroute, host maps; then the import."""

from __future__ import annotations

import os
import tempfile

from fuzzkit import fuzz_tests, text_like

from fabscope.fabric.importers import (build_fabric, parse_hostmap, parse_ibnetdiscover, parse_lfts,
                                       read_ibnetdiscover, read_lfts)

DATA = os.path.join(os.path.dirname(__file__), "..", "fabric", "data")


def _lines(name: str) -> list[str]:
    with open(os.path.join(DATA, name)) as fh:
        return fh.read().splitlines()


TOPO = parse_ibnetdiscover("\n".join(_lines("ibnetdiscover.small.txt")), "topo")


def _import_topology(text: str) -> None:
    build_fabric(parse_ibnetdiscover(text, "topo"))


def _import_tables(text: str) -> None:
    build_fabric(TOPO, parse_lfts(text, "lfts"))


def _through_files(text: str) -> None:
    """The streaming readers, on the same text written to a file."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "f.txt")
        with open(p, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        for read in (read_ibnetdiscover, read_lfts):
            try:
                read(p)
            except Exception as err:          # each reader on its own: one refusing must not hide the other
                from fabscope.errors import FabscopeError

                if not isinstance(err, FabscopeError):
                    raise
                assert "\n" not in str(err)


test_ibnetdiscover, test_ibnetdiscover_nightly = fuzz_tests(
    text_like(_lines("ibnetdiscover.small.txt")), _import_topology)
test_ibnetdiscover_p, test_ibnetdiscover_p_nightly = fuzz_tests(
    text_like(_lines("ibnetdiscover-p.small.txt")), _import_topology)
test_opensm_lfts, test_opensm_lfts_nightly = fuzz_tests(text_like(_lines("opensm-lfts.small.minhop")), _import_tables)
test_dump_fts, test_dump_fts_nightly = fuzz_tests(text_like(_lines("dump_fts.small.full.txt")), _import_tables)
test_ibroute, test_ibroute_nightly = fuzz_tests(text_like(_lines("ibroute.lid2.txt")),
                                                lambda t: parse_lfts(t, "ibroute"))
test_read_files, test_read_files_nightly = fuzz_tests(
    text_like(_lines("ibnetdiscover.small.txt")[:40] + _lines("opensm-lfts.small.minhop")[:40]), _through_files,
    default=100)
test_hostmap, test_hostmap_nightly = fuzz_tests(
    text_like([f"H-{i}-{j},node{4 * i + j + 1:02d},8" for i in range(4) for j in range(4)]
              + ["0x0000000000100001 node99", "MT25408 ConnectX node98 4"]),
    lambda t: build_fabric(TOPO, hostmap=parse_hostmap(t, "nodes.csv")))
