"""Classes of measured rank pairs: by the fabric's groups, or by socket and node.

Shared by :mod:`fabscope.measure.parse` (which tabulates a run) and
:mod:`fabscope.measure.analysis` (which summarizes it); it needs only the
ranks' hosts and sockets, so it imports neither.

>>> import numpy as np
>>> from types import SimpleNamespace
>>> run = SimpleNamespace(ranks={"host": ["a", "a", "b"], "socket": [0, 1, 0]})
>>> classify(run, np.array([0, 0]), np.array([1, 2]))[0].tolist()
[1, 2]
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from fabscope.errors import MeasureError
from fabscope.fabric.model import Fabric

PLAIN_LABELS = ("Intra-socket", "Inter-socket", "Inter-node")


class HasRanks(Protocol):
    ranks: dict[str, list[Any]]


def classify(run: HasRanks, src: np.ndarray, dst: np.ndarray,
             fabric: Fabric | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class of each (src, dst) rank pair, and the labels of the classes."""
    hosts = list(run.ranks["host"])
    if fabric is None:
        sock = np.asarray(run.ranks.get("socket", [0] * len(hosts)))
        h = np.array(hosts, dtype=object)
        cls = np.where(h[src] != h[dst], 2, np.where(sock[src] != sock[dst], 1, 0))
        return cls.astype(np.int16), PLAIN_LABELS
    idx = fabric.host_index
    missing = sorted({x for x in hosts if x not in idx and x.split(".")[0] not in idx})
    if missing:
        raise MeasureError(f"fabric {fabric.name!r} does not name host {missing[0]!r} of this job"
                           + (f" ({len(missing)} hosts unknown)" if len(missing) > 1 else "")
                           + "; give --host-map FILE (lines 'job-host fabric-host')")
    hidx = np.array([idx.get(x, idx.get(x.split(".")[0], -1)) for x in hosts])
    return fabric.classify(hidx[src], hidx[dst]), fabric.class_labels
