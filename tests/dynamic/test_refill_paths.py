"""The compiled engine's refill against the Python reference, on resource systems built to
exercise it: many flows sharing overlapping chains of resources (refills that spread hop by hop),
events at the same instant (equal sizes and rounds), flows whose bottleneck moves as others
finish, caps, uneven weights, ping-pongs whose reply starts as (latency 0) or just after (a
latency) the ping ends.

What differs from the reference (flowsim.c): one progressive filling per refill that takes a
fixed flow in when a resource it crosses would fill below its rate ("at fill") or when the level
reaches its rate and its bottleneck no longer holds it ("at check"; else the check keeps it);
one finish event per flow moved in place; the lists of flows bottlenecked on each resource; each
resource's largest rate kept.  A wrong path gives other rates (the refill's result) or other
events: both are compared here.
"""

import numpy as np
import pytest

from fabscope.dynamic import engine, fast
from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths

pytestmark = pytest.mark.skipif(not fast.available(), reason=f"no compiled engine: {fast.why_not()}")


def chains(seed: int, n_res: int = 12, n_paths: int = 30, n_msgs: int = 120, latency: float = 0.0,
           same_size: bool = False) -> tuple[Program, Paths, np.ndarray]:
    """Paths over contiguous stretches of a line of resources (each shares resources with its
    neighbours, so a change spreads along the line), random capacities, weights and a few caps;
    messages in rounds per rank, so that many start together."""
    rng = np.random.default_rng(seed)
    capacity = rng.choice([1.0, 2.0, 3.0, 5.0], n_res) * 1e9
    ptr, res, w = [0], [], []
    for _ in range(n_paths):
        a = int(rng.integers(0, n_res))
        b = int(min(n_res, a + rng.integers(1, 5)))
        res += list(range(a, b))
        w += rng.choice([1.0, 1.0, 0.5, 2.0], b - a).tolist()
        ptr.append(len(res))
    cap = np.where(rng.random(n_paths) < 0.15, rng.choice([2e8, 7e8], n_paths), np.inf)
    hosts = np.arange(n_paths)
    paths = Paths(hosts, hosts, np.array(ptr, np.int64), np.array(res, np.int64), np.array(w), cap,
                  np.full(n_paths, latency), np.diff(ptr), capacity, n_res, "chains")
    n_ranks = 16
    src = rng.integers(0, n_ranks, n_msgs)
    dst = (src + rng.integers(1, n_ranks, n_msgs)) % n_ranks
    size = np.full(n_msgs, 1e6) if same_size else rng.choice([1e5, 1e6, 4e6], n_msgs) * rng.uniform(0.5, 1.5, n_msgs)
    rnd = rng.integers(0, 2, n_msgs)
    prog = Program.from_arrays("chains", n_ranks, src, dst, size, rnd)
    return prog, paths, rng.integers(0, n_paths, n_msgs)


def both(prog: Program, paths: Paths, msg_path: np.ndarray, rates: list | None = None):
    py = engine.run_program(prog, paths.capacity, [paths.resources(p) for p in range(paths.n_paths)],
                            [paths.weight[paths.indptr[p]:paths.indptr[p + 1]].tolist() for p in range(paths.n_paths)],
                            paths.cap, paths.latency, msg_path,
                            observer=None if rates is None else lambda t, r: rates.append(dict(r)))
    return py, fast.run_program(prog, paths, msg_path)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("kind", ["spread", "simultaneous", "latency"])
def test_chains_equal_python_reference(seed, kind):
    prog, paths, mp = chains(seed, n_res=8 if kind == "spread" else 12, same_size=kind == "simultaneous",
                             latency=1e-6 if kind == "latency" else 0.0)
    py, c = both(prog, paths, mp)
    assert c.events == py.events
    np.testing.assert_allclose(c.msg_end, py.msg_end, rtol=1e-9)
    np.testing.assert_allclose(c.step_end, py.step_end, rtol=1e-9)
    np.testing.assert_allclose(c.delivered, prog.bytes, rtol=1e-9)


def pingpongs(seed: int, latency: float, offset: float, n_res: int = 10, n_pairs: int = 12,
              iterations: int = 6) -> tuple[Program, Paths, np.ndarray]:
    """Pairs of ranks ping-pong over the chains' resources: each direction of a pair has its own
    stretch of the line (the reply does not retrace the ping), so a ping's end frees one stretch
    and its reply's start, at once or a latency later, loads another."""
    rng = np.random.default_rng(seed)
    capacity = rng.choice([1.0, 2.0, 3.0], n_res) * 1e9
    ptr, res, w = [0], [], []
    n_paths = 2 * n_pairs
    for _ in range(n_paths):
        a = int(rng.integers(0, n_res))
        b = int(min(n_res, a + rng.integers(1, 5)))
        res += list(range(a, b))
        w += rng.choice([1.0, 1.0, 0.5], b - a).tolist()
        ptr.append(len(res))
    cap = np.where(rng.random(n_paths) < 0.1, 4e8, np.inf)
    hosts = np.arange(n_paths)
    paths = Paths(hosts, hosts, np.array(ptr, np.int64), np.array(res, np.int64), np.array(w), cap,
                  np.full(n_paths, latency), np.diff(ptr), capacity, n_res, "pingpongs")
    ranks = rng.permutation(2 * n_pairs)
    prog = pg.pingpong(ranks[:n_pairs], ranks[n_pairs:], 1e6, iterations, 1, n_ranks=2 * n_pairs,
                       start_offset=offset, seed=seed)
    lo = np.minimum(prog.src, prog.dst)
    pair = {int(r): i for i, r in enumerate(np.sort(np.minimum(ranks[:n_pairs], ranks[n_pairs:])))}
    mp = np.array([2 * pair[int(x)] + int(s > d) for x, s, d in zip(lo, prog.src, prog.dst)])
    return prog, paths, mp


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("latency,offset", [(0.0, 0.0), (0.0, 2e-4), (1e-6, 0.0), (2e-6, 2e-4)])
def test_pingpong_swaps_equal_python_reference(seed, latency, offset):
    """A ping's end and its reply's start: in one refill at latency 0, in two a latency apart
    otherwise; pairs in lock-step (offset 0: many events at one instant) or out of phase."""
    prog, paths, mp = pingpongs(seed, latency, offset)
    py, c = both(prog, paths, mp)
    assert c.events == py.events
    np.testing.assert_allclose(c.msg_end, py.msg_end, rtol=1e-9)
    np.testing.assert_allclose(c.step_end, py.step_end, rtol=1e-9)
    np.testing.assert_allclose(c.delivered, prog.bytes, rtol=1e-9)


def test_every_refill_path_is_taken():
    """Over the systems above, flows join at a filling resource and at their check, and checks
    keep flows as they are: each path of the compiled refill runs (and is compared above)."""
    total = {"at fill": 0, "at check": 0, "kept": 0}
    for seed in range(6):
        for prog, paths, mp in (chains(seed, n_res=8), chains(seed, same_size=True), pingpongs(seed, 1e-6, 0.0)):
            out = fast.run_program(prog, paths, mp)
            for k in total:
                total[k] += out.joins[k]
    assert min(total.values()) > 0, total


def test_the_systems_exercise_what_they_are_for():
    """Refills spread beyond the changed flows (several flows refilled per message), some flow's
    rate goes down and up again (its bottleneck moved as others came and left), and with equal
    sizes several flows finish at one instant (one refill for all of them)."""
    prog, paths, mp = chains(3, n_res=8)
    rates: list[dict] = []
    py, c = both(prog, paths, mp, rates)
    np.testing.assert_allclose(c.msg_end, py.msg_end, rtol=1e-9)
    assert py.refills > 4 * prog.n_messages
    moved = 0
    for g in {g for r in rates for g in r}:
        hist = np.array([r[g] for r in rates if g in r and r[g] > 0])
        d = np.diff(hist)
        moved += bool((d < -1e-6 * hist[0]).any() and (d > 1e-6 * hist[0]).any())
    assert moved > 0
    prog, paths, mp = chains(3, same_size=True)
    py, c = both(prog, paths, mp)
    np.testing.assert_allclose(c.msg_end, py.msg_end, rtol=1e-9)
    _, counts = np.unique(np.round(py.msg_end, 15), return_counts=True)
    assert counts.max() >= 2
