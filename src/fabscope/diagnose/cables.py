"""Cables and their directions as the diagnosis names them, and the ones its pairs cannot tell apart.

A cable ``c`` is the two directed links ``2c`` and ``2c + 1`` of the fabric; its name is its ends
with their ports (``s1-0000[3] -- s2-0001[1]``).  A direction is named by its ends in order
(``s1-0000 -> s2-0001``); on a host's cable, ``injection`` (host -> switch) or ``ejection``.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> cable_name(f, 0), cable_host(f, 0), direction_name(f, 0), direction_name(f, 1)
('h0000[1] -- s1-0000[1]', 'h0000', 'injection', 'ejection')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.fabric.model import Fabric
from fabscope.sparse import csr_matrix


def cable_name(f: Fabric, c: int) -> str:
    i = 2 * c
    a, b = f.node_names[f.link_src[i]], f.node_names[f.link_dst[i]]
    return f"{a}[{int(f.link_src_port[i])}] -- {b}[{int(f.link_dst_port[i])}]"


def cable_host(f: Fabric, c: int) -> str | None:
    s, d = int(f.link_src[2 * c]), int(f.link_dst[2 * c])
    h = s if s < f.n_hosts else d if d < f.n_hosts else -1
    return f.node_names[h] if h >= 0 else None


def direction_name(f: Fabric, link: int) -> str:
    """``injection`` / ``ejection`` on a host's cable, else ``a -> b``."""
    s, d = int(f.link_src[link]), int(f.link_dst[link])
    if s < f.n_hosts:
        return "injection"
    if d < f.n_hosts:
        return "ejection"
    return f"{f.node_names[s]} -> {f.node_names[d]}"


def pair_cables(pm: Any, n_c: int, pair_unit: Any = None) -> csr_matrix:
    """Pairs x cables, 1 where the pair crosses the cable (either way, either direction of the pair).
    ``pair_unit``: the fit's pairs x units (:func:`.fit.pair_units`), where the caller has it: its cable
    columns are this matrix, taken as they are (no sort: 0.03 CPU s against 0.07 sorted, on a torus's
    109,800 pairs: ``bench/bench_sparse.py``).

    >>> from fabscope.diagnose.fit import pair_units
    >>> from fabscope.diagnose.pairmodel import PairModel
    >>> from fabscope.fabric.generators import fat_tree
    >>> pm = PairModel(fat_tree(k=4, levels=2), [0, 1, 2], [5, 4, 3], [0, 0, 1])
    >>> a, b = (pair_cables(pm, pm.fabric.n_links // 2, pu) for pu in (None, pair_units(pm)))
    >>> (a != b).nnz, a.nnz, a.data.tolist() == [1.0] * a.nnz
    (0, 14, True)
    """
    if pair_unit is not None:
        pu, n_l = pair_unit.tocsr(), pm.fabric.n_links
        keep = pu.indices >= n_l
        indptr = np.r_[0, np.cumsum(keep)][pu.indptr].astype(pu.indptr.dtype)      # kept before each row's start
        return csr_matrix((pu.data[keep], pu.indices[keep] - n_l, indptr), shape=(pm.n_pairs, n_c))
    pl = pm.pair_links.tocoo()
    m = csr_matrix((np.ones(len(pl.row)), (pl.row, pl.col // 2)), shape=(pm.n_pairs, n_c))
    m.data[:] = 1.0                      # canonical already: a cable crossed both ways counts once
    return m


def column_rows(csc: Any, j: int) -> np.ndarray:
    """The rows (sorted) where column ``j`` of ``csc`` (a CSC matrix) holds a positive entry: its own
    entries read, not the whole matrix's, as a column of a CSR matrix would be.

    >>> column_rows(csr_matrix(np.array([[1, 0], [0, 1], [1, 1.0]])).tocsc(), 0).tolist()
    [0, 2]
    """
    a, b = csc.indptr[j], csc.indptr[j + 1]
    return np.sort(csc.indices[a:b][csc.data[a:b] > 0])


def tie_group(pair_cable: csr_matrix, c: int, by_column: Any = None) -> list[int]:
    """Columns crossed by exactly the pairs that cross column ``c``.  ``by_column``: the same matrix as CSC,
    where the caller keeps one (a column read from it costs that column's entries, not the matrix's).

    >>> m = csr_matrix(np.array([[1, 1, 0], [1, 1, 1], [0, 0, 1.0]]))
    >>> tie_group(m, 0), tie_group(m, 0, m.tocsc()), tie_group(m, 2)
    ([0, 1], [0, 1], [2])
    """
    if by_column is None:
        col = pair_cable[:, [c]].toarray().ravel() > 0
        cnt = np.asarray(pair_cable.sum(axis=0)).ravel()
    else:
        col = np.zeros(pair_cable.shape[0], bool)
        col[column_rows(by_column, c)] = True
        cnt = np.asarray(by_column.sum(axis=0)).ravel()
    rows = pair_cable[np.flatnonzero(col)]
    inall = np.flatnonzero(np.asarray(rows.sum(axis=0)).ravel() == col.sum())
    return [int(x) for x in inall if cnt[x] == col.sum()]


def tied_directions(pair_unit: Any, n_links: int) -> np.ndarray:
    """Per directed link: crossed by exactly the pairs that cross its reverse (a host's cable under
    ping-pong: the data cannot tell its two directions apart).  ``pair_unit``: pairs x units (directed
    links first), CSC or CSR.

    >>> from scipy.sparse import csr_matrix
    >>> m = csr_matrix(np.array([[1, 1, 1, 0], [1, 1, 0, 1.0]]))    # links 0, 1 alike; 2, 3 not
    >>> tied_directions(m, 4).tolist()
    [True, True, False, False]
    """
    pl = pair_unit.tocsc()[:, :n_links]
    rng = np.random.default_rng(12345)
    h = pl.T @ rng.random((pl.shape[0], 2))
    cnt = np.diff(pl.indptr)
    rev = np.arange(n_links) ^ 1
    same = (cnt == cnt[rev]) & np.all(np.abs(h - h[rev]) <= 1e-9 * np.maximum(np.abs(h), 1.0), axis=1)
    for link in np.flatnonzero(same & (np.arange(n_links) % 2 == 0)).tolist():    # exact, where the hashes agree
        a = pl.indices[pl.indptr[link]:pl.indptr[link + 1]]
        b = pl.indices[pl.indptr[link + 1]:pl.indptr[link + 2]]
        if not np.array_equal(np.sort(a), np.sort(b)):
            same[link] = same[link + 1] = False
    return same & (cnt > 0)


def ties(pair_cable: csr_matrix) -> tuple[list[list[int]], np.ndarray]:
    """Groups of columns (cables) crossed by exactly the same pairs; and the columns no pair crosses."""
    rng = np.random.default_rng(12345)
    n_p = pair_cable.shape[0]
    h = (pair_cable.T @ rng.random((n_p, 2))).round(9)
    cover = np.asarray(pair_cable.sum(axis=0)).ravel()
    covered = np.flatnonzero(cover > 0)
    key: dict[tuple, list[int]] = {}
    for c in covered.tolist():
        key.setdefault((h[c, 0], h[c, 1], cover[c]), []).append(c)
    return list(key.values()), np.flatnonzero(cover == 0)


def separating_pairs(pm: Any, c: int, others: list[int], crossing: np.ndarray,
                     tries: int = 256) -> list[dict[str, Any]]:
    """For each cable tied with ``c``: a host pair whose route crosses one of the two and not the other."""
    f = pm.fabric
    rng = np.random.default_rng(c)
    names = f.host_names
    ends = np.unique(np.r_[pm.hs[crossing], pm.hd[crossing]])
    a = rng.choice(ends, tries)
    b = rng.integers(0, f.n_hosts, tries)
    flip = rng.random(tries) < 0.5
    src, dst = np.where(flip, b, a), np.where(flip, a, b)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    routes = pm.router.routes(src, dst)
    rev = pm.router.routes(dst, src)
    hit = np.zeros((len(src), f.n_links // 2), bool)
    hit[routes.flow, routes.link // 2] = True
    hit[rev.flow, rev.link // 2] = True
    out = []
    for o in others:
        sep = np.flatnonzero(hit[:, c] != hit[:, o])
        if len(sep):
            i = int(sep[0])
            out.append({"cable": cable_name(f, o), "pair": [names[src[i]], names[dst[i]]],
                        "crosses": cable_name(f, c if hit[i, c] else o)})
        else:
            out.append({"cable": cable_name(f, o), "pair": None, "crosses": None})
    return out
