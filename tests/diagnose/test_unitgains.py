"""The null calibration's inner loop in C against its numpy reference, and the table against the exact
likelihood, on the effects of a real fit."""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.diagnose import unitgains
from fabscope.diagnose.calibration import NULL_GRID, add_rows
from fabscope.diagnose.fit import Fit
from fabscope.diagnose.noise import NoiseModel
from fabscope.diagnose.pairmodel import PairModel
from fabscope.fabric.generators import fat_tree


@pytest.fixture(scope="module")
def fitted():
    f = fat_tree(k=4, levels=3)
    rng = np.random.default_rng(3)
    hs, hd, sc = [], [], []
    for r in range(8):
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist(); hd += p[1::2].tolist(); sc += [r] * (f.n_hosts // 2)
    pm = PairModel(f, hs, hd, sc, routing="dmodk")
    noise = NoiseModel(0.0, 0.03, 0.1, -0.6, 0.3)
    bw = pm.bandwidth()
    fit = Fit(pm, np.log(bw), 0.0, noise)
    units = np.flatnonzero(np.asarray(fit.pair_unit.sum(axis=0)).ravel() > 0)
    rate = pm.flow_rates()
    eff = [(c, p, D.astype(np.float32)) for c, p, D in fit.effects(units, np.ones(fit.n_links), rate, bw, NULL_GRID)]
    E = np.stack([noise.sample(pm.n_pairs, rng) for _ in range(4)], axis=1)
    return fit, units, eff, E


def test_compiled_loop_equals_reference(fitted):
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, units, eff, E = fitted
    table = unitgains.nll_table(fit.noise)
    c = np.concatenate([x[0] for x in eff]); p = np.concatenate([x[1] for x in eff])
    D = np.concatenate([x[2] for x in eff])
    best, arg = unitgains.unit_minima(c, p, D, E, table, len(units))
    ref_best, ref_arg = unitgains.unit_minima_reference(c, p, D, E, table, len(units))
    assert np.isfinite(best).all() and (best < -0.5).any()
    np.testing.assert_allclose(best, ref_best, rtol=0, atol=1e-9)
    assert (arg == ref_arg).mean() > 0.999         # a tie may break apart by rounding only


def test_table_holds_the_exact_likelihood(fitted):
    """Each unit's best gain by the table is within 0.01 nat of the exact mixture's."""
    fit, units, eff, E = fitted
    table = unitgains.nll_table(fit.noise)
    c = np.concatenate([x[0] for x in eff]); p = np.concatenate([x[1] for x in eff])
    D = np.concatenate([x[2] for x in eff]).astype(float)
    best, _ = unitgains.unit_minima(c, p, D.astype(np.float32), E, table, len(units))
    nll = fit.noise.nll
    for r in range(E.shape[1]):
        e = E[p, r]
        out = np.zeros((len(units), len(NULL_GRID)))
        add_rows(out, c, nll(e[:, None] + D) - nll(e)[:, None])
        np.testing.assert_allclose(best[r], out.min(axis=1), rtol=0, atol=0.01)


@pytest.mark.parametrize("grid", ["null", "per-unit"])
def test_compiled_effects_equal_numpy(fitted, grid):
    """Fit.effects in C against its numpy path (water_levels), with one grid and with a grid per unit,
    at nominal capacities and with a link already cut."""
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, units, _, _ = fitted
    rng = np.random.default_rng(5)
    g = NULL_GRID if grid == "null" else np.sort(rng.uniform(0.05, 1.0, (len(units), 9)), axis=1)
    for cut in (None, int(units[3])):
        factor = np.ones(fit.n_links)
        if cut is not None:
            factor[fit.links_of(cut)] = 0.4
        rate, bw = fit.solve(factor)
        got = [x for x in fit.effects(units, factor, rate, bw, g, chunk=500)]
        ref = [x for x in fit.effects(units, factor, rate, bw, g, chunk=500, compiled=False)]
        assert len(got) == len(ref) > 1
        for (c1, p1, d1), (c2, p2, d2) in zip(got, ref):
            assert (c1 == c2).all() and (p1 == p2).all()
            np.testing.assert_allclose(d1, d2, rtol=1e-9, atol=1e-12)


def test_the_coarse_null_grid_refined_gives_the_fine_grids_penalty(fitted, monkeypatch):
    """NULL_GRID's factors, each draw's NULL_REFINE strongest units refined, give the penalty of a grid twice as
    fine (refined alike) to 0.05 nat; refining only the 5 strongest falls short where the strongest unit lies
    between two factors."""
    from fabscope.diagnose import calibration as cal

    fit, units, _, _ = fitted
    rate = fit.pm.flow_rates()
    bw = fit.pm.bandwidth()
    factor = np.ones(fit.n_links)
    fine = np.geomspace(NULL_GRID[0], NULL_GRID[-1], 2 * len(NULL_GRID) - 1)

    def null(grid, refine):
        monkeypatch.setattr(cal, "NULL_GRID", grid)
        return cal.null_calibration(fit, units, factor, rate, bw, seed=7, refine=refine)

    exact, ours, five = null(fine, cal.NULL_REFINE), null(NULL_GRID, cal.NULL_REFINE), null(NULL_GRID, 5)
    assert len(NULL_GRID) < len(fine) and cal.NULL_REFINE > 5
    assert abs(ours.penalty - exact.penalty) <= 0.05, (ours.penalty, exact.penalty)
    assert np.all(ours.maxima <= exact.maxima + 1e-9)             # a coarser search finds no more
    short, short5 = (exact.maxima - ours.maxima).mean(), (exact.maxima - five.maxima).mean()
    assert short < 0.02 and short5 > 2 * short, (short, short5)    # 0.010 and 0.057 nat here
