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
>>> D = np.array([[0.3, 0.1], [0.3, 0.0], [0.2, 0.1]], np.float32)
>>> eff = NullEffects(np.array([0, 1, 9]), np.array([0, 0, 2]), [(np.array([0, 0, 1]), np.array([0, 1, 1]), D)])
>>> E = np.array([[-0.3], [-0.1]])                       # 2 pairs, 1 draw
>>> best, arg = unit_minima(eff, E, table)               # unit 9 (a cable) is its directions 0 and 1
>>> ref = unit_minima_reference(eff, E, table)
>>> bool(np.allclose(best, ref[0])), bool((arg == ref[1]).all()), bool(best[0, 2] >= best[0, :2].sum())
(True, True, True)
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from fabscope.cbuild import load_library

__all__ = ["NullEffects", "nll_table", "table_nll", "unit_minima", "unit_minima_reference", "effects", "available"]

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
        i64, p, f64 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
        dll.ug_unit_minima.argtypes = ([i64] * 5 + [p]             # u_from, u_to, G, R, U; adds
                                       + [i64] + [p] * 3           # the entries
                                       + [i64] + [p] * 4           # the extra ones, with their signs
                                       + [p, p, i64, f64, f64]     # E; the table
                                       + [p] * 4 + [ctypes.c_int])  # ring, acc, best, arg; simd
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


@dataclass(eq=False)
class NullEffects:
    """What every grid factor of every unit of the null does to its pairs
    (:func:`fabscope.diagnose.calibration.null_effects`).

    ``units``: the units, in the order the loop takes them; ``adds``: per unit, how many of the units just
    before it it sums (a cable both ways is its two directions, listed just before it: a pair that
    crosses one direction is slowed alike by the cable); ``chunks``: the entries, (index into ``units``,
    pair, entries x grid of log time increase, float32), sorted by index; ``extra``: the same with a sign
    per entry, sorted by index too (for a cable, each pair crossing both its directions: +its effect
    both ways, -its effect one way, -the other way).
    """

    units: np.ndarray
    adds: np.ndarray
    chunks: list
    extra: tuple = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32), np.zeros(0))

    def entries(self) -> int:
        return sum(len(c) for c, _, _ in self.chunks) + len(self.extra[0])

    def n_grid(self) -> int:
        shapes = [D.shape[1] for _, _, D in self.chunks] + ([self.extra[2].shape[1]] if len(self.extra[0]) else [])
        return shapes[0] if shapes else 1


def unit_minima(eff: NullEffects, E: np.ndarray, table: tuple[np.ndarray, float, float], simd: bool = True
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per draw and unit of ``eff``, the least change of the negative log-likelihood over the grid, and
    where: (``R`` x units minima, the grid index of each).  ``E``: pairs x draws, the drawn residuals.  In
    C where a compiler is found (chunk by chunk, the last two units' sums carried between calls), else
    :func:`unit_minima_reference`.  ``simd``: four grid factors at a time where the CPU has AVX2 (the same
    bits as one at a time)."""
    dll = _load()[0]
    if dll is None:
        return unit_minima_reference(eff, E, table)
    R, U = E.shape[1], len(eff.units)
    G = eff.n_grid()
    best, arg = np.zeros((R, U)), np.zeros((R, U), np.int64)
    E = np.ascontiguousarray(E, float)
    T, x0, inv_h = table
    T = np.ascontiguousarray(T, float)
    adds = np.ascontiguousarray(eff.adds, np.int64)
    ring, acc = np.zeros(2 * R * G), np.zeros(R * G)
    i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    xc, xp, xD, xs = eff.extra
    xc, xp, xD, xs = i64(xc), i64(xp), np.ascontiguousarray(xD, np.float32).reshape(len(xc), G), \
        np.ascontiguousarray(xs, float)
    done = 0
    for c, p, D in [*eff.chunks, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, G), np.float32))]:
        upto = U if not len(c) else int(c[-1]) + 1
        if len(c) and int(c[0]) < done:
            raise ValueError("the null's entries are not sorted by unit, one unit's in one chunk")
        a, b = np.searchsorted(xc, [done, upto])
        c, p, D = i64(c), i64(p), np.ascontiguousarray(D, np.float32)
        dll.ug_unit_minima(done, upto, G, R, U, ptr(adds), len(c), ptr(c), ptr(p), ptr(D),
                           int(b - a), ptr(xc[a:]), ptr(xp[a:]), ptr(xD[a:]), ptr(xs[a:]),
                           ptr(E), ptr(T), len(T), float(x0), float(inv_h), ptr(ring), ptr(acc), ptr(best), ptr(arg), int(simd))
        done = upto
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


def unit_minima_reference(eff: NullEffects, E: np.ndarray, table: tuple[np.ndarray, float, float]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unit_minima` in numpy (the reference of the C loop), draw by draw."""
    R, U = E.shape[1], len(eff.units)
    parts = [(c, p, np.asarray(D, float), np.ones(len(c))) for c, p, D in eff.chunks]
    if len(eff.extra[0]):
        parts.append((eff.extra[0], eff.extra[1], np.asarray(eff.extra[2], float), np.asarray(eff.extra[3], float)))
    best, arg = np.zeros((R, U)), np.zeros((R, U), np.int64)
    if not parts:
        return best, arg
    c, p, D, sign = (np.concatenate(x) for x in zip(*parts))
    order = np.argsort(c, kind="stable")
    c, p, D, sign = c[order], p[order], D[order], sign[order]
    adds = np.asarray(eff.adds)
    for r in range(R):
        e = E[p, r]
        base = table_nll(table, e)
        d = np.where(D > 0, table_nll(table, e[:, None] + D) - base[:, None], 0.0) * sign[:, None]
        sums = np.zeros((U, D.shape[1]))
        np.add.at(sums, c, d)
        for u in np.flatnonzero(adds):             # a cable both ways: its directions' sums too
            sums[u] += sums[u - adds[u]:u].sum(axis=0)
        best[r] = sums.min(axis=1)
        arg[r] = sums.argmin(axis=1)
    return best, arg
