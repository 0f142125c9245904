"""Every file a command reads or writes is declared with its option (fabscope.cli.files), and an output
that is also an input, by any name, is refused in one line with every file left byte for byte."""

from __future__ import annotations

import argparse
import os
import re
import sys

import pytest

from fabscope.cli import build_parser, main, walk_parsers
from fabscope.cli.files import ATTR, NONE
from test_outputs import _run  # the CLI in-process, standard input empty

#: words in an option's name, metavar or help that say it may name a file: an undeclared option
#: with one of them fails the walk below
FILE_WORDS = re.compile(r"\b(files?|FILE|DIR|folder|json|jsonl|csv|html|output|history|trace|hostfile|host[- ]map|"
                        r"hostmap|placement|YAML|RESULT|MEASURED|write|read|save|from|dump\w*|ibnetdiscover|lfts|"
                        r"db|nodes|comm|model|fabric|pattern)\b", re.IGNORECASE)


def _valued_actions():
    for path, p in walk_parsers(build_parser()):
        for a in p._actions:
            if isinstance(a, (argparse._SubParsersAction, argparse._HelpAction, argparse._VersionAction)):
                continue
            if a.nargs == 0 or a.type in (int, float) or a.choices:
                continue        # a flag, a number or a word from a list names no file
            yield " ".join(path), a


def _text(a: argparse.Action) -> str:
    meta = " ".join(a.metavar) if isinstance(a.metavar, tuple) else (a.metavar or "")
    return " ".join([*a.option_strings, a.dest, meta, a.help or ""])


def test_every_option_that_names_a_file_is_declared():
    missing = [f"{cmd} {'/'.join(a.option_strings) or a.dest}" for cmd, a in _valued_actions()
               if getattr(a, ATTR, None) is None and FILE_WORDS.search(_text(a))]
    assert not missing, f"options that may name a file, declared neither read, written nor not a file: {missing}"


def test_the_net_catches_every_declared_file():
    """The words above find every option declared as a file: a new file option is caught by them too."""
    declared = [(cmd, a) for cmd, a in _valued_actions() if getattr(a, ATTR, (NONE,))[0] != NONE]
    assert len(declared) > 40
    missed = [f"{cmd} {a.dest}" for cmd, a in declared if not FILE_WORDS.search(_text(a))]
    assert not missed, missed


@pytest.fixture
def work(tmp_path, monkeypatch, capsys):
    """A folder with a fabric, a history of two nights, a graph, a node list and a trace."""
    monkeypatch.chdir(tmp_path)
    assert main(["fabric", "export", "--fabric", "fat-tree:k=2,levels=2", "--format", "json", "-o", "f.json"]) == 0
    assert main(["history", "example", "nights", "--nights", "2", "--fabric", "fat-tree:k=2,levels=2"]) == 0
    assert main(["history", "add", "--db", "h.db", "nights/night01.json", "nights/night02.json"]) == 0
    (tmp_path / "c.csv").write_text("0 1 100\n1 0 100\n")
    (tmp_path / "n.txt").write_text("h0\nh1\n")
    (tmp_path / "t.csv").write_text("time,src,dst,bytes\n0,0,1,100\n")
    (tmp_path / "plan.sh.json").write_bytes((tmp_path / "f.json").read_bytes())
    capsys.readouterr()
    return tmp_path


#: the ten commands that overwrote an input, each given the input under another name (./x, a link)
CASES = [
    (["history", "report", "--db", "h.db", "-o", "h.db"], "--db h.db"),
    (["history", "check", "--db", "h.db", "-o", "./h.db"], "--db h.db"),
    (["map", "--fabric", "f.json", "--comm", "c.csv", "-o", "LINK:c.csv"], "--comm c.csv"),
    (["map", "--fabric", "f.json", "--comm", "ring:4", "--nodes", "n.txt", "--json", "n.txt"], "--nodes n.txt"),
    (["permute", "--fabric", "f.json", "--comm", "ring:4", "--nodes", "n.txt", "-o", "HARD:n.txt"], "--nodes n.txt"),
    (["place", "--fabric", "f.json", "--nodes", "./n.txt", "--json", "n.txt"], "--nodes ./n.txt"),
    (["diagnose", "--plan", "--fabric", "f.json", "-o", "f.json"], "--fabric f.json"),
    (["diagnose", "--plan", "--sbatch", "--fabric", "plan.sh.json", "-o", "plan.sh"], "--fabric plan.sh.json"),
    (["simulate", "--dynamic", "--fabric", "f.json", "--pattern", "trace:t.csv", "-o", "t.csv"], "trace:t.csv"),
    (["simulate", "--dynamic", "--fabric", "f.json", "--pattern", "replay:c.csv", "-o", "./c.csv"], "replay:c.csv"),
    (["fabric", "critical", "--fabric", "f.json", "--workers", "0", "-o", "f.json"], "--fabric f.json"),
    (["history", "example", "nights", "--fabric", "nights/night02.json"], "--fabric nights/night02.json"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_an_output_that_is_an_input_is_refused_and_every_file_kept(work, capsys, case):
    argv, named = CASES[case]
    argv = list(argv)
    for i, w in enumerate(argv):           # the output as a symbolic or a hard link to the input
        if w.startswith(("LINK:", "HARD:")):
            kind, target = w.split(":", 1)
            other = f"alias-{target}"
            (os.symlink if kind == "LINK" else os.link)(target, other)
            argv[i] = other
    files = [p for p in work.rglob("*") if p.is_file()]
    before = {p: p.read_bytes() for p in files}
    rc, out, err = _run(argv, capsys)
    line = err.strip()
    assert rc == 1 and "\n" not in line and line.startswith("fabscope: error: "), (argv, err)
    assert "is also an input" in line and named in line, line
    after = sorted(p for p in work.rglob("*") if p.is_file() or p.is_symlink())
    assert {p: p.read_bytes() for p in files} == before
    assert not [p for p in after if p.name.startswith(".") or p.suffix in (".part", ".tmp")], after


def test_stdin_read_as_the_node_list_is_an_input(work, capsys):
    """``permute < hosts -o hosts``: the standard input it reads is the file it would write."""
    import subprocess

    before = (work / "n.txt").read_bytes()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with open(work / "n.txt") as fh:
        r = subprocess.run([sys.executable, "-m", "fabscope.cli", "permute", "--fabric", "f.json", "--comm", "ring:4",
                            "-o", "n.txt"], stdin=fh, capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 1 and "is also an input" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (work / "n.txt").read_bytes() == before


def test_outputs_that_are_not_inputs_still_run(work, capsys):
    rc, _, err = _run(["history", "check", "--db", "h.db", "-o", "findings.json"], capsys)
    assert rc in (0, 3) and (work / "findings.json").exists(), err
