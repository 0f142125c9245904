"""One class, pair, host or cable over time: what ``history show`` prints and the report draws.

Every function returns rows ``(run id, time, values...)`` in time order; a
run that has nothing of the thing asked about gives no row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.history.db import HistoryError
from fabscope.history.store import History


def class_series(h: History, cls: str) -> list[tuple[Any, ...]]:
    """(run, time, test, pairs, max, avg, min, median bandwidth, median ratio) of class ``cls``."""
    rows = h.db.query("SELECT r.id, r.time, r.test, c.n, c.bw_max, c.bw_avg, c.bw_min, c.bw_median, "
                      "c.ratio_median FROM classes c JOIN runs r ON r.id = c.run_id WHERE c.cls = ? "
                      "ORDER BY r.time, r.id", (cls,))
    if not rows:
        known = [r[0] for r in h.db.query("SELECT DISTINCT cls FROM classes ORDER BY cls")]
        raise HistoryError(f"no class {cls!r} in the history; classes: {', '.join(known) or 'none'}")
    return rows


def pair_series(h: History, a: str, b: str) -> list[tuple[Any, ...]]:
    """(run, time, measurements, median bandwidth, median ratio) of the host pair a-b, either way."""
    rows = h.db.query("SELECT r.id, r.time, p.bandwidth, p.ratio FROM pairs p JOIN runs r ON r.id = p.run_id "
                      "WHERE (p.src_host = ? AND p.dst_host = ?) OR (p.src_host = ? AND p.dst_host = ?) "
                      "ORDER BY r.time, r.id", (a, b, b, a))
    if not rows:
        raise HistoryError(f"no pair {a} - {b} in the history")
    return _median_by_run(rows)


def host_series(h: History, host: str) -> list[tuple[Any, ...]]:
    """(run, time, measurements, median bandwidth, median ratio) of the pairs that touch ``host``."""
    rows = h.db.query("SELECT r.id, r.time, p.bandwidth, p.ratio FROM pairs p JOIN runs r ON r.id = p.run_id "
                      "WHERE p.src_host = ? OR p.dst_host = ? ORDER BY r.time, r.id", (host, host))
    if not rows:
        raise HistoryError(f"no pair of host {host!r} in the history")
    return _median_by_run(rows)


def _median_by_run(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    out: dict[int, list[Any]] = {}
    for rid, t, bw, ratio in rows:
        out.setdefault(rid, [t, [], []])
        out[rid][1].append(bw)
        if ratio is not None:
            out[rid][2].append(ratio)
    return [(rid, t, len(bw), float(np.median(bw)), float(np.median(r)) if r else None)
            for rid, (t, bw, r) in out.items()]


def find_cable(h: History, spec: str) -> tuple[int, str]:
    """A cable by its number, its name as the diagnosis prints it, a part of that name, or its host."""
    rows = h.db.query("SELECT DISTINCT cable, name, host FROM cables")
    if spec.isdigit():
        hit = [r for r in rows if r[0] == int(spec)]
    else:
        hit = [r for r in rows if r[1] == spec or r[2] == spec] or [r for r in rows if spec in r[1]]
    names = sorted({(int(c), str(n)) for c, n, _ in hit})
    if not names:
        raise HistoryError(f"no cable {spec!r} among the cable estimates of the history "
                           "(they come from measured runs on the history's fabric)")
    if len(names) > 1:
        raise HistoryError(f"{spec!r} names {len(names)} cables ({names[0][1]}, {names[1][1]}, ...); "
                           "give the whole name or its number")
    return names[0]


def cable_series(h: History, cable: int) -> list[tuple[Any, ...]]:
    """(run, time, pairs crossing, capacity, estimate, suspect) of cable number ``cable``."""
    return h.db.query("SELECT r.id, r.time, c.pairs, c.capacity, c.estimate, c.suspect FROM cables c "
                      "JOIN runs r ON r.id = c.run_id WHERE c.cable = ? ORDER BY r.time, r.id", (cable,))


def became_slow(rows: list[tuple[Any, ...]], min_effect: float = 0.10) -> tuple[int, str] | None:
    """(run, time) from which the cable is estimated below 1 - min_effect of its capacity to the last run.

    >>> became_slow([(1, "a", 9, 1.0, 1.0, 0), (2, "b", 9, 1.0, 0.5, 1), (3, "c", 9, 1.0, 0.5, 1)])
    (2, 'b')
    >>> became_slow([(1, "a", 9, 1.0, 0.5, 1), (2, "b", 9, 1.0, 1.0, 0)]) is None
    True
    """
    first = None
    for rid, t, _n, cap, est, _s in reversed(rows):
        if est < (1.0 - min_effect) * cap:
            first = (rid, t)
        else:
            break
    return first
