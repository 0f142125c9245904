"""The compiled engine: flowsim.c built with the system C compiler on first use, loaded by ctypes.

The shared library goes to ``$XDG_CACHE_HOME/fabscope`` (default
``~/.cache/fabscope``) under a name holding the source's hash, so an edited
source is rebuilt; where no compiler is found the pure-Python engine runs
instead (:func:`why_not` says why).  Both run the same algorithm; the tests
hold the compiled one to the Python reference.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache

import numpy as np

from fabscope.dynamic.engine import Outcome, _deadlock
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths
from fabscope.errors import FabscopeError

SOURCE = os.path.join(os.path.dirname(__file__), "flowsim.c")


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fabscope")


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    try:
        with open(SOURCE, "rb") as fh:
            src = fh.read()
    except OSError as err:
        return None, f"cannot read {SOURCE}: {err.strerror}"
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        return None, "no C compiler (gcc or cc) on PATH"
    tag = hashlib.sha256(src).hexdigest()[:16]
    out_dir = _cache_dir()
    lib = os.path.join(out_dir, f"flowsim-{tag}.so")
    if not os.path.exists(lib):
        try:
            os.makedirs(out_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".flowsim-", suffix=".so", dir=out_dir)
            os.close(fd)
            p = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, SOURCE, "-lm"],
                               capture_output=True, text=True, timeout=120)
            if p.returncode:
                os.unlink(tmp)
                return None, f"{cc} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
            os.replace(tmp, lib)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"cannot build the engine in {out_dir}: {err}"
    try:
        dll = ctypes.CDLL(lib)
    except OSError as err:
        return None, f"cannot load {lib}: {err}"
    dll.fs_run.restype = ctypes.c_int
    return dll, ""


#: the engine's code for each way of sharing (engine.run_program's ``sharing``)
SHARING = {"maxmin": 0, "count": 1}


def available() -> bool:
    return _load()[0] is not None


def why_not() -> str:
    return _load()[1]


def _p(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


def run_program(program: Program, paths: Paths, msg_path: np.ndarray, sharing: str = "maxmin") -> Outcome:
    """Run ``program`` in the compiled engine (same contract as engine.run_program)."""
    dll, why = _load()
    if dll is None:
        raise FabscopeError(f"the compiled engine is not available: {why}")
    i64 = np.int64
    m, s = program.n_messages, program.n_steps
    roles = np.r_[program.send_step, program.recv_step].astype(i64)
    order = np.argsort(roles, kind="stable")
    step_ptr = np.r_[0, np.cumsum(np.bincount(roles, minlength=s))].astype(i64)
    step_msg = (order % m).astype(i64)
    has_prev = np.zeros(s, bool)
    has_prev[program.step_next[program.step_next >= 0]] = True
    first = np.flatnonzero(~has_prev).astype(i64)
    keep = [np.ascontiguousarray(x) for x in (
        paths.capacity.astype(float), paths.indptr.astype(i64), paths.res.astype(i64), paths.weight.astype(float),
        paths.cap.astype(float), paths.latency.astype(float), np.asarray(msg_path, i64), program.bytes.astype(float),
        program.send_step.astype(i64), program.recv_step.astype(i64), program.step_next.astype(i64),
        program.step_delay.astype(float), step_ptr, step_msg, first)]
    outs = [np.empty(m) for _ in range(3)] + [np.empty(s) for _ in range(2)] + [np.empty(m)]
    pending = np.empty(s, dtype=i64)
    stats = np.zeros(2, dtype=i64)
    (cap, pptr, pres, pw, pcap, plat, mpath, size, ss, rs, nxt, delay, sptr, smsg, fst) = keep
    rc = dll.fs_run(ctypes.c_int64(len(cap)), _p(cap), _p(pptr), _p(pres), _p(pw), _p(pcap), _p(plat),
                    ctypes.c_int64(m), _p(mpath), _p(size), _p(ss), _p(rs), ctypes.c_int64(s), _p(nxt), _p(delay),
                    _p(sptr), _p(smsg), _p(fst), ctypes.c_int64(len(fst)),
                    *[_p(o) for o in outs], _p(pending), _p(stats), ctypes.c_int(SHARING[sharing]))
    if rc < 0:
        raise MemoryError("the dynamic engine ran out of memory")
    if rc == 1:
        _deadlock(program, pending, outs[3])
    return Outcome(outs[0], outs[1], outs[2], outs[3], outs[4], int(stats[0]), int(stats[1]), outs[5])
