"""The search: the sparse set of units (directed links, cables) whose factors explain the pairs.

Greedy, like NetBouncer's iterative explanation: among the units slow pairs cross, the one whose
degradation most raises the log-likelihood of *all* pairs (:meth:`.fit.Fit.scan_best`) is taken
while its gain pays the penalty ``lam``; the model is rerun after each.  Then every suspect is
re-estimated with the others in place and dropped if it no longer pays its way, and a cable taken one
direction at a time, both ways, becomes the cable where one factor explains the pairs as well.  Units never share
a link: once a direction or a cable is taken, the units that overlap it leave the candidates (the
re-estimation moves its factor).

>>> free_units(np.array([True, False, False, False]), [0, 1, 4, 5])   # link 0 taken: cable 0 is not free
array([False,  True, False,  True])
"""

from __future__ import annotations

import numpy as np

from fabscope.arrays import unique
from fabscope.diagnose.budget import too_mild
from fabscope.diagnose.fit import GRID, Fit

#: a direction is named rather than its whole cable only where some pair crosses one direction and not
#: the other (a host's injection and ejection are crossed by the same ping-pong pairs), and the
#: direction explains the pairs better by more than this share of its evidence (and 1 nat): else the
#: data cannot tell the two accounts apart and the cable, both ways, is the common fault (a cable
#: trained at a lower width)
TIE_SHARE = 0.03


def free_units(taken: np.ndarray, units) -> np.ndarray:
    """Which ``units`` share no link with the ``taken`` links (bool per directed link)."""
    L = len(taken)
    u = np.asarray(units, np.int64)
    d = u < L
    c = np.where(d, 0, u - L)
    return np.where(d, ~taken[np.where(d, u, 0)], ~(taken[2 * c] | taken[2 * c + 1]))


def binding_excess(fit: Fit, factor: np.ndarray, rate: np.ndarray, is_slow: np.ndarray, p0: float) -> np.ndarray:
    """Per unit (directed links, then cables), how far its slow pairs stand above chance among the
    pairs it holds back now (its links bind them: :meth:`.pairmodel.PairModel.binding`), in binomial
    standard deviations at the share ``p0`` of all pairs that are slow.

    The slow-share screen ranks a unit by the pairs crossing it; a unit that limits few of them (a
    host whose other pairs are held elsewhere, below what it would give) then looks like jitter,
    however consistent its few slow pairs are: 12 pairs in 112 slow, 1 in 10 being jittered.  Among
    the pairs it holds back, they are 12 in 12.

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.diagnose.noise import NoiseModel
    >>> from fabscope.diagnose.pairmodel import PairModel
    >>> f = fat_tree(k=2, levels=2)
    >>> pm = PairModel(f, np.array([0, 1]), np.array([2, 3]), scenario=np.array([0, 1]), routing="dmodk")
    >>> fit = Fit(pm, np.log(pm.bandwidth()), 0.0, NoiseModel(0.0, 0.01, 0.1, -0.7, 0.3))
    >>> rate, _ = fit.solve(np.ones(f.n_links))
    >>> z = binding_excess(fit, np.ones(f.n_links), rate, np.array([1.0, 0.0]), 0.5)
    >>> host0 = fit.n_links + int(np.flatnonzero(f.link_src == 0)[0]) // 2     # host 0's cable: pair 0
    >>> float(z[host0]), float(z.max()) == float(z[host0])
    (1.0, True)
    """
    L, n_units = fit.n_links, fit.n_units
    flows, res = fit.pm.binding(rate, fit.capacity(factor))
    on_link = res < L
    pair = fit.pm.flow_pair[flows[on_link]]
    link = res[on_link]
    n = fit.pm.n_pairs
    counts = np.zeros((2, n_units))
    for unit in (link, L + link // 2):            # each pair once per unit it is held back by
        key = unique(pair * n_units + unit)
        p, u = key // n_units, key % n_units
        np.add.at(counts[0], u, 1.0)
        np.add.at(counts[1], u, is_slow[p])
    p0 = min(max(p0, 1.0 / max(n, 1)), 0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (counts[1] - p0 * counts[0]) / np.sqrt(p0 * (1 - p0) * counts[0])
    return np.where(counts[0] > 0, z, -np.inf)


def search(fit: Fit, factor: np.ndarray, lam: float, thr: float, *, max_suspects: int = 40, screen: int = 256,
           start: list[int] | None = None, mildest: float = 1.0
           ) -> tuple[np.ndarray, list[int], dict[int, float], int]:
    """(factor per directed link, chosen units, their evidence in nats, full scans made), from
    ``factor`` with the units ``start`` already chosen at their factors there (they are re-estimated
    and kept only where they still pay); a pair is slow ``thr`` below the model.  A unit whose best
    factor lies above ``mildest`` is not taken, and one re-estimated there is dropped, whatever it gains
    (the model's own error can fake so mild a fault: :func:`fabscope.diagnose.tomography.diagnose`)."""
    L, pm, pu = fit.n_links, fit.pm, fit.pair_unit
    factor = factor.copy()
    rate, bw = fit.solve(factor)
    crossing_count = np.asarray(pu.sum(axis=0)).ravel()
    chosen: list[int] = list(start or [])
    gains: dict[int, float] = {}
    taken = np.zeros(L, bool)          # links some chosen unit holds (units never overlap)
    for u in chosen:
        taken[fit.links_of(u)] = True

    def free(units) -> np.ndarray:
        return free_units(taken, units)

    # lazy greedy: a full scan ranks every candidate; then only the best stale candidate is rescanned
    # with the current rates, and taken if it still beats the next one (gains only shrink as faults
    # are explained); a last full scan checks that nothing was missed.
    full_scans = 0
    while len(chosen) < max_suspects and full_scans < 4:
        e = fit.resid(bw)
        slow = np.flatnonzero(e < -thr)
        if not len(slow):
            break
        cand = unique(pu[slow].indices)
        cand = cand[free(cand)]
        if not len(cand):
            break
        if len(cand) > screen:
            # screening: units whose crossing pairs are mostly slow first (slow^2 / crossing) ...
            is_slow = np.zeros(pm.n_pairs)
            is_slow[slow] = 1.0
            n_slow = pu.T @ is_slow
            score = n_slow[cand] ** 2 / np.maximum(crossing_count[cand], 1)
            first = cand[np.argsort(-score, kind="stable")[:screen]]
            # ... and beside them, the units whose slow pairs stand out among the pairs they hold back
            z = binding_excess(fit, factor, rate, is_slow, len(slow) / pm.n_pairs)[cand]
            top = np.argsort(-z, kind="stable")[:max(screen // 4, 1)]
            more = cand[top[z[top] > 0]]
            # appended after the first screen's order (a tie between units crossed by the same slow pairs
            # goes as it did: the data cannot tell them apart, and the suspect lists them as tied)
            cand = np.r_[first, more[~np.isin(more, first)]]
        stale, _ = fit.scan_best(cand, factor, rate, bw)
        full_scans += 1
        n_taken = 0
        while len(chosen) < max_suspects:
            i = int(np.argmax(stale))
            if stale[i] < lam:
                break
            u = int(cand[i])
            if not free([u])[0]:
                stale[i] = -np.inf
                continue
            g_arr, best = fit.scan_best(np.array([u]), factor, rate, bw)
            g = float(g_arr[0])
            rest = np.delete(stale, i)
            if too_mild(best[0], mildest):        # too mild to tell from the model's error
                stale[i] = -np.inf
                continue
            if g < lam or g < rest.max(initial=-np.inf):
                stale[i] = g if g >= lam else -np.inf      # re-queued with its fresh gain
                continue
            if u < L and free([L + u // 2])[0]:
                gc, bc = fit.scan_best(np.array([L + u // 2]), factor, rate, bw)
                a, b = fit.pair_unit_csc[:, [u]], fit.pair_unit_csc[:, [u ^ 1]]
                same = (a != b).nnz == 0      # no pair crosses one direction and not the other
                if same or float(gc[0]) >= g - max(1.0, TIE_SHARE * g):
                    u, g, best = L + u // 2, float(gc[0]), bc
            links = fit.links_of(u)
            factor[links] *= float(best[0])
            taken[links] = True
            chosen.append(u)
            stale[i] = -np.inf
            n_taken += 1
            rate, bw = fit.solve(factor)
        if not n_taken:
            break
    # re-estimate each suspect with the others in place; drop those that no longer pay (again if one went)
    for _ in range(2):
        changed = False
        for u in list(chosen):
            links = fit.links_of(u)
            trial = factor.copy()
            trial[links] = 1.0
            r1, b1 = fit.solve(trial)
            g_arr, best = fit.scan_best(np.array([u]), trial, r1, b1, np.r_[GRID, 1.0])
            g = float(g_arr[0])
            if g < lam or best[0] >= 1.0 or too_mild(best[0], mildest):
                chosen.remove(u)
                factor[links] = 1.0
                taken[links] = False
                changed = True
                continue
            factor[links] = float(best[0])
            gains[u] = g
        if not changed:
            break
    # a cable taken one direction at a time, both ways (once one direction is taken the other is a unit
    # of its own): the cable, where one factor both ways explains the pairs as well (a cable trained at a
    # lower width or speed is the common fault), compared with the whole model rerun both ways
    for c in sorted({u // 2 for u in chosen if u < L and (u ^ 1) in chosen}):
        ab = [2 * c, 2 * c + 1]
        trial = factor.copy()
        trial[ab] = 1.0
        r1, b1 = fit.solve(trial)
        base = float(fit.noise.nll(fit.resid(b1)).sum())
        joint = base - float(fit.noise.nll(fit.resid(fit.solve(factor)[1])).sum())
        g_arr, best = fit.scan_best(np.array([L + c]), trial, r1, b1)
        trial[ab] = float(best[0])
        whole = base - float(fit.noise.nll(fit.resid(fit.solve(trial)[1])).sum())
        if whole >= joint - max(1.0, TIE_SHARE * joint):
            chosen = [u for u in chosen if u not in ab] + [L + c]
            gains = {u: g for u, g in gains.items() if u not in ab}
            gains[L + c] = float(g_arr[0])
            factor = trial
    return factor, chosen, gains, full_scans


def reestimate(fit: Fit, factor: np.ndarray, chosen: list[int], lam: float, mildest: float = 1.0
               ) -> tuple[np.ndarray, list[int], dict[int, float], int]:
    """:func:`search`'s result for the units ``chosen`` at ``factor`` re-estimated under another fit of
    the same pairs (a second nominal model), none added: backward elimination.  Each unit's best gain
    and factor is taken with the others in place; while the weakest does not pay ``lam`` it goes, alone,
    and the rest are estimated again.  (Dropping the first unit found short in a fixed order, as the
    search's own last pass does, can drop the one of two units crossed by the same slow pairs that
    explains them better: a slow host's cable before a switch direction beside it.)  Then each is
    set to its best factor with the others at theirs; a unit whose best factor lies above ``mildest`` does
    not pay.  Returns as :func:`search` does."""
    factor = factor.copy()
    chosen = list(chosen)

    def best(u: int) -> tuple[float, float]:
        trial = factor.copy()
        trial[fit.links_of(u)] = 1.0
        r1, b1 = fit.solve(trial)
        g_arr, x = fit.scan_best(np.array([u]), trial, r1, b1, np.r_[GRID, 1.0])
        return float(g_arr[0]), float(x[0])

    def cuts(x: float) -> bool:          # a factor the unit may be named at
        return x < 1.0 and not too_mild(x, mildest)

    while chosen:
        est = {u: best(u) for u in chosen}
        weakest = min(chosen, key=lambda u: est[u][0] if cuts(est[u][1]) else -np.inf)
        g, x = est[weakest]
        if g >= lam and cuts(x):
            break
        chosen.remove(weakest)
        factor[fit.links_of(weakest)] = 1.0
    gains: dict[int, float] = {}
    for u in chosen:                    # each at its best with the others at theirs
        gains[u], x = best(u)
        factor[fit.links_of(u)] = x
    return factor, chosen, gains, 0

