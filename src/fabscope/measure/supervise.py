"""A small supervisor between fabscope and the launcher: no job outlives fabscope.

``fabscope measure`` starts ``python -m fabscope.measure.supervise FD -- LAUNCHER...``
in a session of its own.  The supervisor

* makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): the
  proxies and ranks Hydra puts in sessions of their own, once orphaned, become
  its children instead of init's, so it can always find and end them;
* starts the launcher with the parent-death signal set to SIGKILL
  (``PR_SET_PDEATHSIG``): should the supervisor itself be killed, the
  launcher goes with it;
* holds the read end of a pipe whose only write end is fabscope's: when
  fabscope dies, however (SIGKILL included), the pipe reads end-of-file and
  the supervisor ends every process below it: SIGTERM, then SIGKILL after
  :data:`GRACE` seconds; if fabscope is gone before the launcher starts (a
  Ctrl-C while fabscope started the supervisor), it starts none;
* does the same on SIGTERM, SIGHUP or SIGINT, and when the launcher exits
  (what a launcher leaves running goes too), then exits with the launcher's
  status (128 + N for a signal N), so fabscope reads it as the launcher's.

Linux only (``prctl``); elsewhere it still runs the launcher and ends its
process tree on fabscope's death, as far as the tree can be seen.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

#: seconds between SIGTERM and SIGKILL when the supervisor ends the job (within the 5 s promised)
GRACE = 1.5
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _die_with_parent() -> None:  # runs in the launcher, between fork and exec
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _processes() -> Iterator[tuple[int, str, int]]:
    """(pid, state, parent pid) of every process, read from /proc (one that ends meanwhile is skipped).

    >>> me = next(p for p in _processes() if p[0] == os.getpid())
    >>> me[1] in "RS" and me[2] == os.getppid()
    True
    """
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                text = fh.read().decode(errors="replace")
        except OSError:
            continue
        rest = text[text.rindex(")") + 2:].split()    # after the command name, which may hold ") "
        yield int(name), rest[0], int(rest[1])


def _below(root: int) -> list[int]:
    """Every live process below ``root`` (its children, theirs, ...), read from /proc."""
    kids: dict[int, list[int]] = {}
    for pid, state, ppid in _processes():
        if state != "Z":
            kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for pid in kids.get(todo.pop(), ()):
            out.append(pid)
            todo.append(pid)
    return out


def _reap(keep: int = 0) -> None:
    """Collect the children that have ended (orphans re-parented here included), all but ``keep``
    (the launcher, whose status :class:`subprocess.Popen` reads)."""
    me = os.getpid()
    for pid, state, ppid in _processes():
        if state == "Z" and ppid == me and pid != keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def end_tree(grace: float = GRACE) -> None:
    """SIGTERM everything below this process, SIGKILL what is left after ``grace`` seconds."""
    me = os.getpid()
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid in _below(me):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap()
            if not _below(me):
                return
            time.sleep(0.05)


class _Stop(Exception):
    pass


def _on_signal(num: int, frame: object) -> None:
    raise _Stop(num)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m fabscope.measure.supervise FD -- LAUNCHER [ARGS...]", file=sys.stderr)
        return 2
    fd, cmd = int(args[0]), args[2:]
    if "FABSCOPE_JOB_PYTHONPATH" in os.environ:   # the job's own module path, not the one that found this module
        path = os.environ.pop("FABSCOPE_JOB_PYTHONPATH")
        if path:
            os.environ["PYTHONPATH"] = path
        else:
            os.environ.pop("PYTHONPATH", None)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    status = 0
    try:
        ready, _, _ = select.select([fd], [], [], 0)
        if ready and not os.read(fd, 4096):      # fabscope was gone before the job started: start none
            return 128 + signal.SIGKILL
        try:
            launcher = subprocess.Popen(cmd, preexec_fn=_die_with_parent, stdin=subprocess.DEVNULL)
        except OSError as err:
            print(f"fabscope: cannot start {cmd[0]}: {err.strerror}", file=sys.stderr)
            return 127
        while True:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready and not os.read(fd, 4096):      # end of file: fabscope is gone
                status = 128 + signal.SIGKILL
                break
            code = launcher.poll()
            if code is not None:
                status = code if code >= 0 else 128 - code
                break
            _reap(keep=launcher.pid)
    except _Stop as stop:
        status = 128 + int(stop.args[0])
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)     # ending the job is not cut short by a second signal
        end_tree()
        _reap()
    return status


if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main())
