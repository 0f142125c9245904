"""The importer refuses what cannot be a fabric, at the line and LID at fault, and stops early on junk."""

from __future__ import annotations

import os
import random
import time
import tracemalloc

import pytest

from fabscope.errors import FabricError
from fabscope.fabric.importers import (build_fabric, import_fabric, parse_ibnetdiscover, parse_lfts,
                                       read_ibnetdiscover, read_lfts)

DATA = os.path.join(os.path.dirname(__file__), "data")
TOPO = os.path.join(DATA, "ibnetdiscover.small.txt")
TOPO_P = os.path.join(DATA, "ibnetdiscover-p.small.txt")
LFTS = os.path.join(DATA, "opensm-lfts.small.minhop")


def lines_of(path):
    with open(path) as fh:
        return fh.read().splitlines()


def _ca_port_line(lines, ca="H-0-1"):
    """Index of the port line under CA ``ca``'s header (default form)."""
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Ca") and f'"{ca}"' in ln)
    return head + 1


@pytest.mark.parametrize("lid", [70000, 49153, 0xC000, 0])
def test_ca_lid_outside_unicast_range_is_refused_by_line(lid):
    lines = lines_of(TOPO)
    i = _ca_port_line(lines)
    old = lines[i].split("# lid ")[1].split()[0]
    lines[i] = lines[i].replace(f"# lid {old} ", f"# lid {lid} ")
    with pytest.raises(FabricError) as e:
        parse_ibnetdiscover("\n".join(lines), "topo.txt")
    msg = str(e.value)
    assert msg.startswith(f"topo.txt line {i + 1}: CA 'H-0-1' port 1 has LID {lid}; unicast LIDs are 1..0xBFFF")
    assert "\n" not in msg


def test_switch_lid_out_of_range_and_p_form():
    lines = lines_of(TOPO)
    i = next(k for k, ln in enumerate(lines) if ln.startswith("Switch"))
    lines[i] = lines[i].replace("lid 6 lmc", "lid 70000 lmc")
    with pytest.raises(FabricError, match=rf"topo.txt line {i + 1}: switch 'L3' has LID 70000"):
        parse_ibnetdiscover("\n".join(lines), "topo.txt")
    p = lines_of(TOPO_P)
    p[0] = p[0].replace("CA    22  1", "CA 70000  1")
    with pytest.raises(FabricError, match=r"p.txt line 1: CA 'H-3-3' port 1 has LID 70000"):
        parse_ibnetdiscover("\n".join(p), "p.txt")


def test_two_cas_with_one_lid_name_both_lines():
    lines = lines_of(TOPO)
    i, j = _ca_port_line(lines, "H-0-1"), _ca_port_line(lines, "H-0-2")
    lid_i = lines[i].split("# lid ")[1].split()[0]
    lid_j = lines[j].split("# lid ")[1].split()[0]
    lines[j] = lines[j].replace(f"# lid {lid_j} ", f"# lid {lid_i} ")
    with pytest.raises(FabricError) as e:
        parse_ibnetdiscover("\n".join(lines), "topo.txt")
    first, second = sorted((i, j))
    msg = str(e.value)
    assert f"line {second + 1}: CA " in msg and f"has LID {lid_i}, which CA " in msg and f"(line {first + 1})" in msg


def test_switch_without_forwarding_table_is_refused():
    text = "\n".join(lines_of(LFTS))
    # drop the table of switch S1
    blocks = text.split("Unicast lids")
    kept = "Unicast lids".join(b for b in blocks if "('S1')" not in b)
    with pytest.raises(FabricError) as e:
        build_fabric(read_ibnetdiscover(TOPO), parse_lfts(kept, "lfts"))
    msg = str(e.value)
    assert msg.startswith("lfts: no forwarding table for switch 'S1' (LID 9, ")
    assert "ibnetdiscover.small.txt line " in msg


def test_cli_import_names_the_lid(tmp_path, capsys):
    from fabscope.cli import main

    lines = lines_of(TOPO)
    i = _ca_port_line(lines)
    old = lines[i].split("# lid ")[1].split()[0]
    lines[i] = lines[i].replace(f"# lid {old} ", "# lid 70000 ")
    topo = tmp_path / "topo.txt"
    topo.write_text("\n".join(lines) + "\n")
    assert main(["fabric", "import", "--ibnetdiscover", str(topo), "-o", str(tmp_path / "f.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"line {i + 1}" in err and "LID 70000" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topo.txt"]


def _random_file(path, megabytes: int, seed: int, newlines: bool) -> None:
    rnd = random.Random(seed)
    with open(path, "wb") as fh:
        for _ in range(megabytes):
            block = bytearray(rnd.randbytes(1 << 20))
            if not newlines:
                block = block.replace(b"\n", b"x")
            fh.write(block)
    with open(path, "r+b") as fh:      # the first byte is never a line break, so the fault is on line 1
        fh.write(b"\xff")


@pytest.mark.parametrize("newlines", [True, False])
def test_random_bytes_refused_at_line_1_quickly_in_bounded_memory(tmp_path, newlines):
    # 32 MiB stands in for a 200 MB file: reading stops at line 1 either way
    path = tmp_path / "random.bin"
    _random_file(path, 32, 8, newlines)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(FabricError) as e:
        read_ibnetdiscover(str(path))
    took = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert str(e.value).startswith(f"{path} line 1: ")
    assert took < 1.0, f"{took:.2f} s to refuse random bytes"        # generous: a loaded CI machine
    assert peak < 1 << 20, f"peak {peak} bytes while refusing random bytes"
    with pytest.raises(FabricError, match=r"line 1: "):
        read_lfts(str(path))
    with pytest.raises(FabricError, match=r"line 1: "):
        import_fabric(str(path))


def test_import_still_reads_both_forms():
    a = import_fabric(TOPO, LFTS)
    b = import_fabric(TOPO_P, LFTS)
    assert a.n_hosts == b.n_hosts == 16 and a.lft is not None
