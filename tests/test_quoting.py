"""Hostile names: refused on import, quoted or refused where written.

Each test feeds a name that once went through unchecked: into topology.conf,
host/rank/machine files, launcher command lines, the terminal's tables and CSV.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys

import pytest

from fabscope.cli import main
from fabscope.errors import FabricError, MeasureError, OutputError
from fabscope.fabric.exporters.slurm import to_slurm
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.model import FabricBuilder, Level
from fabscope.mapping.outputs import FORMATS, render
from fabscope.mapping.targets import Mapping, Target
from fabscope.measure.hostlists import parse_hostfile
from fabscope.measure.launchers import Job, get_launcher
from fabscope.names import csv_cell, terminal

DATA = os.path.join(os.path.dirname(__file__), "fabric", "data")
TOPO = os.path.join(DATA, "ibnetdiscover.small.txt")
HOSTILE = ["EOF||touch${IFS}/tmp/x", "n1,login01", "node[100-999]", "a b", "x=y", "n1\nSwitchName=evil",
           "h\x1b[2J", "-rf", "n:4", "h#x", "$(reboot)", "h;id", "`id`"]


def _run(argv, capsys):
    old = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        rc = main(argv)
    finally:
        sys.stdin = old
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_error_line(err: str) -> str:
    err = err.strip()
    assert err.startswith("fabscope: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def _python_fabric(host: str = "h0", switch: str = "s0", label: str = "Same Leaf"):
    """A fabric built in Python (no importer checked its names): two hosts on one switch."""
    b = FabricBuilder("py")
    hs = b.add_hosts([host, "h1"])
    s = b.add_switch(switch, level=1)
    for h in hs:
        b.cable(h, s, 1e9)
    return b.build(groups={"leaf": [0, 0]}, levels=[Level("leaf", label)])


# ---- on import -----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["EOF||touch${IFS}/tmp/x", "node[1-2]", "n1,login01", "$(id)", "h\x1b[2J"])
def test_ibnetdiscover_host_name_refused_on_import(tmp_path, capsys, bad):
    text = open(TOPO).read()
    assert '# "H-3-3"' in text
    p = tmp_path / "topo.txt"
    p.write_text(text.replace('# "H-3-3"', f'# "{bad} HCA-1"'))
    out = tmp_path / "f.json"
    rc, _, err = _run(["fabric", "import", "--ibnetdiscover", str(p), "-o", str(out)], capsys)
    assert rc == 1
    line = _one_error_line(err)
    assert "host name" in line and "line " in line and "\x1b" not in line, line
    assert not out.exists()


def test_ibnetdiscover_switch_name_with_control_character_refused(tmp_path, capsys):
    text = open(TOPO).read()
    p = tmp_path / "topo.txt"
    p.write_text(text.replace('# "L3"', '# "L3\x1b]0;pwned\x07"', 1))
    rc, _, err = _run(["fabric", "import", "--ibnetdiscover", str(p), "-o", str(tmp_path / "f.json")], capsys)
    assert rc == 1
    line = _one_error_line(err)
    assert "switch name" in line and "U+001B" in line and "\x1b" not in line


def test_real_switch_descriptions_still_import(tmp_path, capsys):
    text = open(TOPO).read()
    p = tmp_path / "topo.txt"
    p.write_text(text.replace('# "L3"', '# "MF0;ib-sw01:MSX6036/U1"', 1))
    rc, _, err = _run(["fabric", "import", "--ibnetdiscover", str(p), "-o", str(tmp_path / "f.json")], capsys)
    assert rc == 0, err
    assert "MF0;ib-sw01:MSX6036/U1" in json.loads((tmp_path / "f.json").read_text())["switches"]["name"]


@pytest.mark.parametrize("field,bad", [("host", "n1,login01"), ("host", "a b"), ("switch", "L0\nSwitchName=x"),
                                       ("fabric", "x\ntouch /tmp/pwn"), ("label", "Leaf\x1b[2J")])
def test_fabric_json_names_refused_on_load(tmp_path, capsys, field, bad):
    assert main(["fabric", "export", "--fabric", "fat-tree:k=2,levels=2", "--format", "json",
                 "-o", str(tmp_path / "ok.json")]) == 0
    doc = json.loads((tmp_path / "ok.json").read_text())
    if field == "host":
        old = doc["hosts"]["name"][0]
        doc["hosts"]["name"][0] = bad
    elif field == "switch":
        old = doc["switches"]["name"][0]
        doc["switches"]["name"][0] = bad
    elif field == "fabric":
        doc["name"] = bad
    else:
        doc["levels"][0]["label"] = bad
    if field in ("host", "switch"):
        doc["cables"]["a"] = [bad if x == old else x for x in doc["cables"]["a"]]
        doc["cables"]["b"] = [bad if x == old else x for x in doc["cables"]["b"]]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    capsys.readouterr()
    rc, _, err = _run(["simulate", "--fabric", str(p)], capsys)
    assert rc == 1
    line = _one_error_line(err)
    assert f"{field if field != 'label' else 'class'} name" in line and str(p) in line, line


def test_host_map_host_name_refused(tmp_path):
    from fabscope.fabric.importers.hostmap import parse_hostmap

    with pytest.raises(FabricError, match=r"map line 2: host name 'n2;reboot' has ';'"):
        parse_hostmap("0x1 n1\n0x2 n2;reboot\n", "map")


@pytest.mark.parametrize("bad", ["n1,n2", "node[1-2]", "$(id)", "n1;id", "-x"])
def test_host_file_names_refused(bad):
    with pytest.raises(MeasureError, match=r"hosts line 2: host name"):
        parse_hostfile(["n0", bad], "hosts")


# ---- where written -------------------------------------------------------------------------

@pytest.mark.parametrize("switch,host", [("L0,L9", "h0"), ("s0", "login01,node[100-999]"), ("a b", "h0"),
                                         ("s0", "n1\nSwitchName=evil")])
def test_topology_conf_refuses_what_slurm_would_misread(switch, host):
    f = _python_fabric(host, switch)
    with pytest.raises(OutputError, match="Slurm's topology.conf and node lists cannot carry"):
        to_slurm(f)


def test_topology_conf_of_good_names_unchanged():
    lines = to_slurm(fat_tree(k=2, levels=2)).splitlines()
    assert lines[1] == "SwitchName=s1-0000 Nodes=h[0000-0001]"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bad", ["n1,n2", "n1 slots=99", "n1:64", "n1\nn9", "h#x", "n=1", "-np"])
def test_launcher_files_refuse_hostile_host_names(fmt, bad):
    f = _python_fabric(bad)
    t = Target.whole(f, 2, ppn=1)
    m = Mapping(t, [0, 1])
    with pytest.raises(OutputError, match="cannot carry"):
        render(m, fmt)


def test_launcher_files_of_good_names():
    f = _python_fabric("node-1.cluster_a")
    m = Mapping(Target.whole(f, 2, ppn=1), [0, 1])
    assert render(m, "machinefile") == "node-1.cluster_a:1\nh1:1\n"


@pytest.mark.parametrize("name", ["mpich", "openmpi", "srun"])
@pytest.mark.parametrize("bad", ["n1,n2", "n:4", "a b", "n\n"])
def test_launcher_command_lines_refuse_hostile_host_names(name, bad):
    job = Job(np=2, program=["x"], hosts=[("n0", 1), (bad, 1)])
    with pytest.raises(OutputError, match="cannot carry"):
        get_launcher(name, "x").command(job)


def test_terminal_tables_take_markup_and_escapes_as_text(tmp_path, capsys):
    """A class label '[/oops]' crashed rich's tables; an escape sequence reached the terminal raw."""
    assert main(["fabric", "export", "--fabric", "fat-tree:k=2,levels=2", "--format", "json",
                 "-o", str(tmp_path / "ok.json")]) == 0
    doc = json.loads((tmp_path / "ok.json").read_text())
    doc["levels"][0]["label"] = "[/oops] [bold]x"
    doc["far_label"] = "=cmd|'/C calc'!A0"
    p = tmp_path / "f.json"
    p.write_text(json.dumps(doc))
    capsys.readouterr()
    out_csv = tmp_path / "pairs.csv"
    rc, out, err = _run(["simulate", "--fabric", str(p), "--csv", str(out_csv)], capsys)
    assert rc == 0, err
    assert "[/oops] [bold]x" in out                     # shown as written, not taken as markup
    rows = list(csv.reader(out_csv.open()))
    classes = {r[-1] for r in rows[1:]}
    assert "'=cmd|'/C calc'!A0" in classes and "[/oops] [bold]x" in classes


def test_terminal_function_and_print_tables():
    from rich.console import Console

    from fabscope.report.sections import Table
    from fabscope.report.tables import print_tables

    buf = io.StringIO()
    con = Console(file=buf, width=200)
    tab = Table(title="t [/oops]", columns=["link", "x"], rows=[["[/oops]\x1b[2J", 1]], note="n\x1b]0;t\x07")
    print_tables([tab], con, title="[/bad]")
    text = buf.getvalue()
    assert "\x1b[2J" not in text and "\x07" not in text
    assert "[/oops]\\x1b[2J" in text and "[/bad]" in text
    assert terminal("a\x9bb") == "a\\x9bb"              # the 8-bit CSI too


@pytest.mark.parametrize("cell,want", [("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
                                       ("\tx", "'\tx"), ("\rx", "'\rx"), ("node1", "node1"), (-3, -3), (1.5, 1.5)])
def test_csv_cell(cell, want):
    assert csv_cell(cell) == want


def test_error_lines_show_escape_sequences_not_run_them(tmp_path, capsys):
    """A message carrying a name with a terminal escape (a Python-built fabric skips the import checks)."""
    from fabscope.errors import FabscopeError

    def boom(args):
        raise FabscopeError("host h\x1b]0;pwned\x07 is down")

    import argparse

    from fabscope import cli

    real = cli.build_parser

    def fake():
        p = argparse.ArgumentParser()
        p.set_defaults(func=boom)
        return p

    cli.build_parser = fake
    try:
        assert cli.main([]) == 1
    finally:
        cli.build_parser = real
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "h\\x1b]0;pwned\\x07 is down" in err


def test_emoji_codes_in_names_printed_as_written(tmp_path, capsys):
    """rich turned a name's ':fire:' into an emoji: a fabric named 'lab:fire:net' was printed 'lab🔥net'."""
    from rich.console import Console

    from fabscope.report.tables import print_result
    from fabscope.result import Result

    assert main(["fabric", "export", "--fabric", "torus:4x4", "--format", "json", "-o", str(tmp_path / "f.json")]) == 0
    doc = json.loads((tmp_path / "f.json").read_text())
    doc["name"] = "lab:fire:net"
    (tmp_path / "f.json").write_text(json.dumps(doc))
    capsys.readouterr()
    out_json = tmp_path / "r.json"
    rc, out, err = _run(["simulate", "--fabric", str(tmp_path / "f.json"), "--routing", "dor", "--ppn", "1",
                         "--pattern", "permutation", "--dynamic", "-o", str(out_json)], capsys)
    assert rc == 0, err
    assert out.startswith("lab:fire:net, routing dor") and "\N{FIRE}" not in out
    buf = io.StringIO()                                   # a caller's own console, emoji codes on
    print_result(Result.read_json(out_json), Console(file=buf, width=200))
    assert buf.getvalue().startswith("lab:fire:net, routing dor") and "\N{FIRE}" not in buf.getvalue()
