"""The processes of one MPI job, found and ended together.

A launcher's processes do not stay in its process group: MPICH's Hydra
starts ``hydra_pmi_proxy`` and every rank in a session of its own (``setsid``),
so ``killpg`` of the launcher reaches none of them, and once the launcher is
gone they are children of init.  :class:`JobProcesses` therefore follows the
job's process tree while it runs (every poll adds what it sees, each process
named by pid *and* start time so a reused pid is never signalled) and ends
it by SIGTERM to all of them, then SIGKILL after a grace period.

>>> import subprocess, sys
>>> p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
>>> job = JobProcesses(p)
>>> job.refresh() >= 1
True
>>> job.stop(grace=2.0)
[]
>>> p.returncode is not None
True
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

Key = tuple[int, int]  # (pid, start time in clock ticks since boot)


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of a live process, None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode(errors="replace")
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return int(rest[1]), int(rest[19]), rest[0]


def children_map() -> dict[int, list[int]]:
    """Every live process's children, read once from /proc."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                kids.setdefault(st[0], []).append(int(name))
    return kids


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    kids = children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def alive(key: Key) -> bool:
    """The process still runs (a zombie has finished) and is the one we saw."""
    st = _stat(key[0])
    return st is not None and st[1] == key[1] and st[2] != "Z"


class JobProcesses:
    """Every process a launcher started, as far as it has been seen."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.seen: dict[int, Key] = {}
        self.ended: list[int] = []  # pids in the order they were first seen gone

    def refresh(self) -> int:
        """Add the processes now below the launcher, note those that ended; return how many are known."""
        for pid in descendants(self.proc.pid):
            st = _stat(pid)
            if st is not None and pid not in self.seen:
                self.seen[pid] = (pid, st[1])
        for pid, key in self.seen.items():
            if pid not in self.ended and not alive(key):
                self.ended.append(pid)
        return len(self.seen)

    def running(self) -> list[Key]:
        return [k for k in self.seen.values() if alive(k)]

    def _signal(self, sig: int) -> None:
        for pid, start in self.running():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def stop(self, grace: float = 3.0) -> list[Key]:
        """SIGTERM every process of the job, SIGKILL what is left after ``grace``
        seconds; reap the launcher.  Returns the processes that survived both
        (none, unless something runs as another user).  A second Ctrl-C or
        SIGTERM meanwhile waits until this is done, so it cannot cut it short."""
        held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            return self._stop(grace)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _stop(self, grace: float) -> list[Key]:
        if self.proc.poll() is None:
            self.refresh()
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            self.proc.poll()
            if not self.running():
                break
            time.sleep(0.05)
        self._signal(signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.running() and time.monotonic() < deadline:
            self.proc.poll()
            time.sleep(0.05)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        return self.running()
