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
])
@pytest.mark.parametrize("length", [10, 5000, 40_000])
def test_float_columns_as_json_dumps_writes_them(values, length):
    """float_column (each distinct value encoded once) is json.dumps's text, byte for byte."""
    import json

    from fabscope.result import float_column

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
