"""Generators: one function per family of fabrics, typed parameters, seeds' defaults.

Every generator numbers hosts so that the hosts under any switch of a tree
are contiguous, sets each switch's level (1 = leaf), and names the hierarchy
groups the seeds classify pairs by.
"""

from fabscope.fabric.generators.direct import dragonfly, hypercube, mesh, torus
from fabscope.fabric.generators.itasca import director, itasca
from fabscope.fabric.generators.trees import fat_tree, xgft

__all__ = ["director", "dragonfly", "fat_tree", "hypercube", "itasca", "mesh", "torus", "xgft"]
