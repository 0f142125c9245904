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

from fabscope.errors import MeasureError
from fabscope.fabric.model import MB, Fabric
from fabscope.measure.classes import PLAIN_LABELS, classify  # noqa: F401  (classify: re-exported)

if TYPE_CHECKING:
    from fabscope.measure.parse import BenchRun


def topo_lines(fabric: Fabric, group_level: str | None = None) -> list[str]:
    """Lines of the ``--topo`` file fabscope-bench reads: ``host leaf [coords]``.

    The group is the fabric's nearest level (the leaf switch) unless named.
    """
    key = group_level or (fabric.levels[0].key if fabric.levels else None)
    groups = fabric.groups[key] if key else np.asarray(fabric.host_switch)
    out = ["# host group [coordinates]: written by fabscope from fabric " + fabric.name]
    for h, name in enumerate(fabric.host_names):
        coords = "" if fabric.coords is None else " " + " ".join(str(int(x)) for x in fabric.coords[h])
        out.append(f"{name} {int(groups[h])}{coords}")
    return out


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


@dataclass(frozen=True)
class LatencyModel:
    regimes: tuple[Regime, ...]
    rms_rel_error: float

    @property
    def kinks(self) -> list[int]:
        """Message sizes where a new regime starts."""
        return [r.first for r in self.regimes[1:]]

    def predict(self, m: np.ndarray | float) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        out = np.empty_like(m)
        for i, r in enumerate(self.regimes):
            hi = self.regimes[i + 1].first if i + 1 < len(self.regimes) else np.inf
            sel = (m >= (r.first if i else -np.inf)) & (m < hi)
            out[sel] = r.alpha + m[sel] / r.beta
        return out


def _fit(m: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Weighted (relative) least squares of t = a + b m, b >= 0; returns a, b, sum of squared rel. errors."""
    w = 1.0 / t
    A = np.stack([w, m * w], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    if b < 0:  # no size dependence: a constant
        a, b = float(np.sum(w) / np.sum(w * w)), 0.0
    elif a < 0:  # a start-up time is never negative: pure bandwidth term
        a, b = 0.0, float(np.sum(m * w) / np.sum((m * w) ** 2))
    r = (a + b * m) / t - 1
    return float(a), float(b), float(r @ r)


def fit_latency_model(sizes: Sequence[float], times: Sequence[float], max_regimes: int = 4,
                      min_points: int = 3) -> LatencyModel:
    """Piecewise ``alpha + m/beta`` fit of a ping-pong sweep; breakpoints by dynamic programming."""
    m = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    keep = t > 0
    m, t = m[keep], t[keep]
    order = np.argsort(m)
    m, t = m[order], t[order]
    n = len(m)
    if n < 2:
        raise MeasureError("a latency model needs at least two message sizes")
    min_points = min(min_points, n)
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
    regimes, sq = [], 0.0
    for i, j in zip(best_cuts[:-1], best_cuts[1:]):
        a, b, e = _fit(m[i:j], t[i:j])
        sq += e
        regimes.append(Regime(int(m[i]), int(m[j - 1]), a, 1.0 / b if b > 0 else float("inf")))
    return LatencyModel(tuple(regimes), float(np.sqrt(sq / n)))


def format_model(fit: LatencyModel) -> str:
    lines = [f"{'sizes [B]':>22} {'alpha [us]':>11} {'beta [MB/s]':>12}"]
    for r in fit.regimes:
        lines.append(f"{r.first:>10} .. {r.last:<9} {r.alpha * 1e6:11.3f} {r.beta / MB:12.1f}")
    ks = ", ".join(str(k) for k in fit.kinks) or "none"
    lines.append(f"kinks (protocol changes) at: {ks} B; rms relative error {fit.rms_rel_error:.1%}")
    return "\n".join(lines)


# ---- Communication Balance Ratios (seed 001) ------------------------------------------
CBR_TESTS = {"latency": ("pingpong", "latency"), "bandwidth": ("bw", "bandwidth"),
             "bi-bandwidth": ("bibw", "bandwidth"), "multi-pair bandwidth": ("mbw", "bandwidth")}


def cbr(intra: "BenchRun", inter: "BenchRun") -> dict[str, dict[int, float]]:
    """CBR-x = x_intra / x_inter for each metric and message size both runs measured.

    1 means balanced: ranks sensitive to x can go anywhere.
    """
    out: dict[str, dict[int, float]] = {}
    for metric, (test, field) in CBR_TESTS.items():
        a = {r["bytes"]: r[field] for r in intra.of(test, "size") if r.get(field)}
        b = {r["bytes"]: r[field] for r in inter.of(test, "size") if r.get(field)}
        common = sorted(set(a) & set(b))
        if common:
            out[metric] = {s: a[s] / b[s] for s in common}
    return out


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
