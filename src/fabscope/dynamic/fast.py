"""The compiled engine: flowsim.c and ugal_choice.c built by the system C compiler at first use, via ctypes.

The shared library goes to ``$XDG_CACHE_HOME/fabscope`` (default
``~/.cache/fabscope``) under a name holding the source's hash, so an edited
source is rebuilt; where no compiler is found the pure-Python engine runs
instead (:func:`why_not` says why).  Both give the max-min rates; the compiled
one refills with one progressive filling per event that takes flows in as it
meets them (docs/dynamic.md, "The refill"), and the tests hold it
to the Python reference.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Callable

import numpy as np

from fabscope.dynamic.outcome import Outcome, _deadlock
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths, check_capacity
from fabscope.cbuild import load_library
from fabscope.errors import FabscopeError

SOURCE = os.path.join(os.path.dirname(__file__), "flowsim.c")
#: built with it when beside it: UGAL's choice when a message is posted, and what the two share
#: (an older flowsim.c elsewhere, holding them itself, builds alone: bench_dynamic.py --against)
PARTS = ("ugal_choice.c", "flowsim.h")


def sources() -> list[str]:
    """The files the compiled engine is built from: :data:`SOURCE` and the :data:`PARTS` beside it."""
    folder = os.path.dirname(SOURCE)
    return [SOURCE] + [p for p in (os.path.join(folder, name) for name in PARTS) if os.path.exists(p)]


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    dll, why = load_library(sources(), "flowsim")
    if dll is not None:
        dll.fs_run.restype = ctypes.c_int
    return dll, why


#: the engine's code for each way of sharing (engine.run_program's ``sharing``)
SHARING = {"maxmin": 0, "count": 1}


def available() -> bool:
    return _load()[0] is not None


def why_not() -> str:
    return _load()[1]


def pick(engine: str) -> str:
    """The engine that runs for ``engine`` (``auto``, ``c`` or ``python``): ``c`` where it is asked for
    or allowed and built here, else ``python``; ``c`` asked for and not built is refused, saying why."""
    if engine == "python":
        return "python"
    if available():
        return "c"
    if engine == "c":
        raise FabscopeError(f"the compiled engine is not available: {why_not()}")
    return "python"


def _callback(progress: Callable[[int, float], None] | None, stop: list[BaseException], active: bool):
    """The C callback: calls ``progress``; Ctrl-C or an exception in it stops the engine at the next call.
    NULL (no calls at all) when there is nothing to call and no Ctrl-C to watch for."""
    if progress is None and not active:
        return PROGRESS()

    def call(done: int, t: float) -> int:
        if stop:
            return 1
        if progress is None:
            return 0
        try:
            progress(int(done), float(t))
        except BaseException as err:           # noqa: BLE001 - re-raised by run_program
            stop.append(err)
            return 1
        return 0
    return PROGRESS(call)


def _main_thread() -> bool:
    """Signal handlers can be set (and Ctrl-C arrives) only in the main thread."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def _interrupts_to(stop: list[BaseException], active: bool):
    """While the engine runs, Ctrl-C only records itself (the callback then stops the engine):
    an exception raised inside a ctypes callback would be printed and lost."""
    if not active:
        yield
        return
    old = signal.signal(signal.SIGINT, lambda *_: stop.append(KeyboardInterrupt()))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _p(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


#: the callback's C type: (messages done, simulated seconds) -> non-zero to stop
PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_double)


#: seconds of wall clock between two calls of the callback (how soon Ctrl-C is seen)
INTERVAL = 0.05


class _Choice(ctypes.Structure):
    """flowsim.c's choice_t: each message's path chosen when it is posted (UGAL in time)."""
    _fields_ = [("n_pairs", ctypes.c_int64), ("n_links", ctypes.c_int64), ("local", ctypes.c_int64)] + [
        (name, ctypes.c_void_p) for name in ("pair", "sh_sub", "sh_ptr", "sh_link", "sub_ptr", "sq_ptr",
                                             "sq_link", "sh_seen", "sq_seen", "sh_w", "sub_w", "cost",
                                             "between")]


def _choice(rule, keep: list) -> _Choice:
    """The C view of ``rule`` (a :class:`fabscope.dynamic.ugal.UgalRule`: its arrays, named as choice_t's);
    the arrays it points into are appended to ``keep``, to live while the engine runs."""
    c = _Choice(int(rule.n_pairs), int(rule.n_links), int(rule.local))
    for name, _ in _Choice._fields_[3:]:
        a = np.ascontiguousarray(getattr(rule, name), dtype=np.int8 if name == "between" else
                                 float if name in ("sh_w", "sub_w", "cost") else np.int64)
        keep.append(a)
        setattr(c, name, a.ctypes.data)
    return c


def run_program(program: Program, paths: Paths, msg_path: np.ndarray, sharing: str = "maxmin",
                progress: Callable[[int, float], None] | None = None, every: int = 0,
                interval: float = INTERVAL, choice=None, chosen: np.ndarray | None = None) -> Outcome:
    """Run ``program`` in the compiled engine (same contract as engine.run_program).

    ``progress(messages done, simulated seconds)`` is called every ``every``
    refills (0: not by count) and every ``interval`` seconds of wall clock.
    In the main thread Ctrl-C during the run stops the engine at the next
    call (within about ``interval`` seconds) and raises KeyboardInterrupt here.

    ``choice`` (a :class:`fabscope.dynamic.ugal.UgalRule`): every message picks its pair's
    minimal or Valiant path when it is posted, as ``engine.run_program``'s ``choose`` does
    with the rule's ``choose``; the path each took is written into ``chosen`` (int64, one per
    message; ``msg_path`` is then unused).
    """
    dll, why = _load()
    if dll is None:
        raise FabscopeError(f"the compiled engine is not available: {why}")
    check_capacity(paths.capacity)
    i64 = np.int64
    stop: list[BaseException] = []
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
        paths.cap.astype(float), paths.latency.astype(float), np.array(msg_path, i64), program.bytes.astype(float),
        program.send_step.astype(i64), program.recv_step.astype(i64), program.step_next.astype(i64),
        program.step_delay.astype(float), step_ptr, step_msg, first)]
    outs = [np.empty(m) for _ in range(3)] + [np.empty(s) for _ in range(2)] + [np.empty(m)]
    pending = np.empty(s, dtype=i64)
    stats = np.zeros(5, dtype=i64)
    (cap, pptr, pres, pw, pcap, plat, mpath, size, ss, rs, nxt, delay, sptr, smsg, fst) = keep
    alive: list = []
    rule = None if choice is None else _choice(choice, alive)
    ch = None if rule is None else ctypes.byref(rule)
    if choice is not None and (chosen is None or chosen.dtype != i64 or len(chosen) != m
                               or not chosen.flags.c_contiguous):
        raise ValueError("a choice writes the paths taken into chosen: int64, one per message")
    watch = _main_thread()
    with _interrupts_to(stop, watch):
        rc = dll.fs_run(ctypes.c_int64(len(cap)), _p(cap), _p(pptr), _p(pres), _p(pw), _p(pcap), _p(plat),
                        ctypes.c_int64(m), _p(mpath if ch is None else chosen), _p(size), _p(ss), _p(rs), ctypes.c_int64(s), _p(nxt), _p(delay),
                        _p(sptr), _p(smsg), _p(fst), ctypes.c_int64(len(fst)),
                        *[_p(o) for o in outs], _p(pending), _p(stats), ctypes.c_int(SHARING[sharing]),
                        _callback(progress, stop, watch), ctypes.c_int64(every), ctypes.c_double(interval), ch)
    if stop:                                   # stopped, or Ctrl-C after the last call: not lost
        raise stop[0]
    if rc == -3:
        raise FabscopeError("the compiled engine's refill left a flow without a rate (a bug); "
                            "run with --engine python")
    if rc < 0:
        raise MemoryError("the dynamic engine ran out of memory")
    if rc == 1:
        _deadlock(program, pending, outs[3])
    joins = {"at fill": int(stats[2]), "at check": int(stats[3]), "kept": int(stats[4])}
    return Outcome(outs[0], outs[1], outs[2], outs[3], outs[4], int(stats[0]), int(stats[1]), outs[5], joins)
