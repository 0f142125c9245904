"""The random schedules of fabscope-bench, drawn exactly as its C code draws them.

One algorithm on both sides, so that ``fabscope simulate --seed S`` models the
pairs and rounds ``fabscope measure ... --seed S`` ran (csrc/draws.c; the
tests compare the two through ``fabscope-bench --list-pairs N``):

* the generator is splitmix64: ``state += 0x9E3779B97F4A7C15``, then the
  output mix ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
  z *= 0x94D049BB133111EB; z ^= z >> 31`` (all modulo 2^64);
* the shuffle is Fisher-Yates from the top: for ``i = n-1 .. 1``, swap
  ``a[i]`` with ``a[next() mod (i + 1)]``, starting from ``a = 0 .. n-1``;
* random-pairs round ``r``: shuffle with state ``seed * 1000003 + r``, then
  ``perm[0]-perm[1]``, ``perm[2]-perm[3]``, ... (an odd last rank sits out);
* random-ring: shuffle with state ``seed * 31 + 5``: the ring's order;
* random-msg: a state ``seed * 7919 + 17``; iteration ``i`` (warm-up ones
  first) shuffles with ``next()`` of it, then position ``k`` of the cycle
  sends ``low + next'() mod (high - low + 1)`` bytes to position ``k + 1``,
  ``next'`` from its own state ``state ^ (i * 0x9E37)``.

splitmix64's outputs do not depend on each other, only on the state, so a
whole shuffle's draws are computed at once with NumPy's wrapping ``uint64``.

Patterns fabscope-bench does not run (``bisection``, ``permutation``,
``partner-hops``: its ``hops`` test pairs deterministically) keep drawing
with NumPy's generator; the mapping module's figures rest on those draws.

>>> random_pairing(10, seed=1).tolist()            # partner of each rank (csrc: --list-pairs 10)
[6, 5, 8, 4, 3, 1, 0, 9, 2, 7]
>>> ring_order(5, seed=1).tolist()
[3, 0, 2, 4, 1]
>>> [(o.tolist(), b.tolist()) for o, b in msg_rounds(5, seed=1, rounds=1)]
[([1, 3, 0, 2, 4], [185, 884, 239, 108, 587])]
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix64(state: int, count: int) -> tuple[int, np.ndarray]:
    """``count`` outputs from ``state``; returns the state after them and the outputs (uint64).

    >>> st, z = splitmix64(0, 2)
    >>> [hex(int(x)) for x in z]                   # the published first outputs from seed 0
    ['0xe220a8397b1dcdaf', '0x6e789e6aa1b965f4']
    """
    state &= MASK
    k = np.arange(1, count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(state) + k * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (state + count * GAMMA) & MASK, z ^ (z >> np.uint64(31))


def shuffle(n: int, state: int) -> np.ndarray:
    """``0 .. n-1`` shuffled as ``fb_shuffle(a, n, state)`` shuffles them."""
    a = list(range(n))
    if n < 2:
        return np.array(a, dtype=np.int64)
    _, z = splitmix64(state, n - 1)
    j = (z % np.arange(n, 1, -1, dtype=np.uint64)).tolist()    # draw for i = n-1 .. 1
    for i, jj in zip(range(n - 1, 0, -1), j):
        a[i], a[jj] = a[jj], a[i]
    return np.array(a, dtype=np.int64)


def random_pairing(n_ranks: int, seed: int = 1, round_: int = 0) -> np.ndarray:
    """``partner[r]`` in random-pairs round ``round_`` (``-1``: sits out)."""
    perm = shuffle(n_ranks, seed * 1000003 + round_)
    partner = np.full(n_ranks, -1, dtype=np.int64)
    m = n_ranks // 2 * 2
    partner[perm[0:m:2]] = perm[1:m:2]
    partner[perm[1:m:2]] = perm[0:m:2]
    return partner


def random_pairs_rounds(n_ranks: int, seed: int = 1, rounds: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per round, the pairs as fabscope-bench prints them: lower rank, then its partner, in rank order."""
    out = []
    for r in range(rounds):
        p = random_pairing(n_ranks, seed, r)
        low = np.flatnonzero(p > np.arange(n_ranks))
        out.append((low, p[low]))
    return out


def ring_order(n_ranks: int, seed: int = 1) -> np.ndarray:
    """The random-ring test's order of the ranks."""
    return shuffle(n_ranks, seed * 31 + 5)


def msg_rounds(n_ranks: int, seed: int = 1, rounds: int = 1, low: int = 100,
               high: int = 1000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """random-msg's iterations, warm-up ones included: (cycle order, bytes each position sends)."""
    state = (seed * 7919 + 17) & MASK
    span = np.uint64(high - low + 1)
    for i in range(rounds):
        state, z = splitmix64(state, 1)
        order = shuffle(n_ranks, int(z[0]))
        _, zs = splitmix64(state ^ ((i * 0x9E37) & MASK), n_ranks)
        yield order, (zs % span).astype(np.int64) + low
