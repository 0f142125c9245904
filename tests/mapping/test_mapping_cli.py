"""The permute/map/place commands in-process; bad input gives one line and no file."""

import io
import sys

import pytest

from fabscope.cli import main


def _run(argv, capsys, stdin=""):
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        rc = main(argv)
    finally:
        sys.stdin = old
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_permute_pbs_nodefile(capsys):
    pbs = "".join(f"node{n:04d}\n" for n in range(64, 48, -1) for _ in range(8))   # 16 nodes x 8, descending
    rc, out, err = _run(["permute", "--fabric", "itasca", "--comm", "stencil3d:4x4x8"], capsys, pbs)
    assert rc == 0
    lines = out.split()
    assert len(lines) == 128 and sorted(set(lines)) == sorted(set(pbs.split()))
    assert all(lines.count(h) == 8 for h in set(lines))
    assert "hops per byte" in err


def test_map_compare_and_rankfile(tmp_path, capsys):
    out_file = tmp_path / "ranks.txt"
    rc, out, _ = _run(["map", "--fabric", "itasca", "--nodes", "node[0001-0016]", "--ppn", "8",
                       "--comm", "stencil3d:4x4x8", "--compare", "block,cyclic,random",
                       "--format", "rankfile", "-o", str(out_file)], capsys)
    assert rc == 0
    from fabscope.mapping.outputs import detect_openmpi, launch_command

    assert "block" in out and "random" in out
    assert launch_command("rankfile", str(out_file), 128, detect_openmpi()) in out   # the installed Open MPI's form
    assert out_file.read_text().startswith("rank 0=node00")


def test_place(tmp_path, capsys):
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("".join(f"node{n:04d}\n" for n in (1, 2, 3, 40, 200)))
    rc, out, _ = _run(["place", "--fabric", "itasca", "--nodes", str(nodes)], capsys)
    assert rc == 0 and "5 nodes" in out and "fragmented" in out


@pytest.mark.parametrize("argv,msg", [
    (["map", "--fabric", "itasca", "--nodes", "node[0001-0002]", "--ppn", "8", "--comm", "ring:64"],
     "64 ranks, but the job has 16 slots"),
    (["map", "--fabric", "itasca", "--nodes", "node[0001-0002],gpu9", "--comm", "ring:8"],
     "host 'gpu9' of the node list is not in fabric 'itasca'"),
    (["map", "--fabric", "torus:8x8x16", "--comm", "stencil3d:16x16x32"],
     "8192 ranks at 4 per node need 2048 nodes"),
])
def test_bad_input_one_line_no_file(tmp_path, capsys, argv, msg):
    out_file = tmp_path / "out.txt"
    rc, out, err = _run(argv + ["-o", str(out_file)], capsys)
    assert rc == 1
    assert msg in err and len(err.strip().splitlines()) == 1
    assert not out_file.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content,msg", [
    ("0,1,2\n1,0,2\n", "square"),
    ("0,-1\n1,0\n", "negative"),
    ("0,1\n1,0\n", "2 ranks, but the job has 1 slots"),
])
def test_bad_matrix(tmp_path, capsys, content, msg):
    m = tmp_path / "m.csv"
    m.write_text(content)
    out_file = tmp_path / "out.txt"
    rc, _, err = _run(["map", "--fabric", "itasca", "--nodes", "node0001", "--ppn", "1", "--comm", str(m),
                       "-o", str(out_file)], capsys)
    assert rc == 1 and msg in err and not out_file.exists()
