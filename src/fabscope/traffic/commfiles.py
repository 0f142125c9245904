"""Communication matrices from files: dense CSV, Matrix Market, and an application kernel's run.

Read here, below both the dynamic engine (``replay:FILE``) and mapping (``--comm FILE``), which
stand on it.

Entry ``(i, j)`` is the bytes rank ``i`` sent to rank ``j``.  The PMPI
library (``csrc/pmpi``) writes Matrix Market files: ``comm.mtx`` with the
bytes and ``comm.msgs.mtx`` beside it with the message counts, which
:func:`read_comm_file` picks up when present.  fabscope-bench's output of an
application kernel (``fabscope measure halo2d --out run.jsonl``: ``.jsonl``)
gives the bytes and messages per iteration the kernel counted itself
(:mod:`fabscope.measure.apps`).

>>> import os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "m.csv")
>>> _ = open(p, "w").write("0,10,0\\n5,0,0\\n0,0,0\\n")
>>> g = read_comm_file(p)
>>> g.n, g.src.tolist(), g.dst.tolist(), g.bytes.tolist()
(3, [0, 1], [1, 0], [10.0, 5.0])
>>> write_mtx(os.path.join(os.path.dirname(p), "m.mtx"), g)
>>> read_comm_file(os.path.join(os.path.dirname(p), "m.mtx")).bytes.tolist()
[10.0, 5.0]
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.errors import SchemaError, TrafficError
from fabscope.mapping.commgraph import CommGraph
from fabscope.textio import read_lines

if TYPE_CHECKING:
    from fabscope.measure.apps import AppRun

__all__ = ["one_app_run", "read_app_comm", "read_comm_file", "read_csv_matrix", "read_mtx", "write_mtx"]


def _check_square(path: str, shape: tuple[int, int]) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise TrafficError(f"{path}: communication matrix is {shape[0]}x{shape[1] if len(shape) > 1 else 1}, "
                           "it must be square (ranks x ranks)")
    if shape[0] == 0:
        raise TrafficError(f"{path}: communication matrix is empty")
    return int(shape[0])


def read_csv_matrix(path: str) -> CommGraph:
    """A dense ``n x n`` bytes matrix, comma, semicolon or white-space separated; ``#`` comments."""
    rows: list[list[float]] = []
    width = None
    for ln, line in read_lines(path, "communication matrix", TrafficError):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cells = [c for c in line.replace(";", ",").replace(",", " ").split()]
        if width is None:
            width = len(cells)
            if width * width > MAX_DENSE:
                raise TrafficError(f"{path}:{ln}: a dense {width}x{width} matrix is larger than fabscope "
                                   f"reads ({MAX_DENSE:,} entries at most; write it as Matrix Market)")
        if len(rows) >= width:
            raise TrafficError(f"{path}:{ln}: more than {width} rows; the matrix must be square")
        try:
            rows.append([float(c) for c in cells])
        except ValueError:
            raise TrafficError(f"{path}:{ln}: {line[:40]!r} is not a row of numbers") from None
    if not rows:
        raise TrafficError(f"{path}: communication matrix is empty")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise TrafficError(f"{path}: rows have {min(widths)} to {max(widths)} entries; the matrix must be square")
    a = np.array(rows)
    n = _check_square(path, a.shape)
    return _from_dense(path, n, a)


def _from_dense(path: str, n: int, a: np.ndarray) -> CommGraph:
    _check_values(path, a.ravel(), np.argwhere(a < 0)[:1].tolist())
    i, j = np.nonzero(a)
    return CommGraph.from_coo(os.path.basename(path), n, i, j, a[i, j], params={"file": path})


def _check_values(path: str, v: np.ndarray, where: list) -> None:
    if np.any(~np.isfinite(v)):
        raise TrafficError(f"{path}: communication matrix has a non-finite entry")
    if np.any(v < 0):
        at = f" at row {where[0][0] + 1}, column {where[0][1] + 1}" if where else ""
        raise TrafficError(f"{path}: communication matrix has a negative entry{at}; bytes cannot be negative")


#: the largest communication matrix read: ranks, and entries of a dense ("array") file
MAX_RANKS = 1 << 24
MAX_DENSE = 1 << 26


def _mm_int(path: str, n: int, tok: str, what: str) -> int:
    if not (tok.isascii() and tok.isdecimal()) or len(tok) > 12:
        raise TrafficError(f"{path} line {n}: {what} {tok[:20]!r} is not a non-negative integer")
    return int(tok)


def read_mtx(path: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(n, rows, cols, values)`` of a Matrix Market file (0-based), checked square and non-negative.

    Read here, a line at a time, rather than by SciPy's reader, which crashed
    the interpreter on some malformed files.  Takes the ``coordinate`` (real,
    integer or pattern) and ``array`` (real or integer) forms, ``general`` or
    ``symmetric``.
    """
    lines = read_lines(path, "Matrix Market file", TrafficError)
    head = next(lines, (1, ""))[1].split()
    if len(head) != 5 or head[0].lower() != "%%matrixmarket" or head[1].lower() != "matrix":
        raise TrafficError(f"{path} line 1: not a Matrix Market file (expected "
                           "'%%MatrixMarket matrix coordinate real general')")
    fmt, fld, sym = (h.lower() for h in head[2:])
    if fmt not in ("coordinate", "array") or fld not in ("real", "integer", "double", "pattern") \
            or sym not in ("general", "symmetric") or (fmt == "array" and fld == "pattern"):
        raise TrafficError(f"{path} line 1: Matrix Market {fmt} {fld} {sym} is not a communication matrix "
                           "(take coordinate or array, real or integer, general or symmetric)")
    size: list[int] | None = None
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    count = ar = ac = 0
    for n, line in lines:
        s = line.strip()
        if not s or s.startswith("%"):
            continue
        tok = s.split()
        if size is None:
            want = 3 if fmt == "coordinate" else 2
            if len(tok) != want:
                raise TrafficError(f"{path} line {n}: the size line should hold {want} numbers, got {s[:40]!r}")
            size = [_mm_int(path, n, t, "size") for t in tok]
            _check_square(path, (size[0], size[1]))
            if size[0] > MAX_RANKS or (fmt == "array" and size[0] * size[1] > MAX_DENSE):
                raise TrafficError(f"{path}: a {size[0]}x{size[1]} {fmt} matrix is larger than fabscope maps "
                                   f"(at most {MAX_RANKS} ranks, {MAX_DENSE} dense entries)")
            continue
        dim = size[0]
        total = _mm_total(fmt, sym, size)
        if count >= total:
            raise TrafficError(f"{path} line {n}: more entries than the {total} the size line declares")
        if fmt == "coordinate":
            want = 2 if fld == "pattern" else 3
            if len(tok) != want:
                raise TrafficError(f"{path} line {n}: expected 'row column{'' if want == 2 else ' value'}', "
                                   f"got {s[:40]!r}")
            r, c = _mm_int(path, n, tok[0], "row") - 1, _mm_int(path, n, tok[1], "column") - 1
            if not (0 <= r < dim and 0 <= c < dim):
                raise TrafficError(f"{path} line {n}: entry ({r + 1}, {c + 1}) lies outside the {dim}x{dim} matrix")
            v = 1.0 if fld == "pattern" else _mm_float(path, n, tok[2])
        else:
            if len(tok) != 1:
                raise TrafficError(f"{path} line {n}: expected one value a line, got {s[:40]!r}")
            r, c = ar, ac                   # column-major; symmetric: the lower triangle only
            ar += 1
            if ar == dim:
                ac += 1
                ar = ac if sym == "symmetric" else 0
            v = _mm_float(path, n, tok[0])
        count += 1
        if fmt == "array" and v == 0.0:
            continue
        rows.append(r)
        cols.append(c)
        vals.append(v)
        if sym == "symmetric" and r != c:
            rows.append(c)
            cols.append(r)
            vals.append(v)
    if size is None:
        raise TrafficError(f"{path}: Matrix Market file without a size line (empty?)")
    total = _mm_total(fmt, sym, size)
    if count != total:
        raise TrafficError(f"{path}: the size line declares {total} entries, the file has {count} (truncated?)")
    i, j, v = np.array(rows, np.int64), np.array(cols, np.int64), np.array(vals, np.float64)
    bad = np.flatnonzero(v < 0)
    _check_values(path, v, [[int(i[bad[0]]), int(j[bad[0]])]] if len(bad) else [])
    return size[0], i, j, v


def _mm_total(fmt: str, sym: str, size: list[int]) -> int:
    """Entries the size line declares (a symmetric array holds its lower triangle)."""
    if fmt == "coordinate":
        return size[2]
    return size[0] * (size[0] + 1) // 2 if sym == "symmetric" else size[0] * size[0]


def _mm_float(path: str, n: int, tok: str) -> float:
    try:
        return float(tok)
    except ValueError:
        raise TrafficError(f"{path} line {n}: {tok[:20]!r} is not a number") from None


def one_app_run(path: str, test: str | None = None, error: type[Exception] = SchemaError) -> AppRun:
    """The one kernel run of fabscope-bench output ``path`` (or the run of kernel ``test``); a file with
    none, or with several kernels, is refused with ``error`` in one line."""
    from fabscope.measure.apps import APP_TESTS, app_runs
    from fabscope.measure.parse import read_run

    apps = [a for a in app_runs(read_run(path)) if test is None or a.test == test]
    if not apps:
        raise error(f"{path}: no application record (an 'app' line and its 'app-traffic' line) in this "
                    f"fabscope-bench output; measure one of {', '.join(APP_TESTS)}")
    if len(apps) > 1:
        raise error(f"{path}: the runs of {len(apps)} kernels ({', '.join(a.test for a in apps)}); "
                    "give one kernel's run")
    return apps[0]


def read_app_comm(path: str, test: str | None = None) -> CommGraph:
    """The graph of one iteration of an application kernel's run (fabscope-bench JSON lines): the
    bytes and messages each rank sent each other rank, divided by the iterations counted.

    The file must hold one kernel's traffic, unless ``test`` names which.
    """
    run = one_app_run(path, test, TrafficError)
    g = run.graph(os.path.basename(path))
    g.params["file"] = path
    return g


def read_comm_file(path: str) -> CommGraph:
    """A graph from ``.csv`` or ``.mtx`` (with its ``.msgs.mtx`` companion if there is one), or from
    an application kernel's ``.jsonl`` run (:func:`read_app_comm`)."""
    if not os.path.isfile(path):
        raise TrafficError(f"{path}: no such communication matrix file")
    if path.endswith(".csv") or path.endswith(".txt"):
        return read_csv_matrix(path)
    if path.endswith(".jsonl"):
        return read_app_comm(path)
    n, i, j, v = read_mtx(path)
    msgs = None
    companion = path[:-4] + ".msgs.mtx" if path.endswith(".mtx") else None
    if companion and os.path.isfile(companion) and not path.endswith(".msgs.mtx"):
        n2, i2, j2, m2 = read_mtx(companion)
        if n2 != n:
            raise TrafficError(f"{companion}: {n2} ranks, but {path} has {n}")
        lut = {(a, b): c for a, b, c in zip(i2.tolist(), j2.tolist(), m2.tolist())}
        msgs = np.array([lut.get((a, b), 0.0) for a, b in zip(i.tolist(), j.tolist())])
    return CommGraph.from_coo(os.path.basename(path), n, i, j, v, msgs, params={"file": path})


def write_mtx(path: str, g: CommGraph, field: str = "bytes") -> None:
    """Write the graph's ``bytes`` (or ``msgs``) as a Matrix Market coordinate file, atomically."""
    vals = g.bytes if field == "bytes" else g.msgs
    with atomic_open(path) as fh:
        fh.write("%%MatrixMarket matrix coordinate real general\n")
        fh.write(f"% fabscope communication graph {g.name}: {field} sent from row rank to column rank\n")
        fh.write(f"{g.n} {g.n} {g.n_edges}\n")
        for s, d, b in zip(g.src.tolist(), g.dst.tolist(), vals.tolist()):
            fh.write(f"{s + 1} {d + 1} {b:.17g}\n")
