"""Fixtures of the report tests: small real model runs, and headless Chromium."""

from __future__ import annotations

import io

import numpy as np
import pytest

pytest.importorskip("plotly", reason="the report extras (plotly) are not installed")
pytest.importorskip("jinja2", reason="the report extras (jinja2) are not installed")

from fabscope.fabric.generators import fat_tree  # noqa: E402
from fabscope.fabric.placement import Placement  # noqa: E402
from fabscope.model.simulate import simulate  # noqa: E402
from fabscope.result import Result  # noqa: E402
from fabscope.traffic import patterns as pt  # noqa: E402


@pytest.fixture(scope="session")
def tree():
    return fat_tree(k=4, levels=2, up=2)            # 16 hosts, 2:1 oversubscribed leaves


@pytest.fixture(scope="session")
def leaf_run(tree):
    p = Placement.block(tree, 16, ppn=1)
    return simulate(tree, p, pt.leaf_pairs(tree, p, 2**20, nodes_per_leaf=4))


@pytest.fixture(scope="session")
def sweep_run(tree):
    """One modeled run per message size, pairs put together: a result whose pairs span sizes."""
    p = Placement.block(tree, 16, ppn=1)
    runs = [simulate(tree, p, pt.shift(16, float(s), k=4)) for s in 2 ** np.arange(0, 23, 2)]
    cols = runs[0].pairs.keys()
    return Result(meta={**runs[0].meta, "pattern": "shift sweep"}, class_labels=runs[0].class_labels,
                  pairs={c: np.concatenate([r.pairs[c] for r in runs]) for c in cols})


@pytest.fixture(scope="session")
def chromium_ok():
    from fabscope.report.export import find_browser

    if find_browser() is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    pytest.importorskip("websocket", reason="websocket-client (report extras) is not installed")
