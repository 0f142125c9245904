"""The whole suite in two pytest sessions at once: the testbed's tests beside all the others.

``make test`` runs this.  The testbed's tests (tests/testbed) spend their time waiting on emulated links of
a few Mbit/s: a third of the suite's wall time with the CPU mostly idle.  The other tests are CPU-bound.
Run one after the other they take about 15 minutes on a 2-core machine; side by side the suite takes about
the time of the longer lane.  The fuzz tests (tests/fuzz, about 90 s) run after the testbed's in its lane,
so that the two lanes take about the same time (the testbed lane was about 190 s shorter without them).  The testbed's tests already check that what they measure is link-bound and
adapt when the machine is busy (they pass with a CPU-bound loop beside them), so the other lane is one
more load they were written for.

Each lane has its own ``--basetemp`` (two sessions sharing pytest's default folder remove each other's
files).  The testbed lane's output is kept in a file and printed after the other lane's, so the two logs
do not interleave.  The exit status is the first lane's that failed.  Ctrl-C or SIGTERM stops both lanes,
each in its own process group, before returning.

Options are passed to both lanes (``python tests/lanes.py -x``); to run some files, call pytest itself.  ``FABSCOPE_TEST_LANES=1`` runs one
session of the whole suite, as before.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

TESTBED = "tests/testbed"
#: the folders of the lane beside the CPU-bound one: the testbed's, then the fuzz tests to even the lanes out
SIDE = (TESTBED, "tests/fuzz")
#: pytest as ``make test`` ran it before (the venv's script: ``python -m pytest`` would put the working
#: folder on ``sys.path``)
_SCRIPT = Path(sys.executable).with_name("pytest")
PYTEST = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "pytest"]


def lane_commands(args: list[str], base: Path) -> list[tuple[str, list[str]]]:
    """The two sessions: ``(name, argv)``; the testbed lane first (it is started in the background).

    >>> [(n, a[len(PYTEST):]) for n, a in lane_commands(["-x"], Path("/t"))]
    [('testbed', ['tests/testbed', 'tests/fuzz', '--basetemp=/t/testbed', '-x']), ('rest', ['--ignore=tests/testbed', '--ignore=tests/fuzz', '--basetemp=/t/rest', '-x'])]
    """
    pytest = PYTEST
    return [("testbed", [*pytest, *SIDE, f"--basetemp={base / 'testbed'}", *args]),
            ("rest", [*pytest, *(f"--ignore={d}" for d in SIDE), f"--basetemp={base / 'rest'}", *args])]


def main(args: list[str]) -> int:
    if os.environ.get("FABSCOPE_TEST_LANES") == "1":
        return subprocess.call([*PYTEST, *args])
    base = Path(tempfile.mkdtemp(prefix="fabscope-tests-"))
    log = base / "testbed.log"
    procs: list[subprocess.Popen] = []

    def stop(signum, frame):  # noqa: ARG001 - signal handler signature
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        print(f"stopped; the testbed lane's log: {log}", file=sys.stderr)
        sys.exit(130 if signum == signal.SIGINT else 143)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    (tb_name, tb_argv), (rest_name, rest_argv) = lane_commands(args, base)
    with open(log, "wb") as out:
        procs.append(subprocess.Popen(tb_argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
    print(f"== lane '{tb_name}' ({' '.join(SIDE)}) runs beside this one; its log follows ==", flush=True)
    procs.append(subprocess.Popen(rest_argv, start_new_session=True))
    rest_rc = procs[1].wait()
    tb_rc = procs[0].wait()
    print(f"\n== lane '{tb_name}' ({' '.join(SIDE)}) ==", flush=True)
    with open(log, "rb") as fh:
        shutil.copyfileobj(fh, sys.stdout.buffer)
    sys.stdout.flush()
    # pytest's 5 is "no tests collected": a lane given -k or a path that selects none of its tests is fine
    rcs = {rest_name: 0 if rest_rc == 5 else rest_rc, tb_name: 0 if tb_rc == 5 else tb_rc}
    print(f"== lanes: {', '.join(f'{n} exit {rc}' for n, rc in rcs.items())} ==", flush=True)
    failed = [rc for rc in rcs.values() if rc != 0]
    if not failed:
        shutil.rmtree(base, ignore_errors=True)
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
