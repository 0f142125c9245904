"""A result file's columns written from their arrays (fabscope.jsoncolumns): the compiled writer's bytes
are json.dumps's (the reference) and the pure path's, on the columns at the edges of both."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from fabscope import jsoncolumns
from fabscope.jsoncolumns import CHUNK, write_column
from fabscope.result import Result

I64 = np.iinfo(np.int64)

#: (name, column): every value kind the writer treats apart, short, long and past one piece
COLUMNS = {
    "empty float": np.zeros(0),
    "empty int": np.zeros(0, np.int64),
    "one float": np.array([-0.0]),
    "short specials": np.array([0.1, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e300, 5e-324]),
    "specials repeated": np.resize([0.1, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e300, 5e-324, -1e-300, 2.0**20], 70_000),
    "one value": np.full(CHUNK + 5, 3071000000.0),
    "float32": np.resize(np.float32([0.1, 1.5, 3e38, -7e-45]), 9_000),
    "all distinct": np.random.default_rng(3).random(CHUNK + 11),
    "distinct after a run": np.r_[np.full(20_000, 1.0), np.random.default_rng(4).random(20_000)],
    "a value the sample misses, in a later piece": np.r_[np.full(CHUNK * 2 + 3, 1.0), 2.0, np.full(100, 1.0)],
    "more misses than are added one by one": np.r_[np.full(CHUNK, 0.5), np.arange(40.0), np.full(CHUNK, 0.5)],
    "many values, all where the sample does not look": np.where(np.arange(1024 * 40) % 2, np.arange(1024 * 40) / 7, 1.0),
    "a few hundred values": np.random.default_rng(5).integers(0, 600, 300_000) * 0.37,
    "float column of -0.0 and 0.0": np.resize([0.0, -0.0, -0.0], 10_000),
    "int64 extremes": np.resize(np.array([I64.min, I64.max, 0, -1, 1, -10, 10, 999, -1000], np.int64), 50_000),
    "negative ints": -np.arange(CHUNK + 3, dtype=np.int64),
    "link ids": np.arange(3 * CHUNK // 2, dtype=np.int64) * 7 // 6,
    "int16": np.resize(np.int16([1, 4, -32768, 32767]), 10_000),
    "uint32": np.resize(np.uint32([0, 4294967295, 7]), 10_000),
    "uint64 past int64": np.resize(np.array([2**64 - 1, 2**63, 0], np.uint64), 10_000),
    "big-endian ints": np.resize(np.array([1, -2, 300], ">i8"), 10_000),
    "big-endian floats": np.resize(np.array([1.5, -2.25, np.nan], ">f8"), 10_000),
    "every other": np.resize([0.25, 7.0, 9.5], 20_000)[::2],
    "short ints": np.array([5, -3, I64.max]),
    "host names": np.array([f"h{i}" for i in range(CHUNK + 9)]),
    "names, the last piece's name with a quote": np.array([f"h{i}" for i in range(CHUNK + 9)] + ['q"']),
    "names escaped in every piece": np.resize(np.array(["n1", "naïve", "", "\U0001f525", "x\x00"]), 20_000),
    **{f"names and one {special!r}": np.array(["h1", "h22"] * 3000 + [special]) for special in
       ['"', "\\", "\t", "\x1f", "é", "\x7f", "a\x00b", "x\x00", "~ !"]},
    "empty names": np.full(5000, ""),
    "big-endian names": np.resize(np.array(["a", "bc"], ">U2"), 5000),
    "wide names": np.resize(np.array(["w" * 3000, "v"]), 5000),
}


def dumps(a):
    return json.dumps(a.tolist(), separators=(",", ":"))


def written(a, compiled, text=False):
    out = io.StringIO() if text else io.BytesIO()
    write_column(out, a, compiled)
    return out.getvalue() if text else out.getvalue().decode("ascii")


@pytest.fixture(scope="module")
def compiled():
    if not jsoncolumns.available():
        pytest.skip(f"no compiled writer: {jsoncolumns.why_not()}")


@pytest.mark.parametrize("name", COLUMNS)
def test_the_compiled_writer_writes_what_json_dumps_writes(name, compiled):
    a = COLUMNS[name]
    assert written(a, True) == dumps(a)


@pytest.mark.parametrize("name", COLUMNS)
def test_the_pure_path_writes_what_json_dumps_writes(name):
    a = COLUMNS[name]
    assert written(a, False) == dumps(a)


@pytest.mark.parametrize("name", ["specials repeated", "int64 extremes", "all distinct"])
def test_a_text_file_gets_the_same_text(name, compiled):
    """Standard output (``-o -``) is a text file: the pieces go to it as str."""
    a = COLUMNS[name]
    assert written(a, True, text=True) == dumps(a)


def big_result():
    rng = np.random.default_rng(7)
    n, m = 20_000, 3 * CHUNK // 2
    load = rng.choice([3.4e8, 6.8e8, 1.02e9, np.float64(3071000000.0) / 3], m)
    return Result(meta={"kind": "dynamic", "note": "naïve \"q\""}, class_labels=("a", "b"),
                  pairs={"src": rng.permutation(n), "dst": rng.permutation(n), "src_host": np.array([f"h{i}" for i in range(n)]),
                         "cls": rng.integers(0, 2, n).astype(np.int16), "bytes": np.full(n, 2.0**20),
                         "bandwidth": rng.random(n) * 3e9, "time": np.round(rng.random(n), 3)},
                  links={"link": np.arange(m) * 2, "load": load, "capacity": np.full(m, 3071000000.0),
                         "utilisation": load / 3071000000.0})


def test_a_large_result_file_is_json_dumps_of_its_dict(tmp_path):
    r = big_result()
    out = tmp_path / "r.json"
    r.write_json(out)
    assert out.read_bytes() == (json.dumps(r.to_dict(), separators=(",", ":")) + "\n").encode()


def test_a_result_to_standard_output_is_the_file(tmp_path, capsys):
    r = big_result()
    r.write_json(tmp_path / "r.json")
    capsys.readouterr()
    r.write_json("-")
    assert capsys.readouterr().out == (tmp_path / "r.json").read_text()


#: writes a result in a process whose cache has no library and whose compiler does not run
NO_COMPILER = """
import sys
sys.path.insert(0, sys.argv[2])
from test_result_write import big_result
from fabscope import jsoncolumns
big_result().write_json(sys.argv[1])
print(jsoncolumns.available(), jsoncolumns.why_not())
"""


def test_without_a_compiler_the_pure_path_writes_the_same_file(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CC": str(tmp_path / "no-such-cc")}
    p = subprocess.run([sys.executable, "-c", NO_COMPILER, str(tmp_path / "pure.json"), os.path.dirname(__file__)],
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("False cannot build jsoncolumns")
    big_result().write_json(tmp_path / "here.json")
    assert (tmp_path / "pure.json").read_bytes() == (tmp_path / "here.json").read_bytes()
