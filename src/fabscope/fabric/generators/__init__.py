"""Generators: one function per family of fabrics, typed parameters, seeds' defaults.

Every generator numbers hosts so that the hosts under any switch of a tree
are contiguous, sets each switch's level (1 = leaf), and names the hierarchy
groups the seeds classify pairs by.  Each has an estimator beside it
(``torus_size`` ...) that counts what it would build, for
:func:`~fabscope.fabric.generators.size.check_size` to refuse before allocating.
"""

from fabscope.fabric.generators.direct import (dragonfly, dragonfly_size, hypercube, hypercube_size, mesh, mesh_size,
                                               torus, torus_size)
from fabscope.fabric.generators.itasca import director, director_size, itasca, itasca_size
from fabscope.fabric.generators.size import Size, check_size
from fabscope.fabric.generators.trees import fat_tree, fat_tree_size, xgft, xgft_size

__all__ = ["director", "dragonfly", "fat_tree", "hypercube", "itasca", "mesh", "torus", "xgft",
           "Size", "check_size", "director_size", "dragonfly_size", "fat_tree_size", "hypercube_size",
           "itasca_size", "mesh_size", "torus_size", "xgft_size"]
