"""The diagnosis's two inner loops, compiled: every unit's best gain in every draw of noise (the null
calibration), and what cutting a unit does to the pairs that cross it (:func:`effects`).

:func:`fabscope.diagnose.calibration.null_calibration` asks, for each of ``R`` draws of residuals from
the noise model, every unit's change of the pairs' negative log-likelihood under each factor of a grid,
and keeps each unit's minimum.  That is entries (unit, pair) x grid x draws evaluations of the mixture's
likelihood: 1.7e9 of them on 21,960 pairs of the 2,197-host tree, most of the diagnosis's time in numpy
(docs/diagnose.md, *Speed*).  Here the likelihood is a table (:func:`nll_table`: steps of a 64th of the
narrower component's spread, read with linear interpolation; within 1e-4 nat of the exact value per
pair) and the loop runs in C (``unitgains.c``, built on first use by :mod:`fabscope.cbuild`), all draws
of an entry while its row of effects is in cache.  :func:`unit_minima_reference` is the same sums in
numpy, the reference the tests hold the C loop to; it runs where no compiler is found.
:func:`effects` is the compiled path of :meth:`.fit.Fit.effects`, whose numpy path
(:func:`.scan.water_levels`) is its reference.

>>> from fabscope.diagnose.noise import NoiseModel
>>> nm = NoiseModel(0.0, 0.05, 0.1, -0.7, 0.35)
>>> table = nll_table(nm)
>>> x = np.array([-0.31, -0.02, 0.0, 0.04])
>>> bool(np.abs(table_nll(table, x) - nm.nll(x)).max() < 1e-4)
True
>>> unit = np.array([0, 0, 1]); pair = np.array([0, 1, 1])
>>> D = np.array([[0.3, 0.1], [0.3, 0.0], [0.2, 0.1]], np.float32)
>>> E = np.array([[-0.3], [-0.1]])                       # 2 pairs, 1 draw
>>> best, arg = unit_minima(unit, pair, D, E, table, 2)
>>> ref = unit_minima_reference(unit, pair, D, E, table, 2)
>>> bool(np.allclose(best, ref[0])), bool((arg == ref[1]).all())
(True, True)
"""

from __future__ import annotations

import ctypes
import os
from functools import lru_cache
from typing import Any

import numpy as np

from fabscope.cbuild import load_library

__all__ = ["nll_table", "table_nll", "unit_minima", "unit_minima_reference", "effects", "available"]

SOURCE = os.path.join(os.path.dirname(__file__), "unitgains.c")
#: the table's half-width (log ratio): beyond it the likelihood is its uniform floor's
TABLE_SPAN = 8.0
#: steps per spread of the narrower component
STEPS_PER_SIGMA = 64


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    dll, why = load_library(SOURCE, "unitgains")
    if dll is not None:
        dll.ug_unit_minima.restype = None
        dll.ug_unit_minima.argtypes = [ctypes.c_int64] * 4 + [ctypes.c_void_p] * 5 + [
            ctypes.c_int64, ctypes.c_double, ctypes.c_double] + [ctypes.c_void_p] * 3
        dll.ug_effects.restype = None
        dll.ug_effects.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 7 + [ctypes.c_int64] + \
            [ctypes.c_void_p] * 8
    return dll, why


def available() -> bool:
    return _load()[0] is not None


def nll_table(noise: Any) -> tuple[np.ndarray, float, float]:
    """``noise.nll`` on a grid over [-TABLE_SPAN, TABLE_SPAN]: (values, first x, 1 / step)."""
    h = min(noise.sigma, noise.sigma_j) / STEPS_PER_SIGMA
    nt = int(np.ceil(2 * TABLE_SPAN / h)) + 1
    x0 = -TABLE_SPAN
    return np.ascontiguousarray(noise.nll(x0 + h * np.arange(nt)), dtype=float), x0, 1.0 / h


def table_nll(table: tuple[np.ndarray, float, float], x: np.ndarray) -> np.ndarray:
    """The table read at ``x`` (linear interpolation, its end values outside)."""
    T, x0, inv_h = table
    return np.interp(x, x0 + np.arange(len(T)) / inv_h, T)


def unit_minima(unit: np.ndarray, pair: np.ndarray, D: np.ndarray, E: np.ndarray,
                table: tuple[np.ndarray, float, float], n_units: int,
                out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per draw and unit, the least change of the negative log-likelihood over the grid, and where.

    ``unit``, ``pair``: the entries, sorted by unit; ``D``: entries x grid, the log time increase of
    the pair under each factor (float32); ``E``: pairs x draws, the drawn residuals.  Returns
    (``R`` x ``n_units`` minima, the grid index of each); a unit without entries keeps what ``out``
    holds (0 and 0 by default).  In C where a compiler is found, else :func:`unit_minima_reference`.
    """
    R = E.shape[1]
    best, arg = out if out is not None else (np.zeros((R, n_units)), np.zeros((R, n_units), np.int64))
    dll = _load()[0]
    if dll is None:
        b, a = unit_minima_reference(unit, pair, D, E, table, n_units)
        present = np.unique(unit)
        best[:, present], arg[:, present] = b[:, present], a[:, present]
        return best, arg
    unit = np.ascontiguousarray(unit, np.int64)
    pair = np.ascontiguousarray(pair, np.int64)
    D = np.ascontiguousarray(D, np.float32)
    E = np.ascontiguousarray(E, float)
    T, x0, inv_h = table
    G = D.shape[1]
    acc = np.zeros(R * G)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    dll.ug_unit_minima(len(unit), G, R, n_units, ptr(unit), ptr(pair), ptr(D), ptr(E), ptr(T), len(T),
                       float(x0), float(inv_h), ptr(acc), ptr(best), ptr(arg))
    return best, arg


def effects(rptr: np.ndarray, flow: np.ndarray, rate: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
            row_unit: np.ndarray, scale: np.ndarray, gptr: np.ndarray, gent: np.ndarray, grow: np.ndarray,
            fbytes: np.ndarray, tcur: np.ndarray) -> np.ndarray:
    """The compiled path of :meth:`.fit.Fit.effects` for one chunk of units: per group (a unit and a pair)
    and scale, the log of the pair's new time over its current one (``unitgains.c``, ``ug_effects``).

    Rows (a link in one concurrent set) hold entries ``rptr[r]:rptr[r + 1]`` (the flow, its weight on
    the row, its bytes); ``capacity``: each row's current capacity; ``row_unit``: the row's unit (a row
    of ``scale``, units x grid); groups hold entries ``gent[gptr[k]:gptr[k + 1]]``, on rows ``grow`` of
    the same positions; ``tcur``: each group's pair's current time."""
    dll = _load()[0]
    i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
    f64 = lambda a: np.ascontiguousarray(a, float)  # noqa: E731
    rptr, flow, row_unit, gptr, gent, grow = map(i64, (rptr, flow, row_unit, gptr, gent, grow))
    rate, weight, capacity, scale, fbytes, tcur = map(f64, (rate, weight, capacity, scale, fbytes, tcur))
    R, G, K = len(rptr) - 1, scale.shape[1], len(gptr) - 1
    lvl = np.empty(R * G)
    tmp = np.empty(2 * max(int(np.diff(rptr).max(initial=0)), 1))
    D = np.empty((K, G))
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    with np.errstate(all="ignore"):
        dll.ug_effects(R, G, ptr(rptr), ptr(flow), ptr(rate), ptr(weight), ptr(capacity), ptr(row_unit),
                       ptr(scale), K, ptr(gptr), ptr(gent), ptr(grow), ptr(fbytes), ptr(tcur), ptr(lvl), ptr(tmp),
                       ptr(D))
    return D


def unit_minima_reference(unit: np.ndarray, pair: np.ndarray, D: np.ndarray, E: np.ndarray,
                          table: tuple[np.ndarray, float, float], n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unit_minima` in numpy (the reference of the C loop), draw by draw."""
    R, G = E.shape[1], D.shape[1]
    best = np.zeros((R, n_units))
    arg = np.zeros((R, n_units), np.int64)
    if not len(unit):
        return best, arg
    starts = np.r_[0, np.flatnonzero(np.diff(unit)) + 1]
    D = D.astype(float)
    for r in range(R):
        e = E[pair, r]
        base = table_nll(table, e)
        d = np.where(D > 0, table_nll(table, e[:, None] + D) - base[:, None], 0.0)
        sums = np.add.reduceat(d, starts, axis=0)
        best[r, unit[starts]] = sums.min(axis=1)
        arg[r, unit[starts]] = sums.argmin(axis=1)
    return best, arg
