"""What fabscope-bench's tests and options are, for ``fabscope measure --help`` and ``measure TEST --help``.

The tests and their one-line descriptions are read from the program's own table
(``TESTS[]`` in csrc/main.c), so a test added there is listed here without a
second list to keep; the options' explanations are :data:`OPTION_HELP`, and a
test (tests/measure/test_benchhelp.py) checks that it names every option
``fb_parse_options`` in csrc/util.c reads, and no other.  Nothing is built or
launched to print help.

>>> names = [t.name for t in bench_tests()]
>>> names[:3], "stream" in names
(['pingpong', 'bw', 'bibw'], True)
>>> print(help_of_test("random-pairs").splitlines()[0])
fabscope-bench random-pairs: concurrent ping-pong of random pairs (seed 000); in the default suite
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabscope.measure.build import source_dir

#: every option of fabscope-bench, with its default (csrc/util.c fb_parse_options and the tests' defaults)
OPTION_HELP = {
    "--size": "S: one message size (pair tests default 1MiB, seed 000's '1MB'; sweeps: every power of two; "
              "halo2d/halo3d: bytes per face, default 64KiB; fft-transpose: bytes per block, default 16KiB; "
              "allreduce-loop: bytes reduced, a multiple of 8, default 64KiB)",
    "--min-size": "S: smallest size of a sweep (default: the test's own, 0 B for pingpong)",
    "--max-size": "S: largest size of a sweep (default: the test's own, 4MiB for pingpong)",
    "--iterations": "N: timed iterations (pair tests 100; application kernels 50; sweeps: more for small "
                    "messages than for large)",
    "--warmup": "N: untimed iterations first (pair tests 2; application kernels 5)",
    "--list-pairs": "N: print the pairs and rounds a random test (random-pairs, random-ring, random-msg) would run "
                    "on N ranks, and exit without MPI (what 'fabscope simulate --seed S' models)",
    "--window": "W: messages in flight per window of bw, bibw, mbw (default 64)",
    "--seed": "N: seed of random-pairs, random-ring, random-msg (default 1): the same seed, the same pairs",
    "--rounds": "N: random-pairs: rounds of new random pairs (default 1)",
    "--offset": "K: leaf-offset: pair leaf i with leaf i XOR K (default 1)",
    "--leaf-size": "L: leaf-offset, leaf-pairs: nodes per leaf, without --topo (default 16)",
    "--hops": "N: hops: partner distance in router hops (default 1)",
    "--dims": "AxBxC: hops: the torus or mesh the ranks sit on, one rank per router; halo2d PXxPY, "
              "halo3d PXxPYxPZ, fft-transpose PRxPC: the grid of the ranks (default: MPI_Dims_create)",
    "--periodic": "yes|no: halo2d, halo3d: wrap-around neighbours at the grid's edges (default yes)",
    "--compute": "SECONDS: application kernels: busy work per iteration before its communication (default 0)",
    "--mesh": "with hops: --dims is a mesh (no wrap-around links)",
    "--topo": "FILE: leaf of every host (written by 'fabscope measure --fabric'), for the leaf tests",
    "--per-rank": "write every rank's figure, not only the statistics",
    "--validate": "check every received byte (slower; for debugging a fabric)",
    "--out": "FILE: JSON-lines output (fabscope measure sets it: --out of measure)",
    "--append": "append to --out instead of replacing it",
    "--progress": "rank 0 prints one line per finished measurement on standard error",
    "--yield": "auto|on|off: wait by spinning or by yielding the CPU (default auto: spin unless oversubscribed)",
    "--stream-n": "N: stream: array length per rank (default 4194304)",
    "--check-args": "parse the options and stop, without MPI (fabscope measure runs this first)",
}


@dataclass(frozen=True)
class BenchTest:
    name: str
    in_suite: bool
    what: str


def _read(name: str) -> str:
    return (source_dir() / name).read_text(encoding="utf-8")


def bench_tests() -> list[BenchTest]:
    """fabscope-bench's tests, in its order, from ``TESTS[]`` of csrc/main.c."""
    rows = re.findall(r'\{"([\w-]+)",\s*fb_\w+,\s*([01]),\s*"([^"]*)"\}', _read("main.c"))
    return [BenchTest(n, s == "1", re.sub(r"\((\d{3})\)$", r"(seed \1)", w)) for n, s, w in rows]


def bench_options() -> list[str]:
    """The options fb_parse_options (csrc/util.c) reads, in its order."""
    text = _read("util.c")
    body = text[text.index("int fb_parse_options"):]
    body = body[:body.index("\n}\n")]
    opts = re.findall(r'(?:SIZEOPT|LONGOPT|STROPT|FLAG)\("(--[\w-]+)"|strcmp\(a, "(--[\w-]+)"\)', body)
    return [a or b for a, b in opts if (a or b) != "--help"]


def tests_help() -> str:
    """The test list of ``fabscope measure --help``."""
    lines = ["tests of fabscope-bench (comma-separate several; 'suite' = those marked *):"]
    lines += [f"  {t.name:<15}{'*' if t.in_suite else ' '} {t.what}" for t in bench_tests()]
    return "\n".join(lines)


def options_help() -> str:
    """The option list of fabscope-bench (after TEST on the measure command line)."""
    lines = ["options of fabscope-bench (after TEST; sizes: 8, 64KiB, 1MiB binary, 4M, 1MB decimal):"]
    for opt in bench_options():
        m = re.match(r"(\S+): (.*)$", OPTION_HELP.get(opt, ""))
        arg, text = (m.group(1), m.group(2)) if m else ("", OPTION_HELP.get(opt, ""))
        lines.append(f"  {(opt + ' ' + arg).strip():<22} {text}")
    return "\n".join(lines)


def help_of_test(name: str) -> str:
    """``fabscope measure NAME --help``: what the test measures, and the program's options."""
    from fabscope.errors import MeasureError

    tests = {t.name: t for t in bench_tests()}
    parts = [n.strip() for n in name.split(",") if n.strip()]
    unknown = [n for n in parts if n != "suite" and n not in tests]
    if unknown:
        raise MeasureError(f"unknown test {unknown[0]!r}; choose from suite, {', '.join(tests)}")
    lines = []
    for n in parts:
        if n == "suite":
            lines.append("fabscope-bench suite: " + ", ".join(t.name for t in tests.values() if t.in_suite))
        else:
            t = tests[n]
            lines.append(f"fabscope-bench {t.name}: {t.what}" + ("; in the default suite" if t.in_suite else ""))
    return "\n".join(lines + ["", options_help()])
