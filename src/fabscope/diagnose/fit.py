"""The unknowns of the diagnosis, and the model of the measured pairs under their factors.

Every directed link is an unknown of its own: a lane that trains down one way slows only the
traffic that crosses the cable that way, and a host's injection (host -> switch) and ejection
(switch -> host) are the two directions of its cable.  A cable that trains at a lower width or
speed does so both ways, so each cable is also an unknown of its own, both directions at once.
The units the search scans are numbered

* ``0 .. n_links - 1``: one directed link (:class:`fabscope.fabric.model.Fabric` keeps a cable's
  two directions as links ``2c`` and ``2c + 1``);
* ``n_links + c``: cable ``c``, both directions by one factor.

The state of the fit is one capacity factor per directed link.  :class:`Fit` answers, for many
units and a grid of factors at once, how the log-likelihood of all pairs would move
(:meth:`Fit.scan`), locally (:mod:`.scan`: the flows on the unit's links keep their rates except
where the smaller capacity cuts them to the new water level).

>>> unit_links(5, n_links=8), unit_links(8 + 2, n_links=8)     # link 5; cable 2 both ways
([5], [4, 5])
"""

from __future__ import annotations

import numpy as np

from fabscope.diagnose.calibration import add_rows
from fabscope.diagnose.noise import NoiseModel
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.scan import water_levels
from fabscope.sparse import csr_matrix

#: capacity factors tried for a unit not yet suspected (of its current capacity)
GRID = np.geomspace(0.08, 0.95, 22)
#: the solves a fit keeps, in bytes of their rates and bandwidths (4 at least): 24 at 109,800 pairs,
#: where the second fit's re-estimate then finds 4 of its 9 solves made by the first
SOLVES_KEPT_BYTES = 64 << 20


def unit_links(u: int, n_links: int) -> list[int]:
    """The directed links of unit ``u``."""
    return [u] if u < n_links else [2 * (u - n_links), 2 * (u - n_links) + 1]


def pair_units(pm: PairModel) -> csr_matrix:
    """Pairs x units, 1 where the pair (either of its flows) crosses the unit: a directed link, or
    either direction of a cable.

    Built row by row from the pairs' links (canonical: sorted in each row, so a cable's two directions
    are neighbours), with no sort of the entries: 0.23 CPU s on a torus's 109,800 pairs, 1.1 sorted.

    >>> from fabscope.fabric.generators import fat_tree
    >>> pm = PairModel(fat_tree(k=4, levels=2), [0, 1], [5, 4], [0, 0])
    >>> m, pl, L = pair_units(pm).toarray(), pm.pair_links.toarray(), pm.fabric.n_links
    >>> bool((m[:, :L] == pl).all()), bool((m[:, L:] == (pl[:, 0::2] + pl[:, 1::2] > 0)).all())
    (True, True)
    """
    pl = pm.pair_links.tocsr()
    n, n_l = pm.n_pairs, pm.fabric.n_links
    ptr = pl.indptr.astype(np.int64)
    links = pl.indices.astype(np.int64)
    row = np.repeat(np.arange(n), np.diff(ptr))
    cable = links // 2
    first = np.ones(len(links), bool)         # the first entry of each (pair, cable)
    first[1:] = (cable[1:] != cable[:-1]) | (row[1:] != row[:-1])
    n_link, n_cable = np.diff(ptr), np.bincount(row[first], minlength=n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(n_link + n_cable, out=indptr[1:])
    indices = np.empty(indptr[-1], np.int64)
    data = np.empty(indptr[-1])
    at = indptr[row] + np.arange(len(links)) - ptr[row]            # each row: its links, then its cables
    indices[at], data[at] = links, pl.data
    rc = row[first]
    at = indptr[rc] + n_link[rc] + np.arange(len(rc)) - np.r_[0, np.cumsum(n_cable)][rc]
    indices[at], data[at] = n_l + cable[first], 1.0
    small = indptr[-1] < 2**31
    return csr_matrix((data, indices.astype(np.int32 if small else np.int64),
                       indptr.astype(np.int32 if small else np.int64)), shape=(n, n_l + n_l // 2))


class Fit:
    """The model of the measured pairs under a capacity factor per directed link, with what the scans
    need: each unit's rows of the solver's matrix (a row is one link in one concurrent set)."""

    def __init__(self, pm: PairModel, log_meas: np.ndarray, log_eff: float, noise: NoiseModel) -> None:
        f = pm.fabric
        self.pm, self.f = pm, f
        self.log_meas, self.log_eff, self.noise = log_meas, log_eff, noise
        self.n_links = f.n_links
        self.n_cables = f.n_links // 2
        self.n_units = self.n_links + self.n_cables
        A = pm.A.tocsr()
        self.A = A
        kind = pm.res_kind
        row_link = np.where(kind < f.n_links, kind, -1)
        order = np.argsort(row_link, kind="stable")
        self.rows_sorted = order
        counts = np.bincount(row_link[row_link >= 0], minlength=self.n_links)
        ptr = np.r_[0, np.cumsum(counts)] + int(np.sum(row_link < 0))
        # a cable's rows are its two links' rows, adjacent in link order
        c = np.arange(self.n_cables)
        self.unit_start = np.r_[ptr[:-1], ptr[2 * c]]
        self.unit_end = np.r_[ptr[1:], ptr[2 * c + 2]]
        self.pair_bytes = np.bincount(pm.flow_pair, weights=pm.bytes[pm.flow_pair], minlength=pm.n_pairs)
        self.pair_unit = pair_units(pm)
        self._solved: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self.pair_unit_csc = self.pair_unit.tocsc()

    def for_figures(self, log_meas: np.ndarray, log_eff: float, noise: NoiseModel) -> Fit:
        """This fit's matrices (shared, as its solves) for other measured figures and noise: what a
        second diagnosis of the same pairs fits (:mod:`.basis`)."""
        import copy

        out = copy.copy(self)
        out.log_meas, out.log_eff, out.noise = log_meas, log_eff, noise
        return out

    def links_of(self, u: int) -> list[int]:
        return unit_links(int(u), self.n_links)

    def capacity(self, factor: np.ndarray) -> np.ndarray:
        return self.f.link_capacity * factor

    def solve(self, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rate per flow, bandwidth per pair) under ``factor``; the last few kept (read-only, up to
        :data:`SOLVES_KEPT_BYTES`), since a search ends, the jitter is refitted and the next search starts
        at the same factors, and a second fit re-estimates the first's suspects from the same trials."""
        key = np.asarray(factor, float).tobytes()
        hit = self._solved.pop(key, None)
        if hit is None:
            rate = self.pm.flow_rates(self.capacity(factor))
            hit = (rate, self.pm.pair_bandwidth(rate))
            for a in hit:
                a.flags.writeable = False
        self._solved[key] = hit                   # the newest last
        keep = max(4, SOLVES_KEPT_BYTES // max(hit[0].nbytes + hit[1].nbytes, 1))
        while len(self._solved) > keep:
            self._solved.pop(next(iter(self._solved)))
        return hit

    def known(self, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray) -> None:
        """Tell :meth:`solve` the answer for ``factor`` (read-only copies kept): the healthy fabric's,
        which the diagnosis has before its search starts there."""
        hit = (np.array(rate, float), np.array(bw, float))
        for a in hit:
            a.flags.writeable = False
        self._solved[np.asarray(factor, float).tobytes()] = hit

    def resid(self, bw: np.ndarray) -> np.ndarray:
        return self.log_meas - self.log_eff - np.log(bw)

    def rows_of(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the given units, and which of them (index into ``units``) each row is."""
        starts, ends = self.unit_start[units], self.unit_end[units]
        lens = ends - starts
        idx = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens) + np.arange(lens.sum())
        return self.rows_sorted[idx], np.repeat(np.arange(len(units)), lens)

    def effects(self, units: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
                grid: np.ndarray, chunk: int = 400_000, compiled: bool = True):
        """What scaling unit ``units[i]`` by ``grid[j]`` (of its current capacity) does to the pairs, in
        chunks: (index into ``units`` of each entry, the pair, log(new time / current time) per grid
        factor).  Entries come sorted by unit; pairs the unit does not slow have no entry.  In C
        (:func:`.unitgains.effects`) where a compiler is found and ``compiled``; else, and as the
        reference the tests hold it to, in numpy (:func:`.scan.water_levels`)."""
        from fabscope.diagnose import unitgains

        compiled = compiled and unitgains.available()
        pm, A = self.pm, self.A
        t_cur = self.pair_bytes / bw
        link_cap = self.capacity(factor)
        nnz_row = np.diff(A.indptr)
        rows, which = self.rows_of(units)
        per_unit = np.bincount(which, weights=nnz_row[rows], minlength=len(units))   # whole numbers: exact
        # chunks of units, so that entries x grid stays in memory
        bounds = [0]
        acc = 0.0
        for i, v in enumerate(per_unit):
            acc += v
            if acc > chunk:
                bounds.append(i + 1)
                acc = 0.0
        if bounds[-1] != len(units):
            bounds.append(len(units))
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows, which = self.rows_of(units[a:b])
            if not len(rows):
                continue
            starts, ends = A.indptr[rows], A.indptr[rows + 1]
            lens = ends - starts
            pos = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens) + np.arange(lens.sum())
            local_row = np.repeat(np.arange(len(rows)), lens)
            flows = A.indices[pos]
            wts = A.data[pos]
            cap_row = link_cap[pm.res_kind[rows]]
            # a pair's entries (its two flows on a cable's two rows) are one group: sorted by unit and pair
            key = which[local_row] * pm.n_pairs + pm.flow_pair[flows]
            order = np.argsort(key, kind="stable")
            ks = key[order]
            first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
            ukey = ks[first]
            p = ukey % pm.n_pairs
            b_f = pm.bytes[pm.flow_pair[flows]]
            if compiled:
                scale_u = np.broadcast_to(grid, (b - a, grid.shape[-1])) if grid.ndim == 1 else grid[a:b]
                D = unitgains.effects(np.r_[0, np.cumsum(lens)], flows, rate, wts, cap_row, which, scale_u,
                                      np.r_[first, len(ks)], order, local_row[order], b_f, t_cur[p])
            else:
                r = rate[flows]
                fin = np.isfinite(r)
                scale = grid[None, :] if grid.ndim == 1 else grid[a + which]      # one grid per unit
                lvl = water_levels(local_row[fin], r[fin], wts[fin], cap_row, scale)
                new = np.minimum(r[:, None], lvl[local_row])
                with np.errstate(divide="ignore", invalid="ignore"):
                    dt = np.where(fin[:, None], b_f[:, None] / new - (b_f / r)[:, None], 0.0)
                # summed per group by one reduceat (np.add.at over entries x grid was a tenth of the diagnosis)
                with np.errstate(divide="ignore"):
                    D = np.log1p(np.add.reduceat(dt[order], first, axis=0) / t_cur[p, None])
            keep = D[:, 0] > 0                       # the strongest cut slows the pair at all
            yield a + ukey[keep] // pm.n_pairs, p[keep], D[keep]

    def scan(self, units: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
             grid: np.ndarray, chunk: int = 400_000) -> np.ndarray:
        """Change of the misfit (negative log-likelihood of all pairs under the noise model, nats) if
        unit ``units[i]`` were scaled by ``grid[j]`` (of its current capacity): len(units) x len(grid)."""
        out = np.zeros((len(units), grid.shape[-1]))
        e_cur = self.resid(bw)
        loss_cur = self.noise.nll(e_cur)
        for c, p, D in self.effects(units, factor, rate, bw, grid, chunk):
            d = self.noise.nll(e_cur[p, None] + D) - loss_cur[p, None]
            add_rows(out, c, d)
        return out

    def scan_best(self, units: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
                  grid: np.ndarray = None) -> tuple[np.ndarray, np.ndarray]:
        """Per unit: the largest drop of the misfit (nats) and the factor that gives it: the grid, then
        9 factors around each unit's best (the nominal spread can be far finer than the grid's steps,
        and a factor a step off leaves every crossing pair several sigmas out)."""
        grid = GRID if grid is None else grid
        step = float(grid[1] / grid[0])
        # beside the grid, the factor each unit's slow crossing pairs point to (their mean residual:
        # exact for pairs the unit alone limits), and two neighbours
        e = self.resid(bw)
        slow = (e < -2 * self.noise.sigma).astype(float)
        pc = self.pair_unit_csc[:, units]
        n_slow = pc.T @ slow
        with np.errstate(invalid="ignore", divide="ignore"):
            target = np.clip(np.exp((pc.T @ (e * slow)) / n_slow), GRID[0] * 1.1, 0.99)
        # one direction of a ping-pong at x slows the pair to 2x / (1 + x): the link's factor is r / (2 - r)
        one_way = units < self.n_links
        target = np.where(one_way, target / (2 - target), target)
        target = np.where(n_slow > 0, target, 0.5)
        grid2 = np.c_[np.broadcast_to(grid, (len(units), len(grid))),
                      target[:, None] * np.array([0.97, 1.0, 1.03])[None, :]]
        d = self.scan(units, factor, rate, bw, grid2)
        j = np.argmin(d, axis=1)
        rows = np.arange(len(units))
        fine = grid2[rows, j][:, None] * np.geomspace(1 / step, step, 9)[None, :]
        fine = np.minimum(fine, 1.0)
        d2 = self.scan(units, factor, rate, bw, fine)
        k = np.argmin(d2, axis=1)
        better = d2[rows, k] < d[rows, j]
        gain = -np.where(better, d2[rows, k], d[rows, j])
        best = np.where(better, fine[rows, k], grid2[rows, j])
        return gain, best
