"""Analysis of measured runs: classes of pairs, the seeds' tables, balance
ratios, and a latency model with its protocol "kinks".

Classes: with a fabric, a pair's hosts are classed by the fabric's groups
(same node, same leaf, near set, far; or torus hops).  Without one, by what
every rank reported: intra-socket, inter-socket, inter-node (seed 001).

The latency model (seeds 002, 003) is piecewise: in each regime a message of
``m`` bytes takes ``alpha + m / beta``; the sizes where one regime gives way
to the next (eager -> rendezvous, packet -> bulk, striping) are found by
choosing the breakpoints that best explain the sweep, a new regime being
accepted only when it pays for its parameters (BIC on relative errors).

>>> m = np.array([2.0 ** k for k in range(0, 23)])
>>> t = np.where(m < 65536, 1e-6 + m / 2e9, 5e-6 + m / 8e9)
>>> fit = fit_latency_model(m, t)
>>> fit.kinks
[65536]
>>> [(round(r.alpha * 1e6, 2), round(r.beta / 1e9, 2)) for r in fit.regimes]
[(1.0, 2.0), (5.0, 8.0)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from fabscope.arrays import median
from fabscope.errors import MeasureError
from fabscope.units import format_rate, plural
from fabscope.fabric.model import MB, Fabric
from fabscope.measure.classes import PLAIN_LABELS, classify  # noqa: F401  (classify: re-exported)
from fabscope.names import launcher_host, plain

if TYPE_CHECKING:
    from fabscope.measure.parse import BenchRun


def topo_lines(fabric: Fabric, group_level: str | None = None) -> list[str]:
    """Lines of the ``--topo`` file fabscope-bench reads: ``host leaf [coords]``.

    The group is the fabric's nearest level (the leaf switch) unless named.
    """
    key = group_level or (fabric.levels[0].key if fabric.levels else None)
    groups = fabric.groups[key] if key else np.asarray(fabric.host_switch)
    out = ["# host group [coordinates]: written by fabscope from fabric " + plain(fabric.name)]
    for h, name in enumerate(fabric.host_names):
        coords = "" if fabric.coords is None else " " + " ".join(str(int(x)) for x in fabric.coords[h])
        out.append(f"{launcher_host(name)} {int(groups[h])}{coords}")   # fields split at spaces: a name has none
    return out


# ---- the wait loop ----------------------------------------------------------------------
def wait_loop(run: "BenchRun") -> str:
    """How every rank waited for messages (spin or yield) and why, from the run's own record.

    >>> from fabscope.measure.parse import BenchRun
    >>> r = BenchRun("x", {"yield": "yield", "yield_mode": "auto"},
    ...              {"host": ["vm", "vm"], "cpus": [1, 1], "host_cpus": [1, 1], "wait": ["yield", "yield"]})
    >>> wait_loop(r)
    'wait loop: yield on all 2 ranks (auto: host vm runs 2 ranks on 1 CPU of their affinity sets)'
    >>> r.ranks["host_cpus"] = [2, 2]; r.ranks["wait"] = ["spin", "spin"]
    >>> wait_loop(r)
    'wait loop: spin on all 2 ranks (auto: no host runs more ranks than CPUs in their affinity sets)'
    >>> r.ranks.update(host=["h0", "h1"], machine_ranks=[2, 2], machine_cpus=[1, 1], wait=["yield", "yield"])
    >>> wait_loop(r)
    'wait loop: yield on all 2 ranks (auto: the machine of host h0 runs 2 ranks on 1 CPU of their affinity sets)'
    >>> r.ranks = {"host": ["vm"], "cpus": [1], "host_cpus": [1], "wait": ["spin"]}
    >>> wait_loop(r)
    'wait loop: spin on the 1 rank (auto: no host runs more ranks than CPUs in their affinity sets)'
    """
    waits = list(run.ranks.get("wait") or [])
    mode = run.header.get("yield_mode")
    if not waits:  # a file of an older fabscope-bench: rank 0's choice only
        return f"wait loop: {run.header.get('yield', 'unknown')} (rank 0; not recorded per rank)"
    kinds = sorted(set(waits))
    who = (f"{kinds[0]} on the 1 rank" if len(waits) == 1 else f"{kinds[0]} on all {len(waits)} ranks") \
        if len(kinds) == 1 else \
        ", ".join(f"{k} on ranks {[i for i, w in enumerate(waits) if w == k]}" for k in kinds)
    if mode in ("on", "off"):
        return f"wait loop: {who} (forced by --yield {mode})"
    hosts = list(run.ranks.get("host") or [])
    hcpus = list(run.ranks.get("host_cpus") or [])
    over = []
    for h in dict.fromkeys(hosts):
        n = hosts.count(h)
        c = hcpus[hosts.index(h)] if len(hcpus) == len(hosts) else None
        if c is not None and n > c:
            over.append(f"host {h} runs {n} ranks on {plural(c, 'CPU')} of their affinity sets")
    # emulated hosts (namespaces, containers) of one kernel share its CPUs: the machine counts too
    mr, mc = list(run.ranks.get("machine_ranks") or []), list(run.ranks.get("machine_cpus") or [])
    if len(mr) == len(hosts) == len(mc) and not over:
        worst = max(range(len(mr)), key=lambda r: mr[r] - mc[r]) if mr else None
        if worst is not None and mr[worst] > mc[worst]:
            over.append(f"the machine of host {hosts[worst]} runs {mr[worst]} ranks on "
                        f"{plural(mc[worst], 'CPU')} of their affinity sets")
    why = "; ".join(over[:2]) if over else "no host runs more ranks than CPUs in their affinity sets"
    return f"wait loop: {who} (auto: {why})"


# ---- tables -------------------------------------------------------------------
def seed_table(result: Any, title: str = "") -> str:
    """The seeds' Max / Average / Min [MB/s] table by class.

    >>> from fabscope.result import Result
    >>> r = Result(meta={}, class_labels=("Same Leaf", "Diff Leafs"),
    ...            pairs={"cls": np.array([0, 1]), "bandwidth": np.array([3.0e9, 1.0e9])})
    >>> print(seed_table(r))
         Max    Average        Min  [MB/sec]      Pairs
     3000.00    2000.00    1000.00  Overall           2
     3000.00    3000.00    3000.00  Same Leaf         1
     1000.00    1000.00    1000.00  Diff Leafs        1
    """
    lines = [title] if title else []
    lines.append(f"{'Max':>8} {'Average':>10} {'Min':>10}  {'[MB/sec]':<13} {'Pairs':>5}")
    for s in result.summary():
        lines.append(f"{s.max:8.2f} {s.avg:10.2f} {s.min:10.2f}  {s.label:<13} {s.count:>5}")
    return "\n".join(lines)


# ---- latency model and kinks -------------------------------------------------------
@dataclass(frozen=True)
class Regime:
    first: int      # smallest message size in the regime (bytes)
    last: int
    alpha: float    # seconds
    beta: float     # bytes/s (inf when the regime shows no size dependence)


# A kink is kept only when it earns its place (see docs/measure.md, "The latency model"):
KINK_GAIN = 1.5        # merging the two regimes around it must raise their rms relative error this much
KINK_MIN_STEP = 0.02   # ... and by at least this much (2 points of relative error)
KINK_STABLE = 0.8      # leave-one-out refits must find it (within one size step) this often
POOR_FIT = 0.20        # rms relative error above which the model is not to be trusted
PROTOCOL_STEP = 1.5    # a protocol change raises the start-up cost alpha at least this much
BANDWIDTH_DROP = 0.9   # a kink after which beta falls below this fraction (alpha not rising) is a bandwidth drop


@dataclass(frozen=True)
class LatencyModel:
    regimes: tuple[Regime, ...]
    rms_rel_error: float
    #: per kink, whether the fit of every repeat of the sweep found it too (within one size step); None: one sweep
    agree: tuple[bool, ...] | None = None
    repeats: int = 1

    @property
    def kinks(self) -> list[int]:
        """Message sizes where a new regime starts."""
        return [r.first for r in self.regimes[1:]]

    @property
    def poor(self) -> bool:
        """Too noisy a sweep to trust the regimes and kinks."""
        return self.rms_rel_error > POOR_FIT

    def kink_kinds(self) -> list[str]:
        """Per kink: ``protocol change`` when the start-up cost alpha steps up (a
        handshake: eager to rendezvous, packet to bulk), the fit is not poor and every
        repeat of the sweep found the kink too; a ``start-up step`` when alpha steps
        up but one of these fails (no evidence of a protocol); ``bandwidth drop`` when
        only the bandwidth falls (as when messages outgrow a cache: no evidence
        of a protocol change); ``bandwidth rise`` otherwise."""
        out = []
        for i, (a, b) in enumerate(zip(self.regimes, self.regimes[1:])):
            if b.alpha > PROTOCOL_STEP * a.alpha and b.alpha - a.alpha > 1e-8:
                sure = not self.poor and (self.agree is None or self.agree[i])
                out.append("protocol change" if sure else "start-up step")
            elif b.beta < a.beta * BANDWIDTH_DROP:
                out.append("bandwidth drop")
            else:
                out.append("bandwidth rise")
        return out

    def predict(self, m: np.ndarray | float) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        out = np.empty_like(m)
        for i, r in enumerate(self.regimes):
            hi = self.regimes[i + 1].first if i + 1 < len(self.regimes) else np.inf
            sel = (m >= (r.first if i else -np.inf)) & (m < hi)
            out[sel] = r.alpha + m[sel] / r.beta
        return out


STRAY = 0.5  # a timing more than 50% off a regime's line (and 4x its median error) is a stray: left out


def _fit1(m: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    w = 1.0 / t
    A = np.stack([w, m * w], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    if b < 0:  # no size dependence: a constant
        a, b = float(np.sum(w) / np.sum(w * w)), 0.0
    elif a < 0:  # a start-up time is never negative: pure bandwidth term
        a, b = 0.0, float(np.sum(m * w) / np.sum((m * w) ** 2))
    return float(a), float(b)


def _fit(m: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Weighted (relative) least squares of t = a + b m, b >= 0; returns a, b and
    the sum of squared relative errors, each capped at :data:`STRAY` squared.

    A stray timing (one load spike in a sweep) is left out of the fit, so it
    neither bends the line nor invents a regime of its own.
    """
    a, b = _fit1(m, t)
    r = (a + b * m) / t - 1
    if len(m) >= 4:
        stray = (np.abs(r) > STRAY) & (np.abs(r) > 4 * median(np.abs(r)))
        if 0 < stray.sum() <= len(m) // 4:
            a, b = _fit1(m[~stray], t[~stray])
            r = (a + b * m) / t - 1
    r = np.minimum(np.abs(r), STRAY)
    return float(a), float(b), float(r @ r)


def _bic_cuts(m: np.ndarray, t: np.ndarray, max_regimes: int, min_points: int) -> list[int]:
    """Breakpoints (indices, with 0 and n) of the best piecewise fit by BIC, by dynamic programming."""
    n = len(m)
    cost = np.full((n + 1, n + 1), np.inf)
    for i in range(n):
        for j in range(i + min_points, n + 1):
            cost[i, j] = _fit(m[i:j], t[i:j])[2]
    best_score, best_cuts = np.inf, [0, n]
    for k in range(1, max_regimes + 1):
        if k * min_points > n:
            break
        # dp[j] = best cost of splitting m[:j] into the current number of segments
        dp = cost[0].copy()
        back: list[np.ndarray] = []
        for _ in range(k - 1):
            nxt = np.full(n + 1, np.inf)
            arg = np.zeros(n + 1, dtype=int)
            for j in range(n + 1):
                c = dp[:j] + cost[:j, j]
                if len(c):
                    arg[j] = int(np.argmin(c))
                    nxt[j] = c[arg[j]]
            back.append(arg)
            dp = nxt
        sse = dp[n]
        if not np.isfinite(sse):
            continue
        score = n * np.log(max(sse / n, 1e-12)) + 3 * k * np.log(n)
        if score < best_score - 1e-9:
            cuts, j = [n], n
            for arg in reversed(back):
                j = int(arg[j])
                cuts.append(j)
            cuts.append(0)
            best_score, best_cuts = score, sorted(cuts)
    return best_cuts


def _earned(m: np.ndarray, t: np.ndarray, cuts: list[int]) -> list[int]:
    """Drop, weakest first, every kink whose two regimes explain their points not
    clearly better than one regime over both (:data:`KINK_GAIN`, :data:`KINK_MIN_STEP`)."""
    cuts = list(cuts)
    while len(cuts) > 2:
        worst, worst_ratio = None, np.inf
        for q in range(1, len(cuts) - 1):
            a, k, b = cuts[q - 1], cuts[q], cuts[q + 1]
            split = np.sqrt((_fit(m[a:k], t[a:k])[2] + _fit(m[k:b], t[k:b])[2]) / (b - a))
            merged = np.sqrt(_fit(m[a:b], t[a:b])[2] / (b - a))
            ok = merged >= KINK_GAIN * split and merged - split >= KINK_MIN_STEP
            ratio = merged / max(split, 1e-12)
            if not ok and ratio < worst_ratio:
                worst, worst_ratio = q, ratio
        if worst is None:
            break
        del cuts[worst]
    return cuts


def _cuts(m: np.ndarray, t: np.ndarray, max_regimes: int, min_points: int) -> list[int]:
    return _earned(m, t, _bic_cuts(m, t, max_regimes, min_points))


def fit_latency_model(sizes: Sequence[float], times: Sequence[float], max_regimes: int = 4,
                      min_points: int = 3) -> LatencyModel:
    """Piecewise ``alpha + m/beta`` fit of a ping-pong sweep.

    Breakpoints come from dynamic programming with BIC; a kink is then kept only
    when it improves the fit clearly (:func:`_earned`) and is stable: the fits
    of the sweep with any one size left out find it again, within one size step,
    at least :data:`KINK_STABLE` of the time.

    >>> m = 2.0 ** np.arange(0, 23)
    >>> fit_latency_model(m, 1e-6 + m / 2e9).kinks  # one regime: no kink
    []
    """
    m = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    keep = t > 0
    m, t = m[keep], t[keep]
    uniq, inv = np.unique(m, return_inverse=True)
    if len(uniq) < len(m) and len(uniq) >= 2:
        # repeats of the sweep (a file of several runs read with --merge): the model of the median time per
        # size, and per kink whether the fit of every repeat (the k-th record of each size) finds it too
        seen: dict[int, int] = {}
        rep = np.array([seen.__setitem__(int(k), seen.get(int(k), -1) + 1) or seen[int(k)] for k in inv])
        pooled = _fit_sweep(uniq, np.array([median(t[inv == k]) for k in range(len(uniq))]), max_regimes,
                            min_points)
        found = []
        for r in range(int(rep.max()) + 1):
            sel = rep == r
            if len(np.unique(m[sel])) >= 2:
                found.append(_fit_sweep(m[sel], t[sel], max_regimes, min_points).kinks)
        agree = tuple(all(any(abs(np.log2(max(x, 1) / max(k, 1))) <= 1.0 for x in ks) for ks in found)
                      for k in pooled.kinks)
        return LatencyModel(pooled.regimes, pooled.rms_rel_error, agree, len(found))
    return _fit_sweep(m, t, max_regimes, min_points)


def _fit_sweep(m: np.ndarray, t: np.ndarray, max_regimes: int, min_points: int) -> LatencyModel:
    """:func:`fit_latency_model` of one sweep (one time per size)."""
    order = np.argsort(m)
    m, t = m[order], t[order]
    n = len(m)
    if n < 2:
        raise MeasureError("a latency model needs at least two message sizes")
    min_points = min(min_points, n)
    cuts = _cuts(m, t, max_regimes, min_points)
    if len(cuts) > 2 and n > min_points * 2:
        found = {int(k): 0 for k in cuts[1:-1]}
        for leave in range(n):
            sel = np.arange(n) != leave
            mm = m[sel]
            near = [mm[c] for c in _cuts(mm, t[sel], max_regimes, min_points)[1:-1]]
            for k in found:
                found[k] += any(abs(np.log2(max(x, 1) / max(m[k], 1))) <= 1.0 for x in near)
        cuts = [0] + [k for k in cuts[1:-1] if found[int(k)] >= KINK_STABLE * n] + [n]
    regimes, sq = [], 0.0
    for i, j in zip(cuts[:-1], cuts[1:]):
        a, b, e = _fit(m[i:j], t[i:j])
        sq += e
        regimes.append(Regime(int(m[i]), int(m[j - 1]), a, 1.0 / b if b > 0 else float("inf")))
    return LatencyModel(tuple(regimes), float(np.sqrt(sq / n)))


def format_model(fit: LatencyModel) -> str:
    """The model's table, its kinks in words, its quality, and a warning when it is poor.

    >>> m = 2.0 ** np.arange(0, 23)
    >>> print(format_model(fit_latency_model(m, 1e-6 + m / 2e9)))
                 sizes [B]  alpha [us]  beta [MB/s]
             1 .. 4194304         1.000       2000.0
    no kink found: one regime explains the whole sweep
    fit quality: rms relative error 0.0% (good)
    """
    lines = [f"{'sizes [B]':>22} {'alpha [us]':>11} {'beta [MB/s]':>12}"]
    for r in fit.regimes:
        lines.append(f"{r.first:>10} .. {r.last:<9} {r.alpha * 1e6:11.3f} {r.beta / MB:12.1f}")
    if not fit.kinks:
        lines.append("no kink found: one regime explains the whole sweep")
    for i, (k, kind, a, b) in enumerate(zip(fit.kinks, fit.kink_kinds(), fit.regimes, fit.regimes[1:])):
        why = ""
        if kind == "start-up step":
            why = ("; not called a protocol change: the fit is poor" if fit.poor else
                   f"; not called a protocol change: not every one of the {fit.repeats} repeats finds it")
        elif fit.agree is not None:
            why = f"; every one of the {fit.repeats} repeats finds it"
        lines.append(f"kink at {k} B: {kind} (start-up {a.alpha * 1e6:.2f} -> {b.alpha * 1e6:.2f} us, "
                     f"bandwidth {format_rate(a.beta)} -> {format_rate(b.beta)}{why})")
    quality = "poor" if fit.poor else "good" if fit.rms_rel_error < 0.05 else "fair"
    lines.append(f"fit quality: rms relative error {fit.rms_rel_error:.1%} ({quality})")
    if fit.poor:
        lines.append(f"warning: the timings scatter too much for a latency model (rms relative error above "
                     f"{POOR_FIT:.0%}): do not trust its regimes or kinks; measure on an idle machine or "
                     "with more --iterations")
    return "\n".join(lines)


# ---- Communication Balance Ratios (seed 001) ------------------------------------------
CBR_TESTS = {"latency": ("pingpong", "latency"), "bandwidth": ("bw", "bandwidth"),
             "bi-bandwidth": ("bibw", "bandwidth"), "multi-pair bandwidth": ("mbw", "bandwidth")}


def cbr(intra: "BenchRun | dict[str, BenchRun]", inter: "BenchRun | dict[str, BenchRun]") -> dict[str, dict[int, float]]:
    """CBR-x = x_intra / x_inter for each metric and message size both sides measured.

    A side is one run, or the run of each test (:func:`cbr_sides`: the tests may sit in separate
    files).  1 means balanced: ranks sensitive to x can go anywhere.
    """
    def of(side, test):
        run = side.get(test) if isinstance(side, dict) else side
        return run.of(test, "size") if run is not None else []

    out: dict[str, dict[int, float]] = {}
    for metric, (test, field) in CBR_TESTS.items():
        a = {r["bytes"]: r[field] for r in of(intra, test) if r.get(field)}
        b = {r["bytes"]: r[field] for r in of(inter, test) if r.get(field)}
        common = sorted(set(a) & set(b))
        if common:
            out[metric] = {s: a[s] / b[s] for s in common}
    return out


def cbr_sides(runs: Sequence["BenchRun"]) -> dict[str, dict[str, "BenchRun"]]:
    """Per side, ``intra`` (ranks on one host) or ``inter`` (on two), the run that measured each test
    of :data:`CBR_TESTS` there, judged by the pair of its first size record (pingpong's 0 and 1,
    mbw's 0 and n/2), so that ``analyze intra.jsonl inter.jsonl intra-mbw.jsonl inter-mbw.jsonl``
    pairs each test with its own files."""
    out: dict[str, dict[str, BenchRun]] = {}
    for run in runs:
        for test, _ in CBR_TESTS.values():
            recs = run.of(test, "size")
            if recs:
                kind = pair_kind(run, int(recs[0].get("src", 0)), int(recs[0].get("dst", 1)))
                side = "inter" if kind == "Inter-node" else "intra" if kind in ("Intra-socket", "Inter-socket") \
                    else None
                if side:
                    out.setdefault(side, {}).setdefault(test, run)
    return out


def cbr_missing(kinds: Sequence[str]) -> str:
    """Why no Communication Balance Ratios were printed, in words.

    >>> cbr_missing(["Intra-socket"])
    'no Communication Balance Ratios: they need two pingpong runs, one intra-node (both ranks on one host) and one inter-node (ranks on two hosts); these files hold only an intra-socket run. Run both and give both files: fabscope analyze intra.jsonl inter.jsonl'
    """
    have = (f"only {'an' if kinds[0][0] in 'AEIOUaeiou' else 'a'} {kinds[0].lower()} run" if len(kinds) == 1
            else f"{' and '.join(k.lower() for k in kinds)} runs" if kinds else "no pingpong run")
    return ("no Communication Balance Ratios: they need two pingpong runs, one intra-node (both ranks on one "
            f"host) and one inter-node (ranks on two hosts); these files hold {have}. "
            "Run both and give both files: fabscope analyze intra.jsonl inter.jsonl")


def pair_kind(run: "BenchRun", src: int = 0, dst: int = 1) -> str:
    """``Intra-socket``, ``Inter-socket`` or ``Inter-node`` for two ranks of a run."""
    if len(run.ranks["host"]) <= max(src, dst):
        return "unknown"
    cls, labels = classify(run, np.array([src]), np.array([dst]))
    return labels[int(cls[0])]


# ---- balance ratios (seed 004) -----------------------------------------------------------
def balance(run: "BenchRun", peak_gflops_per_core: float | None = None,
            flops_per_cycle: float = 16.0) -> dict[str, float] | None:
    """Bytes per FLOP of memory (STREAM) and interconnect (ping-pong), MAX (one
    core) and MIN (all cores of a node), as seed 004 defines them.

    Peak FLOPS per core is given, or read from the CPU clock the program
    reported times ``flops_per_cycle`` (16 = two 256-bit FMA units, doubles).
    """
    streams = run.of("stream", "stream")
    pp = [r for r in run.of("pingpong", "size") if r.get("bandwidth")]
    if not streams and not pp:
        return None
    h = run.header
    core_peak = (peak_gflops_per_core * 1e9 if peak_gflops_per_core
                 else float(h.get("cpu_mhz") or 0) * 1e6 * flops_per_cycle)
    if core_peak <= 0:
        raise MeasureError("peak FLOPS unknown: the CPU clock was not reported; give --peak-gflops")
    cores = int(h.get("online_cores") or 1)
    node_peak = core_peak * cores
    out: dict[str, float] = {"peak_gflops_core": core_peak / 1e9, "peak_gflops_node": node_peak / 1e9}
    single = [r["bandwidth"] for r in streams if r["mode"] == "single"]
    allr = [r["bandwidth"] for r in streams if r["mode"] == "all"]
    if single:
        out["memory_max"] = float(np.mean(single)) / core_peak
    if allr:
        out["memory_min"] = float(np.mean(allr)) / node_peak
    if pp:
        best = max(r["bandwidth"] for r in pp)
        out["interconnect_max"] = best / core_peak
        out["interconnect_min"] = best / node_peak
    return out
