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
TEST_NAMES = ("ci1", "ci2", "ci3", "ci4", "ci9", "cikill", "cilost", "hs1", "nz1", "sl1", "sl2",  # hs1: history, nz1: noise, sl*: slurm
              "ac7",                                 # test_queue
              "mp1", "mp2", "mp3", "mp4",            # test_multiport (the benches' ac1..ac9 are not the tests')
              *(f"ap{i}" for i in range(1, 10)))  # ap*: testbed run and the applications (test_run, test_apps)
#: the names each module uses; a session takes down and checks only the names of the modules it collected
#: (all the others' for a module not listed here), so that a session running some modules leaves alone the
#: testbeds another session is testing with on this machine, and the reverse (a session of test_lifecycle
#: alone took down test_e2e's ci1 halfway through another session's plan script: "Cannot open network
#: namespace fstb-ci1-h0").  No two modules share a name; test_names_scoping.py checks both.
MODULE_NAMES = {"test_run": ("ap1",), "test_apps": ("ap2",), "test_queue": ("ac7",),
                "test_e2e": ("ci1", "ci2", "ci4"), "test_lifecycle": ("ci3", "ci9", "cikill", "cilost"),
                "test_history_testbed": ("hs1",), "test_noise": ("nz1",), "test_slurm": ("sl1", "sl2"),
                "test_multiport": ("mp1", "mp2", "mp3", "mp4"), "test_plan": (), "test_fair_lines": (),
                "test_names_scoping": ()}
_collected: set[str] = set()


def pytest_collection_modifyitems(session, config, items):  # noqa: ARG001 - pytest's hook signature
    here = Path(__file__).parent       # the hook sees the whole session's items: only this folder's modules count
    _collected.update(item.path.stem for item in items if item.path.parent == here)


def session_names() -> tuple[str, ...]:
    """The test testbeds of the modules this session collected (every name when none is known)."""
    listed = {n for ns in MODULE_NAMES.values() for n in ns}
    mine = {n for m in _collected if m in MODULE_NAMES for n in MODULE_NAMES[m]}
    if not _collected or any(m not in MODULE_NAMES for m in _collected):
        mine |= set(TEST_NAMES) - listed
    return tuple(t for t in TEST_NAMES if t in mine)


def leftovers(names_: tuple[str, ...] | None = None) -> list[str]:
    from fabscope.testbed import slurm

    tested = TEST_NAMES if names_ is None else names_
    left = [f"Slurm of {t}" for t in tested if slurm.running(t) or slurm.slurm_dir(t).exists()]
    left += [n for n in system.list_netns() if any(names.owns_netns(t, n) for t in tested)]
    left += [x for x in system.list_links() if any(names.owns_link(t, x) for t in tested)]
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

            tested = session_names()
            for t in tested:
                try:
                    down(t)
                except Exception:  # keep going: the check below reports what stayed
                    pass
            left = leftovers(tested)
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
