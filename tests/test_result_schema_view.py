"""Result.write_json checks link columns held as NumPy arrays by their dtype, others item by item:
what the schema refuses is still refused, and nothing is written then."""

import numpy as np
import pytest

from fabscope.errors import SchemaError
from fabscope.result import Result


def result(links):
    return Result(meta={"kind": "dynamic"}, class_labels=("a",),
                  pairs={"cls": np.zeros(2, int), "bandwidth": np.ones(2)}, links=links)


def test_numeric_arrays_pass_and_round_trip(tmp_path):
    out = tmp_path / "r.json"
    result({"link": np.arange(3), "load": np.array([1.0, 2.0, 0.5])}).write_json(out)
    back = Result.read_json(out)
    assert back.links["link"].tolist() == [0, 1, 2] and back.links["load"].tolist() == [1.0, 2.0, 0.5]


@pytest.mark.parametrize("links", [{"link": np.array([0.5, 1.0])},             # not integers: checked item by item
                                   {"load": np.array(["x", "y"])},             # strings
                                   {"load": np.array([True, False])},          # booleans are no numbers to the schema
                                   {"link": [0, "1"]}])                        # a list, checked item by item
def test_what_the_schema_refuses_is_refused(tmp_path, links):
    out = tmp_path / "r.json"
    with pytest.raises(SchemaError):
        result(links).write_json(out)
    assert not out.exists()


def test_the_file_is_what_json_dump_wrote(tmp_path):
    """Written column by column by the C encoder, byte for byte json.dump's compact form."""
    import json

    r = result({"link": np.arange(4), "load": np.array([0.1, 1e300, 2.5, 3.0])})
    r.meta["note"] = "naïve ünïcode, \"quotes\""
    r.extra["nested"] = {"a": [1, {"b": None}], "1": True}
    out = tmp_path / "r.json"
    r.write_json(out)
    assert out.read_text() == json.dumps(r.to_dict(), separators=(",", ":")) + "\n"


@pytest.mark.parametrize("values", [
    np.array([0.1, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e300, 5e-324, 0.1, 2.0**20]),   # few values, repeated
    np.random.default_rng(3).random(50),                                                 # all distinct
    np.float32([0.1, 1.5, 3e38]),                                                        # float32's values
    np.r_[1.0, 2.0, np.full(9_000, 1.0)],            # a value the sample of every n // 1024-th one misses
])
@pytest.mark.parametrize("length", [10, 5000, 40_000])
def test_float_columns_as_json_dumps_writes_them(values, length):
    """float_column (each distinct value encoded once) is json.dumps's text, byte for byte."""
    import json

    from fabscope.jsoncolumns import float_column

    a = np.resize(values, length)
    assert float_column(a) == json.dumps(a.tolist(), separators=(",", ":"))
    b = np.random.default_rng(1).random(length) * 1e9               # distinct values: encoded as they are
    b[::7] = np.nan
    assert float_column(b) == json.dumps(b.tolist(), separators=(",", ":"))


def test_a_large_result_file_is_what_json_dump_wrote(tmp_path):
    """Pairs and links of 60,000 rows with few and many distinct floats: the file json.dump writes."""
    import json

    rng = np.random.default_rng(2)
    n = 60_000
    r = Result(meta={"kind": "dynamic"}, class_labels=("a", "b"),
               pairs={"cls": rng.integers(0, 2, n), "bandwidth": rng.choice([1e9, 2.5e9, -0.0, 0.0], n),
                      "time": rng.random(n), "bytes": np.full(n, 2.0**20)},
               links={"link": np.arange(n), "load": rng.choice([0.0, 1.0 / 3, 7e8], n), "capacity": np.full(n, 3.2e9),
                      "utilisation": rng.random(n).astype(np.float32)})
    out = tmp_path / "r.json"
    r.write_json(out)
    assert out.read_text() == json.dumps(r.to_dict(), separators=(",", ":")) + "\n"


def _near_results():
    """Documents close to a result: mostly valid fields, some of a wrong type or value (bools, floats
    for integers, strings in number columns), keys left out or added."""
    from hypothesis import strategies as st

    def mostly(good, bad):
        return st.sampled_from([True] * 14 + [False]).flatmap(lambda ok: good if ok else bad)

    scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(width=16),
                       st.sampled_from([1.0, 2.5, "x", "model"]))
    ints = st.lists(mostly(st.integers(0, 9), scalar), max_size=4)
    nums = st.lists(mostly(st.one_of(st.integers(0, 9), st.floats(0, 1e9)), scalar), max_size=4)
    cols = st.dictionaries(st.sampled_from(["link", "load", "capacity", "bytes", "utilisation", "other"]),
                           mostly(st.one_of(ints, nums), scalar), max_size=5)
    pairs = st.fixed_dictionaries({"cls": mostly(ints, scalar), "bandwidth": mostly(nums, scalar)},
                                  optional={"src": mostly(ints, scalar), "time": mostly(nums, scalar)})
    meta = st.fixed_dictionaries({"kind": mostly(st.sampled_from(["model", "dynamic", "measure"]),
                                                 st.sampled_from(["bad", 1, None]))},
                                 optional={"fabscope_version": mostly(st.just("0.1.0"), scalar),
                                           "seed": scalar})
    doc = st.fixed_dictionaries(
        {"schema": mostly(st.just("fabscope.result"), st.sampled_from(["other", 1, None])),
         "version": mostly(st.just(1), st.sampled_from([1.0, True, 2, "1"])),
         "meta": mostly(meta, scalar),
         "class_labels": mostly(st.lists(mostly(st.sampled_from(["a", "b"]), scalar), max_size=3), scalar),
         "pairs": mostly(pairs, st.one_of(scalar, cols))},
        optional={"summary": mostly(st.lists(scalar, max_size=2), scalar),
                  "links": mostly(st.one_of(st.none(), cols), scalar),
                  "extra": mostly(st.dictionaries(st.sampled_from(["hot_links", "x"]), scalar, max_size=2), scalar),
                  "other": scalar})
    return doc


def test_plain_check_says_valid_only_where_jsonschema_does():
    """schemas.plainly_valid's True is jsonschema's answer too (its False leaves the answer to jsonschema)."""
    from hypothesis import given, settings

    from fabscope.schemas import _schema, _validator, plainly_valid

    schema, full = _schema("result"), _validator("result")
    seen = {True: 0, False: 0}

    @settings(max_examples=600, deadline=None)
    @given(_near_results())
    def check(doc):
        plain = plainly_valid(doc, schema)
        seen[plain] += 1
        if plain:
            assert full.is_valid(doc), doc

    check()
    assert seen[True] >= 10 and seen[False] >= 10        # both sides were exercised


def test_writing_a_valid_result_imports_no_jsonschema(tmp_path):
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom fabscope.result import Result\n"
            "Result(meta={'kind': 'dynamic'}, class_labels=('a',), pairs={'cls': np.zeros(3, int), "
            "'bandwidth': np.ones(3)}, links={'link': np.arange(3), 'load': np.ones(3)})"
            f".write_json({str(tmp_path / 'r.json')!r})\nprint('jsonschema' in sys.modules, "
            "'importlib.resources' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False False"     # the schema is read as a file beside its module


def _valid_doc():
    return {"schema": "fabscope.result", "version": 1, "meta": {"kind": "dynamic", "fabscope_version": "0.1.0"},
            "class_labels": ["a"], "summary": [], "pairs": {"cls": [0, 1], "bandwidth": [1.5, 2]},
            "links": {"link": [0, 3], "load": [0.5, 1], "capacity": [2.0, 2.0], "bytes": [1, 2.5],
                      "utilisation": [0.25, 0.5]}, "extra": {"hot_links": []}}


@pytest.mark.parametrize("path,bad", [
    (("links", "link"), [0, 2.5]), (("links", "link"), [0, True]), (("links", "load"), [0.5, "1"]),
    (("links", "capacity"), [None]), (("version",), True), (("version",), 2), (("schema",), "other"),
    (("meta", "kind"), "bad"), (("meta", "fabscope_version"), 1), (("class_labels",), ["a", 1]),
    (("pairs", "time"), 3.0), (("pairs",), []), (("links",), []), (("extra",), [])])
def test_one_wrong_field_is_not_plainly_valid_and_is_refused(path, bad):
    from fabscope.errors import SchemaError
    from fabscope.schemas import _schema, plainly_valid, validate

    doc = _valid_doc()
    assert plainly_valid(doc, _schema("result"))
    where = doc
    for k in path[:-1]:
        where = where[k]
    where[path[-1]] = bad
    assert not plainly_valid(doc, _schema("result"))
    with pytest.raises(SchemaError):
        validate(doc, "result")


@pytest.mark.parametrize("key", ["cls", "bandwidth"])
def test_a_missing_required_column_is_refused(key):
    from fabscope.errors import SchemaError
    from fabscope.schemas import _schema, plainly_valid, validate

    doc = _valid_doc()
    del doc["pairs"][key]
    assert not plainly_valid(doc, _schema("result"))
    with pytest.raises(SchemaError):
        validate(doc, "result")
