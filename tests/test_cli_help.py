"""Every subcommand's ``--help`` teaches: a description, every option explained with its default, examples.

The examples are run by tests/test_docs_commands.py (``test_every_help_example_runs``).
"""

from __future__ import annotations

import argparse
import re

import pytest

from fabscope.cli import build_parser, main, walk_parsers
from fabscope.cli.options import SHARED, pattern_names

PARSERS = list(walk_parsers(build_parser()))
SUBCOMMANDS = [(path, p) for path, p in PARSERS if path]


def help_examples(parser: argparse.ArgumentParser) -> list[str]:
    """The commands of a parser's epilog (lines under 'examples:' that start with fabscope or sudo fabscope)."""
    text = parser.epilog or ""
    if "examples:" not in text:
        return []
    return [ln.strip() for ln in text.split("examples:", 1)[1].splitlines()
            if ln.strip().startswith(("fabscope ", "sudo fabscope "))]


def _defaults_said(parser: argparse.ArgumentParser, action: argparse.Action) -> bool:
    text = parser.formatter_class(prog="x")._get_help_string(action) or ""
    return "default" in text


@pytest.mark.parametrize("path,parser", SUBCOMMANDS, ids=[" ".join(p) for p, _ in SUBCOMMANDS])
def test_every_subcommand_describes_itself_explains_every_option_and_shows_examples(path, parser):
    faults = []
    if not (parser.description or "").strip():
        faults.append("no description")
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        if not action.help or action.help == argparse.SUPPRESS:
            faults.append(f"{name}: no help text")
        elif (action.default not in (None, False, [], "", argparse.SUPPRESS)
              and not _defaults_said(parser, action)):
            faults.append(f"{name}: default {action.default!r} not said")
    ex = help_examples(parser)
    if len(ex) < 2:
        faults.append(f"{len(ex)} examples in the epilog (want 2 or 3)")
    words = " ".join(path)
    wrong = [e for e in ex if not re.match(rf"(sudo )?fabscope {re.escape(words)}(\s|$)", e)]
    if wrong:
        faults.append(f"examples of another command: {wrong}")
    assert not faults, f"fabscope {words} --help: " + "; ".join(faults)


def test_help_prints_description_options_and_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["fabric", "whatif", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  fabscope fabric whatif " in out
    assert "(default: 1MiB" in out and "(default: random-pairs)" in out


def test_pattern_list_names_every_pattern_of_the_registries(capsys):
    from fabscope.cli.names import PROGRAM_ONLY
    from fabscope.dynamic.programs import COLLECTIVES
    from fabscope.traffic.spec import PATTERNS

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    for name in list(PATTERNS) + [f"{c}:{a}" for c in COLLECTIVES for a in COLLECTIVES[c]] + ["replay:", "trace:"]:
        assert name in out.replace("- ", "-"), name
    assert set(PROGRAM_ONLY) <= {n.split(":")[0] for n in pattern_names(True)}


def test_shared_options_have_one_default_everywhere():
    """--size: one default in every command; --ppn, --ranks, --pattern, --routing, --fabric: one definition
    (default and meaning) in simulate, fabric whatif and fabric critical."""
    jobs = {("simulate",), ("fabric", "whatif"), ("fabric", "critical")}
    seen: dict[str, set] = {}
    for path, parser in SUBCOMMANDS:
        for action in parser._actions:
            if "--size" in action.option_strings:
                if path == ("diagnose",):    # unset: --plan takes 1MiB, --confirm the diagnosed run's size
                    assert action.default is None and "the diagnosed run's" in action.help
                    continue
                seen.setdefault("--size", set()).add(action.default)
            for opt in ("--ppn", "--ranks", "--pattern", "--routing", "--seed"):
                if path in jobs and opt in action.option_strings:
                    # --pattern: simulate also lists the patterns only --dynamic runs
                    seen.setdefault(opt, set()).add((action.default, None if opt == "--pattern" else action.help))
    for opt, variants in seen.items():
        assert len(variants) == 1, f"{opt} has {len(variants)} definitions: {variants}"
    assert seen["--size"] == {"1MiB"} and {"--ppn", "--ranks", "--pattern", "--routing"} <= set(seen)


def test_the_options_table_in_the_docs_is_the_one_in_the_code():
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text()
    for opt, default, _ in SHARED:
        assert re.search(rf"^\| `{re.escape(opt)}` \| {re.escape(default)} \|", text, re.M), opt


def test_measure_test_help_explains_the_test_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fabscope-random-pairs.jsonl").write_text("stale\n")
    assert main(["measure", "random-pairs", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fabscope-bench random-pairs: concurrent ping-pong of random pairs (seed 000)")
    assert "--iterations N" in out and "wrote" not in out
    assert (tmp_path / "fabscope-random-pairs.jsonl").read_text() == "stale\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fabscope-random-pairs.jsonl"]
    assert main(["measure", "nosuch", "--help"]) == 1
    assert "unknown test 'nosuch'" in capsys.readouterr().err


def test_measure_help_lists_every_test_and_option_of_the_program(capsys):
    from fabscope.measure.benchhelp import OPTION_HELP, bench_options, bench_tests

    assert set(bench_options()) == set(OPTION_HELP), "OPTION_HELP and fb_parse_options (csrc/util.c) differ"
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    out = capsys.readouterr().out
    for t in bench_tests():
        assert re.search(rf"^  {re.escape(t.name)}\s", out, re.M), t.name
    for opt in bench_options():
        assert re.search(rf"^  {re.escape(opt)}[\s]", out, re.M), opt
    assert len(bench_tests()) >= 17
