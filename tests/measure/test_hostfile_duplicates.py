"""A host listed twice in a host file is warned about by name (PBS's one-line-per-slot runs are not)."""

from __future__ import annotations

import io
import sys
import warnings

import pytest

from fabscope.errors import FabscopeWarning
from fabscope.measure.hostlists import parse_hostfile


def _parse(lines):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = parse_hostfile(lines)
    return out, [str(x.message) for x in w if issubclass(x.category, FabscopeWarning)]


def test_pbs_runs_of_one_host_are_slots_not_duplicates():
    out, warned = _parse(["n1", "n1", "n1", "n2", "n2"])
    assert out == [("n1", 3), ("n2", 2)] and warned == []


@pytest.mark.parametrize("lines,host,line,first", [
    (["n1", "n2", "n1"], "n1", 3, 1),
    (["n1 slots=4", "n1 slots=4"], "n1", 2, 1),
    (["# job", "a:2", "b:2", "a:2"], "a", 4, 2),
])
def test_repeated_host_warns_naming_it(lines, host, line, first):
    out, warned = _parse(lines)
    assert len(warned) == 1
    assert warned[0].startswith(f"host file line {line}: host {host!r} is listed again (first at line {first})")
    assert dict(out)[host] == sum(int(x.split(":")[-1].split("=")[-1]) if ("=" in x or ":" in x) else 1
                                  for x in lines if x.split()[0].split(":")[0] == host)


def test_cli_prints_the_warning_as_one_line(tmp_path, capsys):
    from fabscope.cli import main

    hosts = tmp_path / "hosts"
    hosts.write_text("node0001 slots=4\nnode0002 slots=4\nnode0001 slots=4\n")
    old = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        rc = main(["place", "--fabric", "itasca", "--nodes", str(hosts)])
    finally:
        sys.stdin = old
    err = capsys.readouterr().err
    assert f"fabscope: warning: host file {hosts} line 3: host 'node0001' is listed again" in err
    assert err.count("\n") == 1 and rc == 0
