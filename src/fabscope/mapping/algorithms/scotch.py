"""Scotch's static mapping as a peer to compare with (through the PyPI binding ``pyscotch``).

The target becomes a Scotch architecture: a ``torusXD`` (or ``meshXD``) of
the job's box of routers, with the slots of a router as one more dimension,
on direct networks; a ``tleaf`` tree following the fabric's levels (near
set, leaf, node, core) restricted to the job's slots with ``archSub`` on
trees.  Scotch balances loads within a tolerance, so it may put two ranks on
one slot; those few are moved to the nearest free slot (counted in
``info["repaired"]``).  Scotch is optional: without ``pyscotch`` this raises
:class:`MappingError` saying how to install it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time

import numpy as np

from fabscope.errors import MappingError
from fabscope.mapping.algorithms.hierarchical import slot_keys
from fabscope.mapping.algorithms.torus_fold import target_box
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops
from fabscope.mapping.targets import Mapping, Target

__all__ = ["scotch", "available"]


def _pyscotch():
    try:
        # pyscotch announces its library on stderr when libscotch loads: load it here, quietly
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import pyscotch
            import pyscotch.libscotch  # noqa: F401
    except (ImportError, OSError) as err:
        raise MappingError("the Scotch peer needs pyscotch: pip install 'fabscope[map]'") from err
    return pyscotch


def available() -> bool:
    try:
        _pyscotch()
        return True
    except MappingError:
        return False


def _torus_arch(ps, target: Target) -> tuple[object, np.ndarray]:
    """A torusXD/meshXD arch of the job's box (slots per router as the last dimension); slot of each terminal."""
    f = target.fabric
    lo, box, first, cell = target_box(target)
    dims = list(box) + ([cell] if cell > 1 else [])
    wrap = all(b == k and p for b, k, p in zip(box, f.dims, f.periodic))
    path = tempfile.mktemp(suffix=".tgt")
    try:
        with open(path, "w") as fh:
            fh.write(f"{'torusXD' if wrap else 'meshXD'}\n{len(dims)}\n{' '.join(map(str, dims))}\n")
        arch = ps.Architecture()
        arch.load(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    # terminal number: first dimension varies fastest
    term = np.arange(int(np.prod(dims)))
    digits = []
    rem = term
    for d in dims:
        digits.append(rem % d)
        rem = rem // d
    cflat = np.ravel_multi_index(tuple(digits[: len(box)]), box)
    within = digits[len(box)] if cell > 1 else 0
    return arch, first[cflat] + within


def _tree_arch(ps, target: Target) -> tuple[object, np.ndarray]:
    """A tleaf of the job's slot tree, restricted to the job's slots; slot of each terminal."""
    keys = slot_keys(target) + [target.slot_core]
    idx = []
    sizes = []
    for k in keys:
        # index of each slot among its siblings
        parent = np.zeros(target.n_slots, np.int64) if not idx else np.ravel_multi_index(tuple(idx), sizes)
        pair = parent * (int(k.max()) + 1) + k
        uniq, inv = np.unique(pair, return_inverse=True)
        par_of = uniq // (int(k.max()) + 1)
        rank_in_parent = np.arange(len(uniq)) - np.searchsorted(par_of, par_of)
        child = rank_in_parent[inv]
        idx.append(child)
        sizes.append(int(child.max()) + 1)
    costs = [2 * (len(sizes) - i) for i in range(len(sizes))]
    costs[-1] = 1                                              # two cores of a node
    parent = ps.Architecture()
    parent.tree_leaf(len(sizes), np.array(sizes), np.array(costs))
    terms = np.ravel_multi_index(tuple(idx), sizes)
    sub = ps.Architecture()
    sub.sub(parent, terms)
    return (sub, parent), np.arange(target.n_slots)


def scotch(graph: CommGraph, target: Target, seed: int = 0) -> Mapping:
    """Scotch's static mapping of ``graph`` onto the target (see the module docstring)."""
    t0 = time.perf_counter()
    target.check_fits(graph.n)
    ps = _pyscotch()
    f = target.fabric
    A = graph.adjacency.tocsr()
    A.data = np.maximum(1, np.rint(A.data / max(A.data.max(initial=1), 1e-300) * 1000))
    with contextlib.redirect_stdout(io.StringIO()):
        ps.random_seed(seed)
        ps.random_reset()
        g = ps.Graph.from_scipy_sparse(A)
        if f.coords is not None and not f.levels:
            arch, term_slot = _torus_arch(ps, target)
            keep = arch
        else:
            keep, term_slot = _tree_arch(ps, target)
            arch = keep[0]
        dom = np.asarray(g.map(arch), dtype=np.int64)
    slot = term_slot[dom]
    slot, repaired = _repair(target, slot)
    return Mapping(target, slot, "scotch", time.perf_counter() - t0, info={"repaired": repaired})


def _repair(target: Target, slot: np.ndarray) -> tuple[np.ndarray, int]:
    """Move ranks off slots that hold more than one, to the nearest free slots."""
    slot = slot.copy()
    order = np.argsort(slot, kind="stable")
    dup = np.zeros(len(slot), bool)
    dup[order[1:]] = slot[order[1:]] == slot[order[:-1]]
    extra = np.flatnonzero(dup)
    if not len(extra):
        return slot, 0
    free = np.setdiff1d(np.arange(target.n_slots), slot)
    host = target.slot_host
    for r in extra:
        d = host_hops(target.fabric, np.full(len(free), host[slot[r]]), host[free])
        j = int(np.argmin(d))
        slot[r] = free[j]
        free = np.delete(free, j)
    return slot, len(extra)
