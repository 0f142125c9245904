"""JSON Schemas of fabscope's files, checked on write and on read.

>>> validate({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"},
...           "class_labels": [], "pairs": {"cls": [], "bandwidth": []}}, "result")
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from fabscope.errors import SchemaError


@lru_cache(maxsize=None)
def _validator(name: str):
    # imported here: a process that checks no file does not load them
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files(__package__).joinpath(f"{name}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def validate(doc: Any, name: str, origin: str = "") -> None:
    """Raise SchemaError naming the first place where ``doc`` breaks schema ``name``."""
    err = next(iter(sorted(_validator(name).iter_errors(doc), key=lambda e: list(e.path))), None)
    if err is not None:
        where = "/".join(str(p) for p in err.path) or "top level"
        raise SchemaError(f"{origin or name} file: at {where}: {err.message}")
