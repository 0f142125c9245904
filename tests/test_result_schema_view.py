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
