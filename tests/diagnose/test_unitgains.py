"""The null calibration's inner loop in C against its numpy reference, and the table against the exact
likelihood, on the effects of a real fit."""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.diagnose import calibration as cal
from fabscope.diagnose import unitgains
from fabscope.diagnose.cables import tied_directions
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
    E = np.stack([noise.sample(pm.n_pairs, rng) for _ in range(4)], axis=1)
    return fit, units, E


@pytest.fixture(scope="module", params=["every unit", "the null's"])
def null_effects(fitted, request):
    """The null's effects of every covered unit (every cable is its directions plus the pairs crossing both
    ways), or of the units the diagnosis's null takes (a host's tied directions left out: its cable's own
    entries)."""
    fit, units, _ = fitted
    if request.param == "the null's":
        tied = tied_directions(fit.pair_unit_csc, fit.n_links)
        units = units[(units >= fit.n_links) | ~tied[np.minimum(units, fit.n_links - 1)]]
    eff = cal.null_effects(fit, units, np.ones(fit.n_links), fit.pm.flow_rates(), fit.pm.bandwidth())
    return units, eff


def test_the_nulls_units_are_those_asked_each_cable_after_its_directions(fitted, null_effects):
    fit, _, _ = fitted
    units, eff = null_effects
    L = fit.n_links
    assert sorted(eff.units.tolist()) == sorted(units.tolist())
    for i in np.flatnonzero(eff.adds).tolist():
        c = int(eff.units[i]) - L
        assert c >= 0 and set(eff.units[i - eff.adds[i]:i].tolist()) <= {2 * c, 2 * c + 1}
    assert (eff.adds == 2).sum() > 10 and len(eff.extra[0]) > 0     # cables, and pairs crossing them both ways


def test_compiled_loop_equals_reference(fitted, null_effects):
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, _, E = fitted
    _, eff = null_effects
    table = unitgains.nll_table(fit.noise)
    best, arg = unitgains.unit_minima(eff, E, table)
    ref_best, ref_arg = unitgains.unit_minima_reference(eff, E, table)
    assert np.isfinite(best).all() and (best < -0.5).any()
    np.testing.assert_allclose(best, ref_best, rtol=0, atol=1e-9)
    assert (arg == ref_arg).mean() > 0.999         # a tie may break apart by rounding only


def test_four_factors_at_a_time_give_the_same_bits_as_one(fitted, null_effects):
    """AVX2's path (where the CPU has it) adds the same numbers in the same order as the scalar loop."""
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, _, E = fitted
    _, eff = null_effects
    table = unitgains.nll_table(fit.noise)
    one, four = unitgains.unit_minima(eff, E, table, simd=False), unitgains.unit_minima(eff, E, table, simd=True)
    assert (one[0] < -0.5).any()
    np.testing.assert_array_equal(four[0], one[0])
    np.testing.assert_array_equal(four[1], one[1])


def test_the_loop_carries_a_cables_directions_from_chunk_to_chunk(fitted, null_effects):
    """Entries in many chunks (a cable's directions in one, the cable in the next) give what one chunk gives."""
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, _, E = fitted
    units, eff = null_effects
    small = cal.null_effects(fit, units, np.ones(fit.n_links), fit.pm.flow_rates(), fit.pm.bandwidth(), chunk=40)
    assert len(small.chunks) > 20 * len(eff.chunks)
    table = unitgains.nll_table(fit.noise)
    np.testing.assert_array_equal(unitgains.unit_minima(small, E, table)[0], unitgains.unit_minima(eff, E, table)[0])


def test_each_units_gain_is_its_own_entries_by_the_exact_likelihood(fitted, null_effects):
    """Each unit's best gain (a cable's from its directions' sums and its corrections, by the table) is within
    0.01 nat of the exact mixture's over the unit's own entries (a cable's effects computed both ways at once)."""
    fit, _, E = fitted
    _, eff = null_effects
    table = unitgains.nll_table(fit.noise)
    best, _ = unitgains.unit_minima(eff, E, table)
    U = len(eff.units)
    own = list(fit.effects(eff.units, np.ones(fit.n_links), fit.pm.flow_rates(), fit.pm.bandwidth(), NULL_GRID))
    c = np.concatenate([x[0] for x in own]); p = np.concatenate([x[1] for x in own])
    D = np.concatenate([x[2] for x in own]).astype(np.float32).astype(float)
    nll = fit.noise.nll
    for r in range(E.shape[1]):
        e = E[p, r]
        out = np.zeros((U, len(NULL_GRID)))
        add_rows(out, c, nll(e[:, None] + D) - nll(e)[:, None])
        np.testing.assert_allclose(best[r], out.min(axis=1), rtol=0, atol=0.01)
    assert eff.entries() < len(c)          # fewer entries than the units' own


@pytest.mark.parametrize("grid", ["null", "per-unit"])
def test_compiled_effects_equal_numpy(fitted, grid):
    """Fit.effects in C against its numpy path (water_levels), with one grid and with a grid per unit,
    at nominal capacities and with a link already cut."""
    if not unitgains.available():
        pytest.skip("no C compiler")
    fit, units, _ = fitted
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
    fit, units, _ = fitted
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


def test_a_cable_is_summed_from_its_directions_only_where_that_costs_fewer_entries(fitted, null_effects):
    """Its pairs crossing both ways cost 3 entries each summed, its pairs crossing at all 1 each on its own."""
    fit, _, _ = fitted
    _, eff = null_effects
    L, pu = fit.n_links, fit.pair_unit_csc
    rows = lambda u: set(pu.indices[pu.indptr[u]:pu.indptr[u + 1]].tolist())  # noqa: E731
    summed = alone = 0
    for i, u in enumerate(eff.units.tolist()):
        if u < L or not set(eff.units[max(i - 2, 0):i].tolist()) & {2 * (u - L), 2 * (u - L) + 1}:
            continue
        a, b = rows(2 * (u - L)), rows(2 * (u - L) + 1)
        assert (eff.adds[i] > 0) == (3 * len(a & b) < len(a | b)), u
        summed += eff.adds[i] > 0
        alone += eff.adds[i] == 0
    assert summed > 10 and alone > 0, (summed, alone)
