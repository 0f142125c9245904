"""Exporters: ibsim net files, Slurm topology.conf, Graphviz and fabscope JSON.

>>> from fabscope.fabric.generators import fat_tree
>>> sorted(FORMATS)
['dot', 'ibsim', 'json', 'slurm']
"""

from __future__ import annotations

import os
from typing import Callable

from fabscope.errors import FabricError
from fabscope.fabric.exporters.dot import to_dot, write_dot
from fabscope.fabric.exporters.ibsim import ib_rate, to_ibsim, write_ibsim
from fabscope.fabric.exporters.slurm import compress_hostlist, expand_hostlist, to_slurm, write_slurm
from fabscope.fabric.model import Fabric

__all__ = ["FORMATS", "compress_hostlist", "expand_hostlist", "export_fabric", "ib_rate", "to_dot",
           "to_ibsim", "to_slurm", "write_dot", "write_ibsim", "write_slurm"]


def _json(fabric: Fabric, path: str | os.PathLike[str]) -> None:
    from fabscope.fabric.io import write_json

    write_json(fabric, path)


FORMATS: dict[str, Callable[[Fabric, str], None]] = {
    "ibsim": write_ibsim, "slurm": write_slurm, "dot": write_dot, "json": _json,
}


def export_fabric(fabric: Fabric, fmt: str, path: str) -> None:
    """Write ``fabric`` in format ``fmt`` to ``path`` (``-``: standard output), never half-written."""
    if fmt not in FORMATS:
        raise FabricError(f"unknown export format {fmt!r}; choose from {', '.join(sorted(FORMATS))}")
    FORMATS[fmt](fabric, path)
