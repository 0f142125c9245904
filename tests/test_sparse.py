"""fabscope.sparse holds the same arrays as scipy.sparse and its products give the same bits."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as sp_components

from fabscope import sparse


def _random(seed, n=40, m=30, k=200):
    rng = np.random.default_rng(seed)
    row, col = rng.integers(0, n, k), rng.integers(0, m, k)       # duplicates included
    data = rng.random(k) * 10.0 ** rng.integers(-3, 4, k)
    return (data, (row, col)), (n, m)


def _same(ours, theirs):
    assert ours.shape == theirs.shape
    assert np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.indices, theirs.indices)
    assert np.array_equal(ours.data, theirs.data)


@pytest.mark.parametrize("seed", range(5))
def test_arrays_and_products_are_scipys(seed):
    arg, shape = _random(seed)
    a, b = sparse.csr_matrix(arg, shape=shape), sp.csr_matrix(arg, shape=shape)
    _same(a, b)
    _same(a.tocsc(), b.tocsc())
    _same(a.T.tocsr(), b.T.tocsr())
    _same(sparse.csc_matrix(arg, shape=shape), sp.csc_matrix(arg, shape=shape))
    x = np.random.default_rng(seed + 100).random(shape[1])
    y = np.random.default_rng(seed + 200).random((shape[0], 3))
    assert np.array_equal(a @ x, b @ x)                      # bit for bit: the same order of sums
    assert np.array_equal(a.tocsc() @ x, b.tocsc() @ x)
    assert np.array_equal(a.T @ y, b.T @ y)
    assert np.array_equal(x @ a.T, x @ b.T)
    for axis in (None, 0, 1):
        assert np.array_equal(np.asarray(a.sum(axis=axis)), np.asarray(b.sum(axis=axis)))
    assert a.sum(axis=0).A1.shape == (shape[1],)
    c, d = a.tocoo(), b.tocoo()
    assert np.array_equal(c.row, d.row) and np.array_equal(c.col, d.col) and np.array_equal(c.data, d.data)
    assert np.array_equal(a.toarray(), b.toarray())


def test_selection_and_hstack_are_scipys():
    arg, shape = _random(7)
    a, b = sparse.csr_matrix(arg, shape=shape), sp.csr_matrix(arg, shape=shape)
    rows = np.array([5, 0, 9, 9])
    _same(a[rows], b[rows])
    _same(a[:, [3, 1]], b[:, [3, 1]])
    _same(a.tocsc()[:, [4]], b.tocsc()[:, [4]])
    mask = np.arange(shape[0]) % 3 == 0
    _same(a[mask], b[mask])
    _same(sparse.hstack([a, a.tocsc()], format="csr"), sp.hstack([b, b.tocsc()], format="csr"))
    # what is not done in numpy goes to scipy, with the same answer
    assert a[3, 4] == b[3, 4]


@pytest.mark.parametrize("seed", range(4))
def test_not_equal_is_scipys(seed):
    """diagnose's greedy search asks (a != b).nnz of two columns: numpy, scipy's answer."""
    arg, shape = _random(seed, k=60)
    arg2, _ = _random(seed + 10, k=60)
    a, b = sparse.csr_matrix(arg, shape=shape), sp.csr_matrix(arg, shape=shape)
    c, d = sparse.csr_matrix(arg2, shape=shape), sp.csr_matrix(arg2, shape=shape)
    for x, y, u, v in ((a, c, b, d), (a.tocsc()[:, [1]], a.tocsc()[:, [2]], b.tocsc()[:, [1]], b.tocsc()[:, [2]]),
                       (a[:, [3, 1]], a[:, [3, 1]], b[:, [3, 1]], b[:, [3, 1]])):
        ours, theirs = x != y, u != v
        assert ours.nnz == theirs.nnz
        assert np.array_equal(ours.toarray(), theirs.toarray())


def test_duplicates_summed_and_reset():
    m = sparse.csr_matrix((np.ones(3), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    m.data[:] = 1.0
    m.sum_duplicates()
    assert m.toarray().tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="outside the shape"):
        sparse.csr_matrix((np.ones(1), ([2], [0])), shape=(2, 2))


@pytest.mark.parametrize("seed", range(4))
def test_components_are_scipys(seed):
    rng = np.random.default_rng(seed)
    n = 300
    k = int(rng.integers(50, 400))
    u, v = rng.integers(0, n, k), rng.integers(0, n, k)
    g_ours = sparse.coo_matrix((np.ones(k, np.int8), (u, v)), shape=(n, n))
    g_sp = sp.coo_matrix((np.ones(k, np.int8), (u, v)), shape=(n, n))
    n1, lab1 = sparse.connected_components(g_ours, directed=False)
    n2, lab2 = sp_components(g_sp, directed=False)
    assert n1 == n2 and np.array_equal(lab1, lab2)


@pytest.mark.parametrize("compiled_from", [sparse.COMPILED_FROM, 0])
@pytest.mark.parametrize("n_major,n_minor", [(50, 40), (1 << 40, 1 << 22)])
def test_line_order_is_lexsorts(n_major, n_minor, compiled_from, monkeypatch):
    # packed into one integer where the three fit in 63 bits, else lexsort itself, or compiled (from
    # compiled_from entries, where the lines do not outnumber the entries: 2**40 lines never): the same
    # order, duplicates (equal major and minor) in input order
    monkeypatch.setattr(sparse, "COMPILED_FROM", compiled_from)
    rng = np.random.default_rng(3)
    major = rng.integers(0, min(n_major, 50), 4000)
    minor = rng.integers(0, min(n_minor, 40), 4000)
    np.testing.assert_array_equal(sparse._line_order(major, minor, n_major, n_minor), np.lexsort((minor, major)))
    # a compressed matrix turned the other way: the same arrays as scipy's
    a = sp.random(300, 200, density=0.05, random_state=4, format="csr")
    c = sparse.csr_matrix(a.toarray()).tocsc()
    ref = a.tocsc()
    ref.sort_indices()
    np.testing.assert_array_equal(c.indptr, ref.indptr)
    np.testing.assert_array_equal(c.indices, ref.indices)
    np.testing.assert_array_equal(c.data, ref.data)


@pytest.mark.parametrize("line_len", [3, 30, 300])
def test_compiled_line_order_is_lexsorts(line_len, monkeypatch):
    # lineorder.c: lines short (insertion), long (qsort), minor already in order (no pass), duplicates
    if sparse.line_order_compiled(np.zeros(1, np.int64), np.zeros(1, np.int64), 1) is None:
        pytest.skip(f"no compiled line order here: {sparse._load()[1]}")
    rng = np.random.default_rng(line_len)
    n_major = 2000 // line_len + 1
    for minor in (rng.integers(0, 50, 2000), np.sort(rng.integers(0, 50, 2000)), rng.integers(0, 5000, 2000)):
        major = rng.integers(0, n_major, 2000)
        order, in_order, ends, dups = sparse.line_order_compiled(major, minor, n_major)
        ref = np.lexsort((minor, major))
        np.testing.assert_array_equal(order, ref)
        np.testing.assert_array_equal(in_order, minor[ref])
        np.testing.assert_array_equal(ends, np.cumsum(np.bincount(major, minlength=n_major)))
        assert dups == int(np.sum((np.diff(major[ref]) == 0) & (np.diff(minor[ref]) == 0)))
    with pytest.raises(ValueError, match="major line outside"):       # never an index past the C code's counts
        sparse.line_order_compiled(np.array([0, n_major]), np.array([0, 0]), n_major)
    # whole matrices through it (every size takes it here): the same arrays as numpy's path, duplicates summed
    def both(build):
        monkeypatch.setattr(sparse, "COMPILED_FROM", 0)
        c = build()
        monkeypatch.setattr(sparse, "COMPILED_FROM", 1 << 62)
        return c, build()
    for seed in range(3):
        arg, shape = _random(seed, k=20 * line_len)
        for c, ref in (both(lambda: sparse.csr_matrix(arg, shape=shape)),
                       both(lambda: sparse.csr_matrix(arg, shape=shape).tocsc()),
                       both(lambda: sparse.csc_matrix(arg, shape=shape))):
            _same(c, ref)
            assert (c.indices.dtype, c.indptr.dtype, c.data.dtype) == \
                (ref.indices.dtype, ref.indptr.dtype, ref.data.dtype)
