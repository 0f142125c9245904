"""Testbeds for tests: named ``ci*``, state in a scratch folder, and no leftovers.

The session fixture takes down every ``ci*`` testbed at the end, whatever
failed, and then checks that no namespace, veth or bridge of one remains.
"""

from __future__ import annotations

import os

import pytest

from fabscope.testbed import names, system

#: names the tests use; the leftover check covers each
TEST_NAMES = ("ci1", "ci2", "ci3", "ci9", "cikill", "cilost", "nz1")


def leftovers() -> list[str]:
    left = [n for n in system.list_netns() if any(names.owns_netns(t, n) for t in TEST_NAMES)]
    left += [x for x in system.list_links() if any(names.owns_link(t, x) for t in TEST_NAMES)]
    return left


@pytest.fixture(scope="session", autouse=True)
def testbed_state_dir(tmp_path_factory):
    """State files in a scratch folder, and every test testbed down at the end."""
    old = os.environ.get("FABSCOPE_TESTBED_DIR")
    d = tmp_path_factory.mktemp("testbed-state")
    os.environ["FABSCOPE_TESTBED_DIR"] = str(d)
    try:
        yield d
    finally:
        if system.unavailable_reason() is None:
            from fabscope.testbed.lifecycle import down

            for t in TEST_NAMES:
                try:
                    down(t)
                except Exception:  # keep going: the check below reports what stayed
                    pass
            left = leftovers()
            assert not left, f"testbed leftovers after the tests: {left}"
        if old is None:
            os.environ.pop("FABSCOPE_TESTBED_DIR", None)
        else:
            os.environ["FABSCOPE_TESTBED_DIR"] = old
