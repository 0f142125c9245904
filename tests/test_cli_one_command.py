"""A run of one command builds that command's parser alone (the others' modules and parsers were
20-45 CPU ms of every run): what it parses, prints and refuses is what the whole parser does."""

import argparse
import contextlib
import importlib
import io
import json
import subprocess
import sys

import pytest

from fabscope.cli import COMMAND_MODULES, COMMANDS, build_parser, walk_parsers


def test_the_command_table_is_what_the_modules_register():
    sub = argparse.ArgumentParser(prog="fabscope").add_subparsers(dest="command")
    added = {}
    for name in COMMAND_MODULES:
        before = set(sub.choices)
        importlib.import_module(f"fabscope.cli.{name}").register(sub)
        added.update({word: name for word in set(sub.choices) - before})
    assert added == COMMANDS


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_commands_parser_is_the_whole_parsers(command):
    module = COMMANDS[command]              # with the other commands the same module adds (map, permute, place)
    whole = {path: p.format_help() for path, p in walk_parsers(build_parser()) if path and COMMANDS[path[0]] == module}
    alone = {path: p.format_help() for path, p in walk_parsers(build_parser(command)) if path}
    assert (command,) in whole and alone == whole


def _outcome(parser, argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            args = vars(parser.parse_args(argv))
            args.pop("func", None)
            code = None
        except SystemExit as e:
            args, code = None, e.code
    return args, code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", [["simulate", "--fabric", "torus:4x4", "--dynamic"], ["simulate", "--bogus"],
                                  ["simulate", "--fabric"], ["map"], ["history", "list"], ["testbed", "--help"],
                                  ["bogus"], [], ["--version"], ["simulate", "--ppn", "x"]])
def test_what_one_commands_parser_parses_and_refuses_is_the_same(argv):
    alone = build_parser(argv[0] if argv else None)
    assert _outcome(alone, argv) == _outcome(build_parser(), argv)


def test_a_simulation_imports_no_other_command():
    code = ("import sys, json\nfrom fabscope.cli import main\n"
            "main(['simulate', '--fabric', 'torus:4x4', '--routing', 'dor', '--ppn', '1', '--pattern', 'permutation',"
            " '--dynamic'])\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('fabscope.cli.', 'fabscope.measure')))),"
            " file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stderr.strip().splitlines()[-1])
    assert "fabscope.cli.simulate" in loaded
    assert not [m for m in loaded if m.startswith("fabscope.measure") or m in ("fabscope.cli.measure", "fabscope.cli.mapping",
                                                                              "fabscope.cli.testbed", "fabscope.cli.demo")]
