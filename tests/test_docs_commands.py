"""Every ``fabscope`` command in a fenced block of README.md and docs/*.md runs, as written.

Each document's commands run in order, in a fresh folder of their own (so a
command may use a file an earlier one wrote), and the test fails listing every
command that exited non-zero or printed a traceback.

What is run
    Lines that start with ``fabscope`` (after joining ``\\`` continuations), and
    ``echo`` lines, which the README uses to write a small input file.  Other
    lines (``make``, ``mpirun``, ``LD_PRELOAD=... mpiexec ./a.out``, ``dot``...)
    are not fabscope's and are not run.  The examples of every subcommand's
    ``--help`` (its epilog) run the same way, as one document in walking order
    (:func:`test_every_help_example_runs`; ``sudo fabscope`` lines there are
    commands, skipped as ``sudo`` is).  A plain command runs in-process
    (``fabscope.cli.main``, after ``shlex.split``, as the shell would split it);
    one with shell syntax (``<``, ``>``, ``|``, ``$(...)``) runs under ``bash``
    with this venv's ``fabscope`` first on ``PATH``.

What is skipped, and why (:data:`SKIPS`)
    batch scripts (a block with ``#SBATCH`` or ``#PBS``): they need a cluster;
    ``--launcher srun``: needs Slurm; ``measure --np N`` with N > 4: needs a
    cluster's cores; ``fabric discover`` without ``--from``: needs an active
    InfiniBand port (the ibsim tests cover it); ``sudo``: needs a cluster's
    admin (or root, for the testbed); a command on a testbed (``--fabric tb1``,
    ``--testbed``): needs the testbed those sudo lines make; ``--scheduler``: needs
    a Slurm or PBS cluster; a pipe into a program that is not installed (Graphviz's ``dot``);
    ``report --images`` where no Chromium is installed (``.ci/run`` installs it); in the
    ``--help`` examples, a command the same as an earlier example (``fabscope --help`` repeats
    examples of the subcommands' own, such as ``fabscope demo --no-measure``): it ran once.

Placeholders (:data:`PLACEHOLDERS`, :func:`_prepare`)
    ``$PBS_NODEFILE``: a host file of Itasca's nodes, 8 lines each (1024 nodes
    nightly, 16 by default; see below); ``$SLURM_JOB_NODELIST``:
    ``node[0001-0016]``; ``topo.txt``, ``/var/log/opensm-lfts.dump``,
    ``nodes.csv``: the samples ``fabscope fabric example`` writes; ``raw/``
    (``discover --from raw/``): the same samples, as ``discover --save``
    would have kept them; ``nodes.txt``: 16 Itasca nodes with 8 slots each;
    ``profile.mtx`` (what the PMPI library writes under ``mpiexec ./a.out``):
    a 64-rank ring; ``run.jsonl`` (what ``mpirun ... fabscope-bench`` writes on
    Itasca): a real 2-rank run on this host with its host renamed Itasca's
    ``node0001``.  docs/real-fabrics.md's commands on ``fabric.json`` name
    Itasca-sized things; on the sample fabric (4 leaves of 4 hosts, leaves
    L0..L3 with 8 ports): ``L12[17]`` -> ``L0[7]``, ``leaf-pairs`` ->
    ``leaf-pairs:nodes_per_leaf=4``.

Speed-ups in the default run (:data:`FAST`; the ``nightly`` run has none)
    ``measure --np 4`` -> ``--np 2`` and ``--iterations 100`` -> ``10``;
    ``measure --np 2 pingpong`` sweeps to 64 KiB, 10 iterations; the default
    suite (``measure --np 2``) runs to 4 KiB, 5 iterations, a small stream;
    ``permute ... stencil3d:16x16x32 < $PBS_NODEFILE`` maps ``stencil3d:4x4x8``
    onto a 16-node ``$PBS_NODEFILE``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from fabscope.report.browser import find_browser

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
#: stands for the examples of every subcommand's --help (tests/test_cli_help.py checks there are some)
HELP = ROOT / "src" / "fabscope" / "cli" / "--help examples"
BIN = pathlib.Path(sys.executable).parent

#: (pattern on a command, reason): commands that cannot run on this machine
SKIPS = [
    (r"--launcher\s+srun|(^|\s)srun\s", "needs Slurm"),
    (r"\bsudo\b", "needs a cluster's admin"),
    (r"--fabric\s+tb\d|--testbed", "needs a testbed, which the sudo lines before it make (tests/testbed covers it)"),
    (r"--scheduler\s", "needs a Slurm or PBS cluster (tests/diagnose checks the job script)"),
    (r"^fabscope fabric discover(?!.*--from)", "needs an active InfiniBand port (tests/fabric/test_ibsim_e2e.py covers it)"),
    (r"^fabscope profile\s", "needs the user's MPI program (tests/mapping/test_profile.py builds and profiles one per MPI)"),
]

#: (document name or "*", regular expression, replacement, why): inputs a document assumes
PLACEHOLDERS = [
    ("*", r"\$SLURM_JOB_NODELIST", "'node[0001-0016]'", "a Slurm job's node list"),
    ("*", r"(?<![\w/.-])topo\.txt", "samples/ibnetdiscover.txt", "the admins' ibnetdiscover output"),
    ("*", r"/var/log/opensm-lfts\.dump", "samples/opensm-lfts.dump", "OpenSM's tables"),
    ("*", r"(?<![\w/.-])nodes\.csv", "samples/nodes.csv", "a host map"),
    ("mapping.md", r"(?<![\w/.-])bench/data/mesh1024\.mtx", str(ROOT / "bench" / "data" / "mesh1024.mtx"),
     "the irregular mesh shipped in the checkout"),
    ("real-fabrics.md", r'"L12\[17\]"', '"L0[7]"', "a cable of the sample fabric"),
    ("real-fabrics.md", r"(--fabric fabric\.json .*--pattern) leaf-pairs(\s|$)", r"\1 leaf-pairs:nodes_per_leaf=4\2",
     "the sample fabric's leaves hold 4 hosts"),
]

#: (regular expression, replacement): speed-ups of the default run
FAST = [
    (r"^(fabscope measure .*)--np 4\b", r"\1--np 2"),
    (r"^(fabscope measure .*)--iterations 100\b", r"\1--iterations 10"),
    (r"^(fabscope measure --np 2 pingpong)\s*$", r"\1 --max-size 64KiB --iterations 10"),
    (r"^(fabscope measure --np 2)\s*$", r"\1 suite --max-size 4KiB --iterations 5 --stream-n 1000"),
    (r"stencil3d:16x16x32 < \$PBS_NODEFILE", "stencil3d:4x4x8 < $PBS_NODEFILE"),
]


def command_blocks(path: pathlib.Path) -> list[tuple[int, list[tuple[int, str]]]]:
    """The fenced blocks of a Markdown file: (line of the fence, [(line, text)]), continuations joined."""
    blocks, cur, start = [], None, 0
    pending, pending_line = "", 0
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.lstrip().startswith("```"):
            if cur is None:
                cur, start = [], n
            else:
                blocks.append((start, cur))
                cur = None
            continue
        if cur is None:
            continue
        if pending:
            line, n = pending + " " + line.strip(), pending_line
            pending = ""
        if line.rstrip().endswith("\\"):
            pending, pending_line = line.rstrip()[:-1].rstrip(), n
            continue
        cur.append((n, line.strip()))
    return blocks


def _strip_comment(cmd: str) -> str:
    return re.sub(r"\s+#\s.*$", "", cmd).strip()


def help_blocks() -> list[tuple[int, list[tuple[int, str]]]]:
    """The examples of every subcommand's ``--help`` epilog as one block (numbered in walking order)."""
    from fabscope.cli import build_parser, walk_parsers

    lines, n = [], 0
    for _, parser in walk_parsers(build_parser()):
        text = parser.epilog or ""
        if "examples:" in text:
            for ln in text.split("examples:", 1)[1].splitlines():
                if ln.strip():
                    n += 1
                    lines.append((n, ln.strip()))
    return [(0, lines)]


def commands(path: pathlib.Path, fast: bool) -> list[tuple[int, str, str | None]]:
    """(line, command with placeholders filled, reason to skip or None) for every command of a document.

    ``path`` HELP stands for the ``--help`` epilogs (:func:`help_blocks`), where ``sudo fabscope`` lines
    are commands too (skipped as the SKIPS say)."""
    out = []
    blocks = help_blocks() if path == HELP else command_blocks(path)
    seen: dict[str, int] = {}
    for _, block in blocks:
        script = any(t.startswith(("#SBATCH", "#PBS")) for _, t in block)
        for n, text in block:
            if path == HELP and text.startswith("sudo fabscope "):
                pass
            elif not text.startswith(("fabscope ", "echo ")):
                continue
            cmd = _strip_comment(text)
            reason = "a batch script: needs a cluster" if script else None
            for pat, why in SKIPS:
                if reason is None and re.search(pat, cmd):
                    reason = why
            m = re.search(r"--np\s+(\d+)", cmd)
            if reason is None and m and int(m.group(1)) > 4:
                reason = f"{m.group(1)} ranks: needs a cluster"
            if reason is None and "--images" in cmd and find_browser() is None:
                reason = "--images needs Chromium (tests/report covers it where Chromium is installed)"
            pipe = re.search(r"\|\s*(\w+)", cmd)
            if reason is None and pipe and shutil.which(pipe.group(1)) is None:
                reason = f"pipes into {pipe.group(1)!r}, which is not installed"
            for doc, pat, new, _ in PLACEHOLDERS:
                if doc in ("*", path.name):
                    cmd = re.sub(pat, new, cmd)
            if fast:
                for pat, new in FAST:
                    cmd = re.sub(pat, new, cmd)
            if reason is None and path == HELP and cmd in seen:
                # the overview's examples repeat subcommands' own (fabscope --help and demo --help both show
                # 'fabscope demo --no-measure'): run once, as written, in this one folder
                reason = f"the same command ran as --help example {seen[cmd]}"
            seen.setdefault(cmd, n)
            out.append((n, cmd, reason))
    return out


def _hostfile(path: pathlib.Path, nodes: int) -> None:
    path.write_text("".join(f"node{i:04d}\n" * 8 for i in range(1, nodes + 1)))


@pytest.fixture(scope="session")
def itasca_run(tmp_path_factory) -> pathlib.Path:
    """A real 2-rank random-pairs run on this host, its host renamed Itasca's node0001 (see the docstring)."""
    d = tmp_path_factory.mktemp("run")
    proc = subprocess.run([str(BIN / "fabscope"), "measure", "--np", "2", "--out", "run.jsonl", "random-pairs",
                           "--size", "64KiB", "--iterations", "5"], cwd=d, capture_output=True, text=True,
                          timeout=600, env=_env())
    if proc.returncode != 0:
        pytest.fail(f"the 2-rank run the docs' run.jsonl stands for failed: {proc.stderr.strip()[-500:]}")
    lines = []
    for line in (d / "run.jsonl").read_text().splitlines():
        doc = json.loads(line)
        if doc.get("type") == "ranks":
            doc["host"] = ["node0001"] * len(doc["host"])
        lines.append(json.dumps(doc))
    out = d / "itasca-run.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _prepare(d: pathlib.Path, run: pathlib.Path, nodes: int) -> None:
    from fabscope.fabric.importers.samples import write_samples
    from fabscope.traffic.commfiles import write_mtx
    from fabscope.mapping.commgraph import ring

    write_samples(str(d / "samples"))
    write_samples(str(d / "raw"))
    _hostfile(d / "pbs_nodefile", nodes)
    (d / "nodes.txt").write_text("".join(f"node{i:04d} slots=8\n" for i in range(1, 17)))
    write_mtx(str(d / "profile.mtx"), ring(64, size=1 << 16))
    shutil.copy(run, d / "run.jsonl")


def _run_in_process(argv: list[str], d: pathlib.Path) -> tuple[int, str]:
    from fabscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    old, old_stdin = os.getcwd(), sys.stdin
    os.chdir(d)
    sys.stdin = io.StringIO("")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:           # argparse: a bad option
                rc = e.code if isinstance(e.code, int) else 2
            except Exception as e:            # a traceback is a failure too
                import traceback

                return 99, "Traceback:\n" + "".join(traceback.format_exception(e))
    finally:
        os.chdir(old)
        sys.stdin = old_stdin
    return rc, err.getvalue() + out.getvalue()[-2000:]


def run_document(path: pathlib.Path, d: pathlib.Path, run: pathlib.Path, fast: bool) -> tuple[list[str], list[str]]:
    """Run a document's commands in ``d``; (failures, skipped) as lines for the report."""
    _prepare(d, run, 16 if fast else 1024)
    failures, skipped = [], []
    for n, cmd, reason in commands(path, fast):
        where = f"{path.relative_to(ROOT)}:{n}" if path != HELP else f"--help example {n}"
        if reason:
            skipped.append(f"{where}: {cmd}  ({reason})")
            continue
        cmd = cmd.replace("$PBS_NODEFILE", "pbs_nodefile")
        if re.search(r"[<>|;&`]|\$\(|\$\w", cmd):
            p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=d, capture_output=True, text=True,
                               timeout=1200, env=_env())
            rc, text = p.returncode, p.stderr + p.stdout[-2000:]
        else:
            rc, text = _run_in_process(shlex.split(cmd)[1:], d)
        if rc != 0 or "Traceback" in text:
            failures.append(f"{where}: {cmd}\n    exit {rc}: {text.strip()[-600:]}")
    return failures, skipped


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_documented_command_runs(path, tmp_path, itasca_run):
    failures, skipped = run_document(path, tmp_path, itasca_run, fast=True)
    print("\n".join(["skipped:"] + skipped) if skipped else "nothing skipped")
    assert not failures, "documented commands that fail:\n" + "\n".join(failures)


def test_every_help_example_runs(tmp_path, itasca_run):
    """The examples in every subcommand's --help epilog, in walking order, in one folder (abridged as FAST says)."""
    failures, skipped = run_document(HELP, tmp_path, itasca_run, fast=True)
    print("\n".join(["skipped:"] + skipped) if skipped else "nothing skipped")
    assert not failures, "--help examples that fail:\n" + "\n".join(failures)


@pytest.mark.nightly
@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_documented_command_runs_unabridged(path, tmp_path, itasca_run):
    failures, _ = run_document(path, tmp_path, itasca_run, fast=False)
    assert not failures, "documented commands that fail:\n" + "\n".join(failures)


def test_the_readme_shows_the_commands_a_new_user_needs():
    cmds = [c for _, c, _ in commands(ROOT / "README.md", fast=False)]
    assert any(c.startswith("fabscope measure") and "--out run.jsonl" in c for c in cmds)
    assert any(c.startswith("fabscope analyze run.jsonl") for c in cmds)
    assert any("--host-map" in c for c in cmds)
    assert any(c.startswith("fabscope fabric example") for c in cmds)
    # every file a README command reads is one a command before it wrote, or a placeholder
    assert not any("topo.txt" in c for c in cmds)


def test_extraction_joins_continuations_and_skips_with_reasons(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n```\nfabscope simulate \\\n   --ppn 1\nmake x\n```\n```bash\n#SBATCH -N 2\n"
                  "fabscope measure --np 64 x\n```\n```\nfabscope measure --np 1024 y\n"
                  "fabscope fabric discover -o f.json\nfabscope fabric discover --from raw/ -o f.json\n```\n")
    got = commands(md, fast=False)
    assert got[0] == (3, "fabscope simulate --ppn 1", None)
    assert got[1][2] == "a batch script: needs a cluster"
    assert got[2][2] == "1024 ranks: needs a cluster"
    assert got[3][2].startswith("needs an active InfiniBand port") and got[4][2] is None


def test_mapping_figures_use_the_columns_fabscope_map_prints():
    from fabscope.mapping.table import metrics_header

    text = (ROOT / "docs" / "mapping.md").read_text()
    heads = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("algorithm ")]
    assert heads, "docs/mapping.md has no metrics tables"
    # the plain table, or with --model's and --predict's columns
    printed = {metrics_header(model, predict).strip() for model in (False, True) for predict in (False, True)}
    assert all(h in printed for h in heads), set(heads) - printed


def test_a_help_example_repeated_runs_once():
    """``fabscope --help``'s overview repeats subcommands' examples; each distinct command runs once, the
    repeats are listed as skipped with the example that ran (``demo --no-measure`` costs seconds a run)."""
    got = commands(HELP, fast=True)
    run = [c for _, c, reason in got if reason is None]
    assert len(run) == len(set(run)), sorted(c for c in run if run.count(c) > 1)
    repeats = [(n, c, r) for n, c, r in got if r and r.startswith("the same command ran as --help example")]
    assert any(c == "fabscope demo --no-measure" for _, c, _ in repeats), repeats
    first = {c: n for n, c, r in reversed(got) if r is None}
    assert all(r.endswith(f"example {first[c]}") for _, c, r in repeats), repeats
