"""Infer a fabric's hierarchy from its graph: switch levels, leaves, near sets.

Where the fabric is a tree (no cable joins two switches that both carry
hosts), switches with hosts are leaves (level 1), and each other switch
sits one level above the nearest leaf.  Leaves that reach exactly the same
level-2 switches form a *near set* (Itasca's 9 leaves on the same two line
switches of each director; a pod of a 3-level fat tree).  Elsewhere (tori,
meshes) every switch is a router and hosts are grouped by router only.

>>> import numpy as np
>>> # 4 hosts on 2 leaves (switches 0, 1) under one spine (switch 2)
>>> lv, groups, levels, far = infer_hierarchy(3, np.array([0, 0, 1, 1]), np.array([[0, 2], [1, 2]]))
>>> lv.tolist(), groups["leaf"].tolist(), [l.label for l in levels], far
([1, 1, 2], [0, 0, 1, 1], ['Same Leaf'], 'Diff Leafs')
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from fabscope.fabric.model import Level


def infer_hierarchy(n_switches: int, host_switch: np.ndarray, sw_cables: np.ndarray
                    ) -> tuple[np.ndarray, dict[str, np.ndarray], tuple[Level, ...], str]:
    """Switch levels, host groups, levels and the far label.

    ``host_switch``: switch number (0-based) of each host; ``sw_cables``:
    (n, 2) switch numbers of each switch-to-switch cable.
    """
    has_hosts = np.zeros(n_switches, bool)
    has_hosts[host_switch] = True
    a, b = (sw_cables[:, 0], sw_cables[:, 1]) if len(sw_cables) else (np.zeros(0, int), np.zeros(0, int))
    tree = not np.any(has_hosts[a] & has_hosts[b])
    if not tree:
        level = np.zeros(n_switches, np.int16)
        _, sw_group = np.unique(host_switch, return_inverse=True)
        if len(np.unique(host_switch)) < len(host_switch):
            return level, {"switch": sw_group}, (Level("switch", "Same Switch"),), "Diff Switches"
        return level, {}, (), "Diff Switches"
    g = csr_matrix((np.ones(2 * len(a)), (np.r_[a, b], np.r_[b, a])), shape=(n_switches, n_switches))
    leaves = np.flatnonzero(has_hosts)
    d = shortest_path(g, unweighted=True, indices=leaves, directed=False).min(axis=0)
    level = np.where(np.isfinite(d), d + 1, 0).astype(np.int16)
    leaf_ids = np.full(n_switches, -1)
    leaf_ids[leaves] = np.arange(len(leaves))
    groups = {"leaf": leaf_ids[host_switch]}
    levels = [Level("leaf", "Same Leaf")]
    far = "Diff Leafs"
    # near sets: leaves with the same level-2 neighbours
    up: dict[int, set[int]] = {int(x): set() for x in leaves}
    for x, y in zip(a.tolist(), b.tolist()):
        for lo, hi in ((x, y), (y, x)):
            if level[lo] == 1 and level[hi] == 2:
                up[lo].add(hi)
    keys: dict[frozenset[int], int] = {}
    near_of_leaf = np.array([keys.setdefault(frozenset(up[int(x)]), len(keys)) for x in leaves])
    if 1 < len(keys) < len(leaves):
        groups["near"] = near_of_leaf[leaf_ids[host_switch]]
        levels.append(Level("near", "Near Set"))
        far = "Far Leafs"
    return level, groups, tuple(levels), far
