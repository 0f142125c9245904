"""What launchers do by default: block, cyclic, and a random shuffle.

Slots are the target's, host by host in the order the node list names them.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.mapping.targets import Target
>>> t = Target.whole(fat_tree(k=2, levels=2, cores=2), 8, ppn=2)
>>> block(8, t).host.tolist()
[0, 0, 1, 1, 2, 2, 3, 3]
>>> cyclic(8, t).host.tolist()
[0, 1, 2, 3, 0, 1, 2, 3]
>>> sorted(random(8, t, seed=1).slot.tolist())
[0, 1, 2, 3, 4, 5, 6, 7]
"""

from __future__ import annotations

import time

import numpy as np

from fabscope.mapping.targets import Mapping, Target

__all__ = ["block", "cyclic", "random"]


def block(n: int, target: Target) -> Mapping:
    """Rank ``r`` in slot ``r``: nodes filled one after the other."""
    t0 = time.perf_counter()
    target.check_fits(n)
    return Mapping(target, np.arange(n), "block", time.perf_counter() - t0)


def cyclic(n: int, target: Target) -> Mapping:
    """Round robin over the nodes: rank ``r`` on node ``r mod nodes`` while it has room."""
    t0 = time.perf_counter()
    target.check_fits(n)
    order = np.lexsort((target.node_of_slot, target.slot_core))
    return Mapping(target, order[:n], "cyclic", time.perf_counter() - t0)


def random(n: int, target: Target, seed: int = 0) -> Mapping:
    """A uniformly random one-to-one map of ranks to slots."""
    t0 = time.perf_counter()
    target.check_fits(n)
    perm = np.random.default_rng(seed).permutation(target.n_slots)[:n]
    return Mapping(target, perm, "random", time.perf_counter() - t0)
