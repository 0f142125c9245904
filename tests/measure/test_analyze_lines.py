"""What ``fabscope analyze`` prints for ping-pong runs: the latency model's block, and the
Communication Balance Ratios of runs given as several files."""

from __future__ import annotations

import json
from pathlib import Path

from fabscope.cli import main

SIZES = [2 ** k for k in range(0, 23, 2)]


def _run(path: Path, hosts: list[str], tests: dict[str, float], dst: int = 1) -> str:
    """A fabscope-bench file: ``tests`` maps each test to its bandwidth at the largest size (bytes/s)."""
    lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": len(hosts),
              "nnodes": len(set(hosts)), "mpi_library": "MPICH Version: 4.1", "seed": 1, "yield": "spin", "cpu_mhz": 2000},
             {"type": "ranks", "host": hosts, "core": list(range(len(hosts))), "socket": [0] * len(hosts)}]
    for test, peak in tests.items():
        lines.append({"type": "test", "test": test})
        for b in SIZES:
            t = 1.5e-6 + b / peak
            rec = {"type": "size", "test": test, "src": 0, "dst": dst, "bytes": b, "iters": 100,
                   "bandwidth": b / t}
            if test == "pingpong":
                rec["latency"] = t
            lines.append(rec)
    lines.append({"type": "end", "status": 0, "elapsed": 1.0})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_latency_model_block_is_lines_not_a_literal_backslash_n(tmp_path, capsys):
    f = _run(tmp_path / "pp.jsonl", ["a", "b"], {"pingpong": 3e9})
    assert main(["analyze", f]) == 0
    out = capsys.readouterr().out
    assert "\\n" not in out
    block = out.split("latency model alpha + m/beta per regime:\n", 1)[1].splitlines()
    assert "sizes [B]" in block[0] and block[1].split()[1] == ".."


def test_fourth_balance_ratio_from_mbw_in_files_of_its_own(tmp_path, capsys):
    intra = _run(tmp_path / "intra.jsonl", ["a", "a"], {"pingpong": 6e9, "bw": 6e9, "bibw": 8e9})
    inter = _run(tmp_path / "inter.jsonl", ["a", "b"], {"pingpong": 3e9, "bw": 3e9, "bibw": 4e9})
    intra_mbw = _run(tmp_path / "intra-mbw.jsonl", ["a"] * 4, {"mbw": 9e9}, dst=2)
    inter_mbw = _run(tmp_path / "inter-mbw.jsonl", ["a", "a", "b", "b"], {"mbw": 3e9}, dst=2)
    assert main(["analyze", intra, inter, intra_mbw, inter_mbw]) == 0
    out = capsys.readouterr().out.split("Communication Balance Ratios", 1)[1]
    got = [ln.split(":")[0].strip() for ln in out.splitlines() if ln.strip().startswith("CBR-")]
    assert got == ["CBR-latency", "CBR-bandwidth", "CBR-bi-bandwidth", "CBR-multi-pair bandwidth"]
    mbw = next(ln for ln in out.splitlines() if "multi-pair" in ln)
    b = 65536
    assert f"{b} B {(1.5e-6 + b / 3e9) / (1.5e-6 + b / 9e9):.2f}" in mbw      # intra's mbw over inter's
