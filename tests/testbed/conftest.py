"""Testbeds for tests: named ``ci*``, state in a scratch folder, and no leftovers.

The session fixture takes down every ``ci*`` testbed at the end, whatever
failed, and then checks that no namespace, veth or bridge of one remains.

Scratch folders are made with :mod:`tempfile`, not pytest's ``tmp_path``: every
pytest session a user starts removes all but the three newest
``/tmp/pytest-of-USER/pytest-N`` folders, so on a machine where other sessions run
pytest too, a testbed test of a few minutes lost its host files and outputs halfway
(seen here: ``unable to open host file``, ``cannot write ...jsonl``).  ``work`` is the
testbed tests' ``tmp_path``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from fabscope.testbed import names, system

#: names the tests use; the leftover check covers each
TEST_NAMES = ("ci1", "ci2", "ci3", "ci9", "cikill", "cilost", "hs1", "nz1", "sl1", "sl2",  # hs1: history, nz1: noise, sl*: slurm
              *(f"ap{i}" for i in range(1, 10)))  # ap*: testbed run and the applications (test_run, test_apps)


def leftovers() -> list[str]:
    from fabscope.testbed import slurm

    left = [f"Slurm of {t}" for t in TEST_NAMES if slurm.running(t) or slurm.slurm_dir(t).exists()]
    left += [n for n in system.list_netns() if any(names.owns_netns(t, n) for t in TEST_NAMES)]
    left += [x for x in system.list_links() if any(names.owns_link(t, x) for t in TEST_NAMES)]
    return left


@pytest.fixture(scope="session", autouse=True)
def testbed_state_dir():
    """State files in a scratch folder, and every test testbed down at the end."""
    old = os.environ.get("FABSCOPE_TESTBED_DIR")
    d = Path(tempfile.mkdtemp(prefix="fabscope-testbed-state-"))
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
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def work():
    """A scratch folder of one test that no other pytest session removes (see the module docstring)."""
    d = Path(tempfile.mkdtemp(prefix="fabscope-testbed-test-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
