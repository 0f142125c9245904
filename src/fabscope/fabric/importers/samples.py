"""Sample ``ibnetdiscover`` and OpenSM outputs shipped with fabscope, to try the importers on.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> sorted(os.path.basename(p) for p in write_samples(d))
['README', 'dump_fts.txt', 'ibnetdiscover.txt', 'nodes.csv', 'opensm-lfts.dump']
>>> from fabscope.fabric.importers import import_fabric
>>> f = import_fabric(os.path.join(d, "ibnetdiscover.txt"), os.path.join(d, "opensm-lfts.dump"))
>>> f.n_hosts, f.n_switches, f.lft is not None
(16, 6, True)
"""

from __future__ import annotations

import os
from importlib import resources

from fabscope.atomic import all_or_none, atomic_open, check_outputs
from fabscope.errors import OutputError

SAMPLES = ("ibnetdiscover.txt", "opensm-lfts.dump", "dump_fts.txt", "nodes.csv", "README")


def sample_text(name: str) -> str:
    """The text of one shipped sample file."""
    return resources.files("fabscope").joinpath("data", "samples", name).read_text(encoding="utf-8")


def write_samples(folder: str) -> list[str]:
    """Write every sample into ``folder`` (made if missing, its parent must exist); all or none."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise OutputError(f"{folder}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(folder))
    if not os.path.isdir(parent):
        raise OutputError(f"{folder}: directory {parent} does not exist")
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, n) for n in SAMPLES]
    check_outputs({p: p for p in paths})
    with all_or_none():
        for name, path in zip(SAMPLES, paths):
            with atomic_open(path) as fh:
                fh.write(sample_text(name))
    return paths
