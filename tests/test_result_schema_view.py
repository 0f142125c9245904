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
