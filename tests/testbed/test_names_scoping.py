"""The testbed names of the test modules (conftest.MODULE_NAMES): each module lists the names it brings up, no
two modules share one, and a session takes down only the names of the modules it collected.  Several engineers
run testbed tests on one machine: a session of one module must not take down another session's testbed halfway.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import conftest

HERE = Path(__file__).parent


def _names_in(path: Path) -> set[str]:
    """The test names a module's source spells out as string literals ("ci1", NAME = "hs1", fstb-ci4-h1)."""
    text = path.read_text()
    words = set(re.findall(r"[\"']([a-z][a-z0-9]*)[\"']", text)) | set(re.findall(r"fstb-([a-z][a-z0-9]*)-", text))
    return words & set(conftest.TEST_NAMES)


def test_every_module_lists_the_names_it_uses_and_none_is_shared():
    modules = sorted(p for p in HERE.glob("test_*.py") if p.stem != Path(__file__).stem)
    assert {p.stem for p in modules} <= set(conftest.MODULE_NAMES), \
        set(p.stem for p in modules) - set(conftest.MODULE_NAMES)
    for p in modules:
        assert _names_in(p) <= set(conftest.MODULE_NAMES[p.stem]), (p.stem, _names_in(p))
    listed = [n for ns in conftest.MODULE_NAMES.values() for n in ns]
    assert len(listed) == len(set(listed)), sorted(n for n in listed if listed.count(n) > 1)
    assert set(listed) <= set(conftest.TEST_NAMES)


def test_a_session_takes_down_only_its_modules_names(monkeypatch):
    monkeypatch.setattr(conftest, "_collected", {"test_lifecycle"})
    assert set(conftest.session_names()) == {"ci3", "ci9", "cikill", "cilost"}
    monkeypatch.setattr(conftest, "_collected", {"test_e2e", "test_noise"})
    assert set(conftest.session_names()) == {"ci1", "ci2", "ci4", "nz1"}
