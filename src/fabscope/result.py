"""One result schema for modeled and measured runs.

A :class:`Result` holds a per-pair table (columns of equal length), optional
per-link loads, the labels of the pair classes and metadata (what fabric,
routing, pattern, seed, sizes; which fabscope wrote it).  Modeled runs
(:func:`fabscope.model.simulate`) and measured runs (``fabscope analyze``)
produce the same shape, so they compare pair by pair.

Bandwidths are stored in bytes/s and shown in MB/s (1 MB = 10^6 bytes).

>>> import numpy as np
>>> r = Result(meta={"kind": "model"}, class_labels=("Same Node", "Far"),
...            pairs={"src": np.array([0, 2]), "dst": np.array([1, 3]),
...                   "cls": np.array([0, 1]), "bandwidth": np.array([3e9, 1e9])})
>>> [(s.label, s.count, round(s.max)) for s in r.summary()]
[('Overall', 2, 3000), ('Same Node', 1, 3000), ('Far', 1, 1000)]
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from typing import IO, Any, Container, Mapping, Sequence

import numpy as np

from fabscope import __version__
from fabscope.atomic import atomic_open
from fabscope.names import csv_cell
from fabscope.errors import SchemaError
from fabscope.fabric.model import MB
from fabscope.fabric.ports import RAIL_LABELS
from fabscope.jsoncolumns import is_binary, write_column
from fabscope.numbers import numbers
from fabscope.schemas import validate
from fabscope.textio import load_json

SCHEMA = "fabscope.result"
SCHEMA_VERSION = 1

#: columns of the pair table, in file order, with what each holds
PAIR_COLUMNS = {
    "src": "source rank",
    "dst": "destination rank",
    "src_host": "host of the source rank",
    "dst_host": "host of the destination rank",
    "cls": "index into class_labels",
    "bytes": "bytes moved by the pair per message",
    "bandwidth": "bytes/s the pair achieved (ping-pong: data per pair / time)",
    "time": "seconds for one message (modeled) or per iteration (measured)",
    "scenario": "independent sub-run the pair belongs to (all-pairs leaf tests)",
    "rail": "hosts with several ports: 0 same rail, 1 cross rail, 2 one host (RAIL_LABELS)",
}


#: pair columns that must hold finite numbers >= 0 (True: integers), checked on reading
COLUMN_NUMBERS = {"src": True, "dst": True, "cls": True, "scenario": True, "rail": True,
                  "bytes": False, "bandwidth": False, "time": False}


#: link columns checked likewise: a link id, its load and its capacity (bytes/s)
LINK_NUMBERS = {"link": True, "load": False, "capacity": False}


@dataclass(frozen=True)
class ClassSummary:
    label: str
    count: int
    max: float
    avg: float
    min: float


@dataclass(eq=False)
class Result:
    meta: dict[str, Any]
    class_labels: tuple[str, ...]
    pairs: Mapping[str, np.ndarray]
    links: Mapping[str, np.ndarray] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pairs = {k: np.asarray(v) for k, v in self.pairs.items()}
        lengths = {len(v) for v in self.pairs.values()}
        if len(lengths) > 1:
            raise SchemaError(f"pair columns of unequal length: {sorted(lengths)}")
        self.meta = {"fabscope_version": __version__, **self.meta}
        self.class_labels = tuple(self.class_labels)

    @property
    def n_pairs(self) -> int:
        return len(self.pairs["bandwidth"])

    def summary(self, column: str = "bandwidth", scale: float = MB,
                merge: Mapping[str, Sequence[str]] | None = None) -> list[ClassSummary]:
        """Overall, then one row per class present: Max / Average / Min of ``column``.

        ``merge`` adds rows over several classes, e.g. the seed's "Diff Leafs"
        as ``{"Diff Leafs": ["Near Set", "Far Leafs"]}``.  A ``rail`` column
        (hosts with several ports) adds "Same Rail" and "Cross Rail" rows.
        """
        v = np.asarray(self.pairs[column], dtype=float) / scale
        cls = np.asarray(self.pairs["cls"])
        rows = [_row("Overall", v)]
        for i, label in enumerate(self.class_labels):
            sel = v[cls == i]
            if len(sel):
                rows.append(_row(label, sel))
        for label, members in (merge or {}).items():
            idx = [self.class_labels.index(m) for m in members if m in self.class_labels]
            sel = v[np.isin(cls, idx)]
            if len(sel):
                rows.append(_row(label, sel))
        if "rail" in self.pairs:  # hosts with several ports: pairs by rail, beside the classes
            rail = np.asarray(self.pairs["rail"])
            rows += [_row(label, v[rail == i]) for i, label in enumerate(RAIL_LABELS) if np.any(rail == i)]
        return rows

    # ---- files ---------------------------------------------------------------
    def to_dict(self, _empty: Container[tuple[str, str]] = frozenset()) -> dict[str, Any]:
        # _empty: the (part, column) keys write_json encodes from the arrays, left [] here
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "meta": _plain(self.meta),
            "class_labels": list(self.class_labels),
            "summary": [s.__dict__ for s in self.summary()],
            "pairs": {k: [] if ("pairs", k) in _empty else _plain(v) for k, v in self.pairs.items()},
            "links": None if self.links is None else {k: [] if ("links", k) in _empty else _plain(v)
                                                      for k, v in self.links.items()},
            "extra": _plain(self.extra),
        }

    def write_json(self, path: str | os.PathLike[str]) -> None:
        # number and string columns go from their arrays to the file (jsoncolumns.write_column), never
        # through lists; the schema asks nothing of a pair column's items nor of a link column it does
        # not name, and for those it names the dtype says what the item type would (_schema_view)
        arrays = {(part, k): v for part, cols in (("pairs", self.pairs), ("links", self.links or {}))
                  for k, v in cols.items() if isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iufU"
                  and (part == "pairs" or k not in _LINK_ITEMS or v.dtype.kind in _LINK_ITEMS[k])}
        doc = self.to_dict(arrays)
        validate(_schema_view(doc, self.links), "result")
        with atomic_open(path, "wb") as fh:
            _dump_compact(doc, fh, arrays=arrays)
            fh.write(b"\n" if is_binary(fh) else "\n")

    def write_csv(self, path: str | os.PathLike[str]) -> None:
        cols = [c for c in PAIR_COLUMNS if c in self.pairs] + [c for c in self.pairs if c not in PAIR_COLUMNS]
        with atomic_open(path, "w") as fh:
            w = csv.writer(fh)
            w.writerow([csv_cell(c) for c in cols] + ["class"])
            labels = self.class_labels
            data = [self.pairs[c].tolist() for c in cols]
            for i, row in enumerate(zip(*data)):
                w.writerow([csv_cell(v) for v in row] + [csv_cell(labels[int(self.pairs["cls"][i])])])

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], origin: str = "result") -> "Result":
        if not isinstance(doc, Mapping):
            raise SchemaError(f"not a fabscope result (a JSON {type(doc).__name__}, not an object)")
        if doc.get("schema") != SCHEMA:
            raise SchemaError(f"not a fabscope result (schema {doc.get('schema')!r})")
        if doc.get("version") != SCHEMA_VERSION:
            raise SchemaError(f"result schema version {doc.get('version')!r}, this fabscope reads version {SCHEMA_VERSION}")
        validate(doc, "result")
        links = doc.get("links")
        try:
            pairs = {k: np.asarray(v) for k, v in doc["pairs"].items()}
            for col, integer in COLUMN_NUMBERS.items():
                if col in pairs:
                    pairs[col] = numbers(pairs[col], f"{origin}: pair column {col!r}", lo=0, integer=integer)
            for col, integer in LINK_NUMBERS.items():
                if links is not None and col in links:
                    numbers(links[col], f"{origin}: link column {col!r}", lo=0, integer=integer)
            if links:          # one row per link: every column as long as the first
                sizes = {k: len(v) for k, v in links.items()}
                first = next(iter(sizes))
                odd = next((k for k, n in sizes.items() if n != sizes[first]), None)
                if odd is not None:
                    raise SchemaError(f"{origin}: link column {odd!r} has {sizes[odd]} rows, {first!r} has "
                                      f"{sizes[first]}; one row per link")
            n_cls = len(doc["class_labels"])
            if "cls" in pairs and len(pairs["cls"]) and int(pairs["cls"].max()) >= n_cls:
                raise SchemaError(f"{origin}: pair column 'cls' names class {int(pairs['cls'].max())}; "
                                  f"the result has {n_cls} class labels")
            return cls(
                meta=dict(doc["meta"]),
                class_labels=tuple(doc["class_labels"]),
                pairs=pairs,
                links=None if links is None else {k: np.asarray(v) for k, v in links.items()},
                extra=dict(doc.get("extra") or {}),
            )
        except (TypeError, ValueError) as err:       # e.g. a column of lists of unequal length
            raise SchemaError(f"malformed result file ({str(err).splitlines()[0]})") from None

    @classmethod
    def read_json(cls, path: str | os.PathLike[str]) -> "Result":
        """A result file, read by :func:`fabscope.textio.load_json` (sized, UTF-8 and depth checked)."""
        doc = load_json(path, "result file", SchemaError)
        return cls.from_dict(doc, os.fspath(path))


def _row(label: str, v: np.ndarray) -> ClassSummary:
    return ClassSummary(label, int(len(v)), float(v.max()), float(v.mean()), float(v.min()))


#: the schema's item type of the ``links`` columns it checks item by item
_LINK_ITEMS = {"link": "iu", "load": "iuf", "capacity": "iuf", "bytes": "iuf", "utilisation": "iuf"}


def _schema_view(doc: dict[str, Any], links: Mapping[str, Any] | None) -> dict[str, Any]:
    """``doc`` for the schema check, its link columns that are NumPy arrays of a kind the schema's
    item type accepts (integers; integers or floats) left empty: jsonschema checks a list item by
    item (0.9 CPU s for the 30,081 links of a 16x16x16 torus permutation run), NumPy's
    dtype says the same at once.  Other columns are checked as they are.

    >>> view = _schema_view({"links": {"link": [1], "load": [0.5]}}, {"link": np.array([1]), "load": [0.5]})
    >>> view["links"]
    {'link': [], 'load': [0.5]}
    """
    if not links or not isinstance(doc.get("links"), dict):
        return doc
    cols = dict(doc["links"])
    for k, kinds in _LINK_ITEMS.items():
        v = links.get(k)
        if k in cols and isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in kinds:
            cols[k] = []
    return {**doc, "links": cols}


def _dump_compact(doc: Any, fh: IO[Any], depth: int = 2, arrays: Mapping[tuple[str, str], np.ndarray] | None = None,
                  key: str = "", compiled: bool = True) -> None:
    """``json.dump(doc, fh, separators=(",", ":"))``, byte for byte, by the C encoder, to a text
    or a binary file (the text is ASCII: ``json.dumps`` escapes the rest).

    ``json.dump`` to a file encodes in Python, item by item (2.6 of the 2.8 CPU s of
    writing a 16x16x16 torus permutation's result under cProfile); ``json.dumps`` is
    the C encoder but makes one string of the whole.  Here the top two levels are
    walked and each value below them (a column) is one ``dumps``; a column that
    ``arrays[(key, name)]`` gives as a NumPy array is written from it by
    :func:`fabscope.jsoncolumns.write_column` (``compiled``: its compiled writer).

    >>> import io
    >>> doc = {"a": [1, 2.5, float("nan")], "b": {"c": ["x", None], "d": {}}, "e": "é"}
    >>> out = io.StringIO(); _dump_compact(doc, out)
    >>> out.getvalue() == json.dumps(doc, separators=(",", ":"))
    True
    >>> out = io.BytesIO(); _dump_compact({"p": {"x": []}}, out, arrays={("p", "x"): np.arange(5000)})
    >>> out.getvalue() == json.dumps({"p": {"x": list(range(5000))}}, separators=(",", ":")).encode()
    True
    """
    binary = is_binary(fh)

    def put(text: str) -> None:
        fh.write(text.encode() if binary else text)

    if depth == 0 or not isinstance(doc, dict) or not doc or not all(isinstance(k, str) for k in doc):
        put(json.dumps(doc, separators=(",", ":")))
        return
    put("{")
    for i, (k, v) in enumerate(doc.items()):
        put(("," if i else "") + json.dumps(k) + ":")
        arr = arrays.get((key, k)) if arrays and depth == 1 else None
        if arr is not None:
            write_column(fh, arr, compiled)
        else:
            _dump_compact(v, fh, depth - 1, arrays, k, compiled)
    put("}")


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
