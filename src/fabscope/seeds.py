"""The seeds' own figures, kept as data so that runs can print them side by side.

Seed 000 (Itasca, University of Minnesota, 2009): concurrent random-pairs
ping-pong, 1 MB messages, 100 iterations, Max / Average / Min in MB/s.
"""

from __future__ import annotations

from typing import Any

#: (ranks, ranks per node) -> {class: (max, avg, min)}
ITASCA_RANDOM_PAIRS: dict[tuple[int, int], dict[str, tuple[float, float, float]]] = {
    (256, 8): {
        "Overall": (3773.94, 482.49, 390.49),
        "Same Node": (3773.94, 3426.51, 2644.41),
        "Same Leaf": (783.64, 489.96, 424.83),
        "Diff Leafs": (934.82, 454.64, 390.49),
    },
    (1024, 1): {
        "Overall": (3085.28, 1236.73, 588.25),
        "Same Leaf": (3085.28, 3077.87, 2984.23),
        "Diff Leafs": (3071.21, 1225.99, 588.25),
    },
}

#: the all-pairs leaf matrices: range over all leaf pairs, and the near-set blocks
ITASCA_LEAF_PAIRS = {"max": 3035.0, "min": 1826.0, "near": 3000.0}

#: how Itasca's classes map to the seed's: "Diff Leafs" = near and far leaves together
ITASCA_MERGE = {"Diff Leafs": ("Near Set", "Far Leafs")}


def seed_table(meta: dict[str, Any]) -> dict[str, tuple[float, float, float]] | None:
    """The seed's table for a run, when the run is one the seed measured."""
    if meta.get("fabric") != "itasca" or meta.get("pattern") != "random-pairs":
        return None
    return ITASCA_RANDOM_PAIRS.get((meta.get("ranks"), meta.get("ppn")))
