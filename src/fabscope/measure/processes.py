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
import select
import signal
import subprocess
import threading
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


#: seconds after the first rank is seen gone within which others seen gone make the first ambiguous
SETTLE = 0.05


class ExitOrder:
    """Which of a job's local ranks ended first, seen by the kernel (``pidfd_open``, Linux 5.3+).

    A launcher's own report cannot be trusted for this: Hydra stops the other
    ranks with SIGKILL within milliseconds and then names the first rank *by
    index* whose status is bad, often one it stopped itself.  A thread blocks
    in ``poll`` on a pidfd per rank; the ranks whose pidfds are ready when it
    first wakes, or within :data:`SETTLE` seconds after, are :attr:`first`.  One rank there: it ended before the others.
    Several: the watcher cannot tell (the caller then names no rank).

    >>> import subprocess, sys
    >>> ps = [subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({t})"]) for t in (0.2, 30)]
    >>> w = ExitOrder()
    >>> w.watch([p.pid for p in ps])
    True
    >>> ps[0].wait(); w.wait(5) == [ps[0].pid]
    0
    True
    >>> ps[1].kill(); ps[1].wait() != 0
    True
    """

    def __init__(self) -> None:
        self.first: list[int] | None = None
        self._done = threading.Event()

    def watch(self, pids: list[int], comm: str | None = None) -> bool:
        """Start watching ``pids`` (of this host; each checked to be named ``comm`` if given).
        False if nothing can be watched (no pidfd support, a pid not a rank)."""
        fds: dict[int, int] = {}
        gone = []
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                gone.append(pid)
                continue
            except (OSError, AttributeError):
                break
            fds[fd] = pid
            if comm is not None and _comm(pid) != comm:
                break
        else:
            if gone or not fds:
                for fd in fds:
                    os.close(fd)
                self.first = gone or None
                self._done.set()
                return bool(gone)
            threading.Thread(target=self._wait, args=(fds,), daemon=True).start()
            return True
        for fd in fds:
            os.close(fd)
        return False

    def _wait(self, fds: dict[int, int]) -> None:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        try:
            ready = poller.poll()
            # a rank the launcher stopped can be seen gone a few milliseconds before the one that failed (a
            # process ends once all its threads have been scheduled to exit; seen on an idle machine): the
            # ranks gone within SETTLE of the first count as first together, and then no rank is named
            time.sleep(SETTLE)
            ready += poller.poll(0)
            self.first = sorted({fds[fd] for fd, _ in ready})
        finally:
            for fd in fds:
                os.close(fd)
            self._done.set()

    def wait(self, timeout: float) -> list[int] | None:
        """:attr:`first` once a watched rank has ended (None if none did within ``timeout`` s)."""
        self._done.wait(timeout)
        return self.first


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return None
