"""D-mod-K's child found by division equals the child found by searching the sorted keys.

A switch whose children's host ranges are equally wide and back to back takes
the division (routing/tree.py); every other switch searches.  Forcing the
search everywhere must give the same links for every pair.
"""

import numpy as np
import pytest

from fabscope.fabric.generators import fat_tree, itasca, xgft
from fabscope.fabric.model import FabricBuilder
from fabscope.routing.tree import DModKRouting



def ragged():
    """Two leaves of 3 and 2 hosts under two spines: the spines' children differ in width."""
    b = FabricBuilder("ragged")
    h = b.add_hosts([f"n{i}" for i in range(5)])
    leaves = [b.add_switch("l0", 1), b.add_switch("l1", 1)]
    spines = [b.add_switch("s0", 2), b.add_switch("s1", 2)]
    for i in h:
        b.cable(i, leaves[0 if i < 3 else 1], 1e9)
    for leaf in leaves:
        for spine in spines:
            b.cable(leaf, spine, 1e9)
    return b.build()


FABRICS = [ragged(), fat_tree(k=4, levels=3), xgft((4, 3), (1, 2), links_per_pair=2), xgft((3, 2, 2), (2, 2, 3)),
           itasca(leaves=20), fat_tree(k=8, levels=3, up=4)]


@pytest.mark.parametrize("fabric", FABRICS, ids=lambda f: f.name)
def test_division_equals_search(fabric):
    rng = np.random.default_rng(5)
    s, d = rng.integers(0, fabric.n_hosts, 3000), rng.integers(0, fabric.n_hosts, 3000)
    fast = DModKRouting(fabric)
    search = DModKRouting(fabric)
    search._t["width"] = np.zeros_like(search._t["width"])
    a, b = fast.routes(s, d), search.routes(s, d)
    assert np.array_equal(a.flow, b.flow) and np.array_equal(a.link, b.link)


def test_generated_trees_divide_and_ragged_ones_search():
    f = fat_tree(k=4, levels=3)
    assert np.all(DModKRouting(f)._t["width"][f.n_hosts:] > 0)           # every switch divides
    f = ragged()
    w = DModKRouting(f)._t["width"]
    assert w[f.n_hosts:].tolist() == [1, 1, 0, 0]                     # leaves divide, spines search
