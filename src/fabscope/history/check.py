"""``history check``: tonight's run against the nights before it.

Per class, the pairs' log ratios to the flow model (log bandwidths where the
run has no model) are tested against the same class in the baseline runs
(:func:`.stats.shift_test`).  Per cable and host, the candidates are the
cables the tomography of tonight's run estimates below ``1 - min_effect`` of
their capacity (a host's own cable is the host); each is confirmed by the same
test on the pairs whose routes cross it, tonight against the baseline's
pairs that crossed it: lower by ``min_effect``, or, where the night's own
diagnosis named it, lower at all but significantly on the first night of
its slow streak (a cable that holds back few of the pairs crossing it moves
their median little; the loss is then the tomography's).  Without cable
estimates (no fabric in the history) every host is tested on the pairs that
touch it.

A regression is *new* when the previous run did not have it already (the
class was not already low against the same baseline; the cable was not
already estimated slow); a regression that goes on is reported with the
first run it was slow in, and raises an alarm only with ``persistent``.  So
a cable that trained at half width on night 20 is an alarm on night 20 and a
note ("slow since run 20") after.

A cable estimated slow is also tested for slow drift (:mod:`.drift`): its
crossing pairs against a long baseline (the runs before its slow streak
began) and the trend of its estimates.  The first night it has drifted
(and it was not a regression of the short baseline) is an alarm; later nights
say "drifting, already".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.history.db import HistoryError, describe
from fabscope.history.drift import LONG_BASELINE, Trend, trend
from fabscope.history.stats import Shift, shift_test
from fabscope.history.store import History, Run

#: what a check reads of each run's pairs
CHECK_COLUMNS = ("src_host", "dst_host", "cls", "ratio")      # and bandwidth where a night has no ratios


@dataclass
class Finding:
    what: str            # "class", "cable" or "host"
    name: str
    test: Shift
    estimate: float | None = None      # tomography: capacity tonight / nominal
    first_run: int | None = None       # first run of the streak it is slow in
    first_time: str | None = None
    cable: str | None = None
    named: bool = False                # the run's own diagnosis named it (its calibrated test)
    long: Shift | None = None          # tonight against the long baseline (before its slow streak)
    trend: Trend | None = None         # of its estimates over the long baseline and tonight
    drifted: bool = False              # lower than the long baseline or falling, slow two nights as built
    slow_before: bool = False          # estimated slow as built on the run before too
    streak: list = field(default_factory=list)   # earlier nights of its slow streak: (long test, trend, slow before)
    first_short: Shift | None = None   # the streak's first night (not tonight) against its own short baseline
    first_named: bool = False          # ... and whether that night's diagnosis named it
    regressed: bool = False            # significant, and large enough
    new: bool = False                  # not already so in the previous run
    alarm: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "name": self.name, "cable": self.cable, "n": self.test.n,
                "n_baseline": self.test.n_base, "p": self.test.p, "factor": self.test.factor,
                "estimate": self.estimate, "first_run": self.first_run, "first_time": self.first_time,
                "named": self.named, "regressed": self.regressed, "new": self.new, "alarm": self.alarm,
                "drifted": self.drifted,
                "long_factor": self.long.factor if self.long else None, "long_p": self.long.p if self.long else None,
                "trend_per_night": float(np.expm1(self.trend.per_night)) if self.trend else None,
                "trend_p": self.trend.p if self.trend else None}


@dataclass
class CheckReport:
    run: Run
    baseline: list[Run]
    values: str                        # "ratio" or "bandwidth"
    alpha: float
    min_effect: float
    findings: list[Finding] = field(default_factory=list)

    @property
    def alarms(self) -> list[Finding]:
        return [f for f in self.findings if f.alarm]

    def lines(self, verbose: bool = False) -> list[str]:
        r = self.run
        out = [f"run {r.id} ({r.time}, {r.test or r.kind}, {r.n_pairs} pairs) against "
               f"{len(self.baseline)} baseline runs ({', '.join(str(b.id) for b in self.baseline)}); "
               f"{'log ratio to the model' if self.values == 'ratio' else 'log bandwidth'} per pair, "
               f"Mann-Whitney p < {self.alpha:g} / tests (a cable or host: or named by the run's diagnosis) and "
               f"Hodges-Lehmann factor <= {1 - self.min_effect:.2f} (a cable named on the first night it is "
               f"estimated slow: p < {self.alpha:g} / tests and any factor under 1)"]
        for f in self.findings:
            # a cable slow tonight only and not confirmed by its pairs is noise: not printed
            persisting = f.first_run is not None and f.first_run != r.id
            if not (f.regressed or persisting or verbose):
                continue
            t = f.test
            where = f" (cable {f.cable})" if f.cable and f.what == "host" else ""
            state = ("REGRESSED" if f.alarm else "drifting, already" if f.drifted and not f.new else
                     "slow, already" if f.regressed or f.estimate is not None else "ok")
            since = (f"; slow since run {f.first_run} ({f.first_time})" if f.first_run is not None else "")
            est = (f"; tomography: {f.estimate:.2f} of capacity" if f.estimate is not None else "") + (
                ", named by the run's diagnosis" if f.named else "")
            drift = ""
            if f.long is not None and f.trend is not None:
                drift = (f"; against the long baseline x{f.long.factor:.3f} (p={f.long.p:.2g}), estimate "
                         f"{100 * np.expm1(f.trend.per_night):+.1f}% a night over {f.trend.n} runs "
                         f"(Kendall p={f.trend.p:.2g})" + (": drifted" if f.drifted else ""))
            out.append(f"  {state:<14} {f.what} {f.name}{where}: x{t.factor:.3f} (Hodges-Lehmann), "
                       f"p={t.p:.2g}, {t.n} pairs vs {t.n_base}{est}{since}{drift}")
        n = len(self.alarms)
        out.append(f"{n} regression{'s' * (n != 1)}" + (": " + "; ".join(
            f"{f.what} {f.name}" + (f" from run {f.first_run}" if f.first_run is not None else "")
            for f in self.alarms) if n else ""))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run.id, "time": self.run.time, "baseline": [b.id for b in self.baseline],
                "values": self.values, "alpha": self.alpha, "min_effect": self.min_effect,
                "findings": [f.to_dict() for f in self.findings], "alarms": len(self.alarms)}


def baseline_runs(h: History, run: Run, n: int, runs: list[Run] | None = None) -> list[Run]:
    """The ``n`` runs of the same test and kind family before ``run``."""
    runs = runs if runs is not None else h.runs()
    fam = _family(run.kind)
    before = [r for r in runs if (r.time, r.id) < (run.time, run.id) and r.test == run.test
              and _family(r.kind) == fam]
    return before[-n:] if n > 0 else []


def _family(kind: str) -> str:
    return "measured" if kind in ("measure", "measured", "compare", "diagnose") else kind


def check(h: History, run_id: int | None = None, *, baseline: int = 7, alpha: float = 1e-3,
          min_effect: float = 0.10, persistent: bool = False, runs: list[Run] | None = None,
          long_baseline: int = LONG_BASELINE) -> CheckReport:
    """Tonight (``run_id``, default the newest run) against the ``baseline`` runs before it; each cable
    estimated slow also against up to ``long_baseline`` runs before its slow streak (:mod:`.drift`)."""
    runs = runs if runs is not None else h.runs()
    if not runs:
        raise HistoryError(f"history {describe(h.url)} has no runs")
    run = runs[-1] if run_id is None else next((r for r in runs if r.id == run_id), None)
    if run is None:
        raise HistoryError(f"no run {run_id} in the history")
    base = baseline_runs(h, run, baseline, runs)
    if not base:
        raise HistoryError(f"run {run.id} has no earlier run of the same test ({run.test}) to compare with")
    tonight = h.pairs(run.id, CHECK_COLUMNS)
    read = lambda rid: _read(h, rid, run.id, tonight)  # noqa: E731
    bpairs = [read(b.id) for b in base]
    use_ratio = np.isfinite(tonight["ratio"]).mean() > 0.5 and all(np.isfinite(b["ratio"]).mean() > 0.5
                                                                   for b in bpairs)
    col = "ratio" if use_ratio else "bandwidth"
    if not use_ratio:           # read only where some night has no model ratios
        for p, r in zip([tonight, *bpairs], [run, *base]):
            p["bandwidth"] = h.pairs(r.id, ("bandwidth",))["bandwidth"]
    rep = CheckReport(run, base, col, alpha, min_effect)

    def logs(p: dict[str, np.ndarray]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(p[col])

    x = logs(tonight)
    y_all = [logs(b) for b in bpairs]
    classes = sorted(set(tonight["cls"].tolist()))
    prev = base[-1]
    prev_pairs, prev_base = bpairs[-1], bpairs[:-1]
    findings: list[Finding] = []
    for c in classes:
        t = shift_test(x[tonight["cls"] == c], np.concatenate([y[b["cls"] == c] for y, b in zip(y_all, bpairs)]))
        findings.append(Finding("class", c, t))
    cand = _cable_candidates(h, run, min_effect)
    f = h.fabric()
    if cand and f is not None:
        routing = run.routing
        cables = [c for c, *_ in cand]
        # the nights of one plan measure the same pairs: their crossings are routed once
        routed: dict[bytes, dict[int, np.ndarray]] = {}
        crossing = lambda p: _crossing_once(routed, f, routing, p, cables)  # noqa: E731
        cross_t = crossing(tonight)
        cross_b = [crossing(b) for b in bpairs]
        long_cache: dict[int, tuple[np.ndarray, dict[int, np.ndarray]]] = {
            r.id: (y, cb) for r, y, cb in zip(base, y_all, cross_b)}
        long_cache[run.id] = (x, cross_t)
        for c, name, host, est, named in cand:
            t = shift_test(x[cross_t[c]], np.concatenate([y[cb[c]] for y, cb in zip(y_all, cross_b)]))
            first = _first_slow(h, runs, run, c, min_effect)
            fd = Finding("host" if host else "cable", host or name, t, est, first.id if first else None,
                         first.time if first else None, cable=name, named=named)
            _drift(h, runs, run, fd, c, first, x[cross_t[c]], long_baseline, baseline, min_effect, long_cache, logs,
                   crossing, lambda rid: {**read(rid), **({} if use_ratio else h.pairs(rid, ("bandwidth",)))})
            findings.append(fd)
    elif f is None or not h.db.scalar("SELECT count(*) FROM cables WHERE run_id = ?", (run.id,)):
        hosts = sorted(set(tonight["src_host"].tolist()) | set(tonight["dst_host"].tolist()))
        for hn in hosts:
            sel = lambda p: (p["src_host"] == hn) | (p["dst_host"] == hn)  # noqa: E731
            t = shift_test(x[sel(tonight)], np.concatenate([y[sel(b)] for y, b in zip(y_all, bpairs)]))
            findings.append(Finding("host", hn, t))
    n_tests = max(len(findings), 1)

    def short(t: Shift, named: bool, step: bool) -> bool:
        return t.regressed(alpha / n_tests, min_effect) or (named and t.n > 0 and t.n_base > 0 and (
            t.factor <= 1.0 - min_effect or (step and t.p < alpha / n_tests and t.factor < 1.0)))

    def held(t: Shift, tr: Trend, before: bool) -> bool:      # drift, below
        return before and ((t.p < alpha / n_tests and t.factor < 1.0) or tr.p < alpha / n_tests)

    for fd in findings:
        # a cable or host: significant by the rank test across runs with its crossing pairs down by at least
        # min_effect (Hodges-Lehmann), or named by the run's own diagnosis (whose penalty holds a false-alarm
        # rate per diagnosis, docs/diagnose.md, and which weighs every pair of the run where the rank test
        # sees only those crossing one cable) with its crossing pairs down by min_effect, or down at all but
        # significantly: then the loss is the tomography's (below 1 - min_effect to be a candidate).  A
        # cable that holds back few of the pairs crossing it, the rest held by other links (a director's
        # internal cable), moves their median little however slow it is.  (That last rule on the first night
        # of its slow streak, a step: a later night that holds it is drift, tested below.)
        fd.regressed = short(fd.test, fd.named, fd.first_run == run.id)
        if fd.long is not None:
            # drift: the cable below 1 - min_effect of its capacity as built tonight and the run before (the
            # tomography), and either its pairs lower than on the long baseline (the rank test) or its
            # estimates falling (the trend test, one-sided: the Theil-Sen slope is 0 while most of the
            # nights are at capacity).  The second is for a cable that holds back few of the pairs crossing
            # it (a director's internal cable): their shift is diluted by the rest, which other links hold,
            # while the tomography, weighing every pair, sees the loss.  New on the first night of its slow
            # streak it holds
            fd.drifted = held(fd.long, fd.trend, fd.slow_before) and fd.estimate is not None
            if fd.drifted and not fd.regressed:
                fd.regressed = True
                # new unless an earlier night of the streak held it, or its first night was a step
                fd.new = not any(held(t, tr, b) for t, tr, b in fd.streak) and not (
                    fd.first_short is not None and short(fd.first_short, fd.first_named, True))
                fd.alarm = fd.new or persistent
                continue
        if not fd.regressed:
            continue
        if fd.what == "class":
            sel = prev_pairs["cls"] == fd.name
            yb = [y for y, b in zip(y_all[:-1], prev_base)]
            before = shift_test(logs(prev_pairs)[sel], np.concatenate(
                [y[b["cls"] == fd.name] for y, b in zip(yb, prev_base)]) if prev_base else np.array([]))
            fd.new = not before.regressed(alpha / n_tests, min_effect)
        elif fd.first_run is not None:
            fd.new = fd.first_run == run.id
        else:
            fd.new = True
        fd.alarm = fd.new or persistent
    del prev
    rep.findings = sorted(findings, key=lambda fd: (not fd.alarm, not fd.regressed, fd.test.factor))
    return rep


def _read(h: History, rid: int, tonight_id: int, tonight: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``rid``'s pairs (:data:`CHECK_COLUMNS`): where they are tonight's pairs (a plan measured each
    night), tonight's hosts and classes and its own ratios only (the texts were most of a night's read)."""
    same = h.numbers_if_same(tonight_id, rid, ("ratio",), len(tonight["ratio"])) if rid != tonight_id else None
    if same is not None:
        return {**{c: tonight[c] for c in ("src_host", "dst_host", "cls")}, **same}
    return h.pairs(rid, CHECK_COLUMNS)


def _drift(h: History, runs: list[Run], run: Run, fd: Finding, cable: int, first: Run | None, tonight: np.ndarray,
           long: int, short: int, min_effect: float, cache: dict, logs: Any, crossing: Any, read: Any) -> None:
    """Fill ``fd.long``, ``fd.trend``, ``fd.slow_before``, ``fd.streak`` (the earlier nights of its slow
    streak: each one's test against the same long baseline, its trend, and whether it was slow two nights as
    built) and, where the streak began before tonight, ``fd.first_short`` and ``fd.first_named`` (its first
    night against the ``short`` runs before it, and whether that night's diagnosis named it);
    module docstring, :mod:`.drift`.  ``cache``: run id -> (its pairs' log values, the pairs crossing each
    candidate cable), filled here from ``crossing`` (pairs -> cable -> mask) for the runs not read yet
    (``read``: run id -> its pairs)."""
    same = [r for r in runs if r.test == run.test and _family(r.kind) == _family(run.kind)
            and (r.time, r.id) < (run.time, run.id)]
    start = first if first is not None else run
    before = [r for r in same if (r.time, r.id) < (start.time, start.id)][-long:] if long > 0 else []
    if not before:
        return
    est = {int(k): float(v) for k, v in h.db.query("SELECT run_id, estimate / capacity FROM cables WHERE cable = ?",
                                                    (cable,)) if v is not None}
    logs_of = lambda rs: np.array([np.log(est[r.id]) if est.get(r.id, 0) > 0 else np.nan for r in rs])  # noqa: E731
    fd.trend = trend(logs_of(same[-long:] + [run]))
    slow = lambda r: r is not None and est.get(r.id, 1.0) < 1.0 - min_effect  # noqa: E731

    def crossing_logs(r: Run) -> np.ndarray:
        if r.id not in cache:
            p = read(r.id)
            cache[r.id] = (logs(p), crossing(p))
        y, cross = cache[r.id]
        return y[cross[cable]]

    base = np.concatenate([crossing_logs(r) for r in before])
    fd.long = shift_test(tonight, base)
    fd.slow_before = slow(same[-1] if same else None)
    streak = [r for r in same if (r.time, r.id) >= (start.time, start.id)][-long:]
    prev_of = {r.id: q for q, r in zip([None] + same[:-1], same)}
    at = {r.id: k for k, r in enumerate(same)}
    # each earlier night of the streak as it was checked: its long test, its trend over the runs up to it
    fd.streak = [(shift_test(crossing_logs(r), base), trend(logs_of(same[max(at[r.id] - long, 0):at[r.id] + 1])),
                  slow(prev_of.get(r.id))) for r in streak]
    if start.id != run.id and short > 0:
        fd.first_short = shift_test(crossing_logs(start), np.concatenate(
            [crossing_logs(r) for r in before[-short:]]))
        fd.first_named = bool(h.db.scalar("SELECT suspect FROM cables WHERE run_id = ? AND cable = ?",
                                          (start.id, cable)))


def _cable_candidates(h: History, run: Run, min_effect: float) -> list[tuple[int, str, str | None, float, bool]]:
    rows = h.db.query("SELECT cable, name, host, estimate / capacity, suspect FROM cables WHERE run_id = ? AND "
                      "estimate < ? * capacity ORDER BY estimate / capacity", (run.id, 1.0 - min_effect))
    return [(int(c), str(n), hs, float(e), bool(sus)) for c, n, hs, e, sus in rows]


def _first_slow(h: History, runs: list[Run], run: Run, cable: int, min_effect: float) -> Run | None:
    """The first run of the streak, ending at ``run``, in which ``cable`` was estimated slow
    (runs of the same test; a run that did not cross the cable neither breaks nor extends it)."""
    rows = dict(h.db.query("SELECT run_id, estimate / capacity FROM cables WHERE cable = ?", (cable,)))
    same = [r for r in runs if r.test == run.test and (r.time, r.id) <= (run.time, run.id)]
    first = None
    for r in reversed(same):
        if r.id not in rows:
            continue
        if float(rows[r.id]) < 1.0 - min_effect:
            first = r
        else:
            break
    return first


def _crossing_once(routed: dict[bytes, dict[int, np.ndarray]], fabric: Any, routing: str | None,
                   pairs: dict[str, np.ndarray], cables: list[int]) -> dict[int, np.ndarray]:
    """:func:`_crossing`, once per distinct list of pairs (``routed``: by the digest of its host names)."""
    src, dst = pairs["src_host"], pairs["dst_host"]
    key = hashlib.sha1(f"{src.dtype.str} {dst.dtype.str} {len(src)}".encode() + src.tobytes() + dst.tobytes()).digest()
    if key not in routed:
        routed[key] = _crossing(fabric, routing, pairs, cables)
    return routed[key]


def _crossing(fabric: Any, routing: str | None, pairs: dict[str, np.ndarray], cables: list[int]) -> dict[int, np.ndarray]:
    """Per cable: the pairs (bool mask) whose route crosses it, either way."""
    from fabscope.routing import make_routing

    idx = fabric.host_index
    n = len(pairs["src_host"])
    out = {c: np.zeros(n, bool) for c in cables}
    # each distinct name looked up once (a night names its hosts over and over)
    names, inv = np.unique(np.r_[pairs["src_host"], pairs["dst_host"]].astype(str), return_inverse=True)
    code = np.array([idx.get(s, idx.get(s.split(".")[0], -1)) for s in names.tolist()], dtype=np.int64)[inv]
    hs, hd = code[:n], code[n:]
    ok = np.flatnonzero((hs >= 0) & (hd >= 0) & (hs != hd))
    if not len(ok):
        return out
    router = make_routing(fabric, routing)
    want = np.zeros(fabric.n_links // 2 + 1, bool)
    want[cables] = True
    for a, b in ((hs[ok], hd[ok]), (hd[ok], hs[ok])):
        r = router.routes(a, b)
        cab = r.link // 2
        keep = want[cab]
        flow, cab = r.flow[keep], cab[keep]
        for c in cables:
            out[c][ok[flow[cab == c]]] = True
    return out
