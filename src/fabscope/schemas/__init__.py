"""JSON Schemas of fabscope's files, checked on write and on read.

>>> validate({"schema": "fabscope.result", "version": 1, "meta": {"kind": "model"},
...           "class_labels": [], "pairs": {"cls": [], "bandwidth": []}}, "result")
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from fabscope.errors import SchemaError


@lru_cache(maxsize=None)
def _schema(name: str) -> dict[str, Any]:
    # beside this module, read as a file: importlib.resources (with pathlib, urllib.parse and
    # zipfile's readers) was 4-6 ms of writing a result, for packages installed as folders
    with open(os.path.join(os.path.dirname(__file__), f"{name}.schema.json"), encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema

    return jsonschema.Draft202012Validator(_schema(name))


def validate(doc: Any, name: str, origin: str = "") -> None:
    """Raise SchemaError naming the first place where ``doc`` breaks schema ``name``.

    A document :func:`plainly_valid` accepts is valid without importing jsonschema (0.05-0.1
    CPU s, most of a small result file's check); any other goes to jsonschema, which decides
    and words the error.
    """
    if plainly_valid(doc, _schema(name)):
        return
    err = next(iter(sorted(_validator(name).iter_errors(doc), key=lambda e: list(e.path))), None)
    if err is not None:
        where = "/".join(str(p) for p in err.path) or "top level"
        raise SchemaError(f"{origin or name} file: at {where}: {err.message}")


#: keywords plainly_valid knows; a schema with any other is left to jsonschema
_KNOWN = {"type", "required", "properties", "additionalProperties", "const", "enum", "items",
          "$schema", "$id", "title", "description"}
#: JSON types of plain Python values, by exact type (subclasses such as bool or NumPy scalars go to jsonschema)
_TYPES = {dict: ("object",), list: ("array",), str: ("string",), int: ("integer", "number"), float: ("number",),
          bool: ("boolean",), type(None): ("null",)}


def plainly_valid(doc: Any, schema: Any) -> bool:
    """True when ``doc`` plainly meets ``schema`` (JSON Schema's type, required, properties,
    additionalProperties, const, enum and items, compared strictly); False when it does not or
    when telling needs more (another keyword, a value that is no plain JSON type, a float that
    is a whole number where an integer is asked): a True is jsonschema's answer too, a False
    leaves the answer to jsonschema (tests/test_result_schema_view.py compares them).

    >>> plainly_valid({"a": [1, 2]}, {"type": "object", "properties": {"a": {"items": {"type": "integer"}}}})
    True
    >>> plainly_valid({"a": [1, 2.0]}, {"type": "object", "properties": {"a": {"items": {"type": "integer"}}}})
    False
    """
    if schema is True:
        return True
    if not isinstance(schema, dict) or not _KNOWN.issuperset(schema):
        return False
    kinds = _TYPES.get(type(doc))
    if kinds is None:
        return False
    if "type" in schema:
        want = schema["type"]
        if not any(k in kinds for k in (want if isinstance(want, list) else [want])):
            return False
    if "const" in schema and not _same(doc, schema["const"]):
        return False
    if "enum" in schema and not any(_same(doc, v) for v in schema["enum"]):
        return False
    if isinstance(doc, dict):
        if any(k not in doc for k in schema.get("required", ())):
            return False
        props, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        for k, v in doc.items():
            if not plainly_valid(v, props[k] if k in props else extra):
                return False
    elif isinstance(doc, list) and "items" in schema:
        sub = schema["items"]
        if sub == {"type": "integer"}:                 # the long columns, without a call per item
            return all(type(x) is int for x in doc)
        if sub == {"type": "number"}:
            return all(type(x) is int or type(x) is float for x in doc)
        if sub == {"type": "string"}:
            return all(type(x) is str for x in doc)
        return all(plainly_valid(x, sub) for x in doc)
    return True


def _same(a: Any, b: Any) -> bool:
    """Equal and of one plain type (jsonschema's equality is looser: 1 == 1.0 there)."""
    return type(a) is type(b) and type(a) in (str, int, float, bool, type(None)) and a == b
