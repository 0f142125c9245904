"""What a report is made of: runs read from files, checked before any work starts.

A report input is a fabscope.result JSON file (modeled, measured via
``fabscope analyze -o``, compare, diagnose, critical, mapping) or a
fabscope-bench JSON-lines file (``fabscope measure`` output), or a mapping
metrics file (``fabscope map --compare ... --json``).  Each becomes a
:class:`Run`: a label, the per-pair :class:`~fabscope.result.Result`, and for
bench files the raw :class:`~fabscope.measure.parse.BenchRun` (its size
sweeps give the latency and bandwidth curves).

Bad input is refused with one line before anything is drawn or written:
another schema version, a truncated file, a model and a measurement of
different fabrics.

>>> import numpy as np
>>> from fabscope.result import Result
>>> a = Run("a", Result(meta={"kind": "model", "fabric": "itasca"}, class_labels=("X",),
...         pairs={"cls": np.zeros(1, int), "bandwidth": np.ones(1)}))
>>> b = Run("b", Result(meta={"kind": "measure", "fabric": "torus(4x4)"}, class_labels=("X",),
...         pairs={"cls": np.zeros(1, int), "bandwidth": np.ones(1)}))
>>> same_fabric([a, b])
Traceback (most recent call last):
...
fabscope.errors.SchemaError: a is of fabric 'itasca' but b of fabric 'torus(4x4)': a report sets side by side only runs of one fabric
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fabscope.errors import FabricError, FabscopeError, SchemaError
from fabscope.fabric.model import Fabric
from fabscope.measure.parse import BenchRun, read_run, to_result
from fabscope.result import SCHEMA as RESULT_SCHEMA
from fabscope.result import SCHEMA_VERSION as RESULT_VERSION
from fabscope.result import Result

MAPPING_SCHEMA = "fabscope.mapping.metrics"


@dataclass(eq=False)
class Run:
    """One input of a report."""

    label: str
    result: Result | None
    bench: BenchRun | None = None
    fabric: Fabric | None = None
    mapping: list[dict[str, Any]] = field(default_factory=list)   # rows of algorithm metrics
    path: str = ""

    @property
    def kind(self) -> str:
        if self.result is None:
            return "mapping"
        return str(self.result.meta.get("kind", "model"))

    @property
    def fabric_name(self) -> str | None:
        if self.result is not None and self.result.meta.get("fabric"):
            return str(self.result.meta["fabric"])
        return self.fabric.name if self.fabric is not None else None


def read_input(path: str | os.PathLike[str], partial: bool = False) -> Run:
    """Read one report input, whatever its kind; refuse a bad one with one line."""
    path = os.fspath(path)
    label = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).lstrip()
    except OSError as err:
        raise SchemaError(f"cannot read {path}: {err.strerror}") from err
    if not head:
        raise SchemaError(f"{path}: empty file")
    first = head.split(b"\n", 1)[0]
    if b'"fabscope.bench"' in first or b'"type": "header"' in first or b'"type":"header"' in first:
        return _read_bench(path, label, partial)
    from fabscope.textio import load_json

    doc = load_json(path, "report input", SchemaError)
    if not isinstance(doc, dict):
        raise SchemaError(f"{path}: not a fabscope result (a JSON {type(doc).__name__})")
    if doc.get("schema") == MAPPING_SCHEMA:
        ver = doc.get("schema_version", doc.get("version"))
        if ver != 1:
            raise SchemaError(f"{path}: mapping metrics schema version {ver!r}, this fabscope reads version 1")
        rows = doc.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "algorithm" in r for r in rows):
            raise SchemaError(f"{path}: mapping metrics without rows of algorithms")
        return Run(label, None, mapping=rows, path=path)
    if doc.get("schema") != RESULT_SCHEMA:
        raise SchemaError(f"{path}: not a fabscope result or fabscope-bench file (schema {doc.get('schema')!r})")
    if doc.get("version") != RESULT_VERSION:
        raise SchemaError(f"{path}: result schema version {doc.get('version')!r}, "
                          f"this fabscope reads version {RESULT_VERSION}")
    try:
        result = Result.from_dict(doc, path)
    except SchemaError as err:
        raise SchemaError(str(err) if str(err).startswith(path) else f"{path}: {err}") from err
    if result.n_pairs == 0 and not _has_extras(result):
        raise SchemaError(f"{path}: a result without pairs: nothing to report")
    rows = result.extra.get("mapping")
    mapping = rows.get("rows", []) if isinstance(rows, dict) else (rows if isinstance(rows, list) else [])
    return Run(label, result, mapping=list(mapping), path=path)


def _has_extras(r: Result) -> bool:
    return any(k in r.extra for k in ("suspects", "criticality", "mapping"))


def _read_bench(path: str, label: str, partial: bool) -> Run:
    run = read_run(path)
    if run.truncated and not partial:
        raise SchemaError(f"{run.describe()}; give --partial to report what was whole")
    if not run.records:
        raise SchemaError(f"{run.describe()}: no measurement to report")
    result = None
    if any(r["type"] in ("pair", "size") for r in run.records):
        result = to_result(run)
    return Run(label, result, bench=run, path=path)


# ---- the fabric behind a run ---------------------------------------------------
def spec_of(name: str) -> str:
    """The ``--fabric`` spec that rebuilds a generated fabric from its name.

    >>> spec_of("fat-tree(k=4,levels=2)"), spec_of("torus(4x4x4)"), spec_of("itasca")
    ('fat-tree:k=4,levels=2', 'torus:4x4x4', 'itasca')
    """
    m = re.fullmatch(r"([A-Za-z][\w-]*)\((.*)\)", name)
    return f"{m.group(1)}:{m.group(2)}" if m else name


def attach_fabric(runs: Sequence[Run], fabric: Fabric | None = None) -> None:
    """Give each run its fabric: the one given, else rebuilt from the run's generator name.

    A run whose hosts the fabric does not name is refused (a model and a
    measurement of different fabrics).
    """
    from fabscope.fabric.io import load_fabric

    cache: dict[str, Fabric | None] = {}
    for r in runs:
        f = fabric
        name = r.fabric_name
        if f is None and name and r.result is not None and "generator" in (r.result.meta.get("fabric_params") or {}):
            if name not in cache:
                try:
                    cache[name] = load_fabric(spec_of(name))
                except FabscopeError:
                    cache[name] = None
            f = cache[name]
        if f is None or r.result is None:
            r.fabric = f
            continue
        if "src_host" in r.result.pairs:
            hosts = set(np.unique(np.r_[r.result.pairs["src_host"], r.result.pairs["dst_host"]]).tolist())
            unknown = sorted(hosts - set(f.host_names))
            if unknown:
                raise FabricError(f"{r.label}: fabric {f.name!r} does not name host {unknown[0]!r}"
                                  + (f" ({len(unknown)} hosts unknown)" if len(unknown) > 1 else "")
                                  + "; a run and a fabric (or model) of different machines")
        r.fabric = f


def same_fabric(runs: Sequence[Run]) -> None:
    """Refuse runs of different fabrics (by the fabric they name, or by hosts when they name none)."""
    named = [(r.label, r.fabric_name) for r in runs if r.fabric_name]
    for (la, a), (lb, b) in zip(named, named[1:]):
        if a != b:
            raise SchemaError(f"{la} is of fabric {a!r} but {lb} of fabric {b!r}: "
                              "a report sets side by side only runs of one fabric")
    with_hosts = [r for r in runs if r.result is not None and "src_host" in r.result.pairs]
    if len(with_hosts) > 1 and len(named) < len(runs):
        sets = [set(np.r_[r.result.pairs["src_host"], r.result.pairs["dst_host"]].tolist()) for r in with_hosts]
        for r, s in zip(with_hosts[1:], sets[1:]):
            if not (s & sets[0]):
                raise SchemaError(f"{with_hosts[0].label} and {r.label} share no host: "
                                  "runs of different machines")
