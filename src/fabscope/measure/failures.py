"""What a launcher's error output says about a rank that died.

Hydra (MPICH, MVAPICH, Intel MPI) names a pid and host and the signal in
its exit string, but the pid is not always the rank that failed: it stops the
others with SIGKILL at once and then reports the first rank *by index* with a
bad status.  So the rank is named only when the kernel saw it end first
(``first_gone``, from :class:`fabscope.measure.processes.ExitOrder`); else
the message names the host only.  Open MPI's ``mpirun`` names the rank, pid,
node and signal itself.  fabscope-bench writes every rank's pid in its
``ranks`` line, so a pid gives the rank.

>>> hydra = ["=   PID 4711 RUNNING AT vm", "=   EXIT CODE: 9",
...          "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"]
>>> dead_rank(hydra, {"pid": [4710, 4711, 4712], "host": ["vm", "vm", "vm"]}, first_gone=[4712])
'rank 2 on host vm was killed by signal SIGKILL'
>>> dead_rank(hydra, {"pid": [4710, 4711, 4712], "host": ["vm", "vm", "vm"]}, first_gone=[4711, 4712])
'a rank on host vm was killed by signal SIGKILL'
>>> dead_rank(hydra, {"pid": [4710, 4711], "host": ["vm", "vm"]})
'a rank on host vm was killed by signal SIGKILL (the launcher reports rank 1, which may be one it stopped)'
>>> ompi = ["mpirun noticed that process rank 3 with PID 0 on node n7 exited on signal 11 (Segmentation fault)."]
>>> dead_rank(ompi, {})
'rank 3 on host n7 was killed by signal SIGSEGV'
>>> dead_rank(["=   PID 99 RUNNING AT n2", "=   EXIT CODE: 3"], {"pid": [5, 6]})
'a rank (pid 99, not in the ranks line) on host n2 exited with status 3'
>>> dead_rank(["something else"], {}) is None
True
"""

from __future__ import annotations

import re
import signal
from typing import Any, Mapping, Sequence

_HYDRA_PID = re.compile(r"PID\s+(\d+)\s+RUNNING AT\s+(\S+)")
_HYDRA_CODE = re.compile(r"EXIT CODE:\s*(\d+)")
_SIGNAL_TEXT = re.compile(r"\(signal\s+(\d+)\)")
_OMPI = re.compile(r"process rank\s+(\d+)\s+with PID\s+(\d+)\s+on node\s+(\S+)\s+exited on signal\s+(\d+)")


def signal_name(num: int) -> str:
    """``SIGKILL`` for 9; the number when the system has no name for it.

    >>> signal_name(15), signal_name(200)
    ('SIGTERM', 'signal 200')
    """
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def dead_rank(stderr_lines: Sequence[str], ranks: Mapping[str, Any],
              first_gone: Sequence[int] | None = None) -> str | None:
    """One phrase naming the rank (when sure), its host and how it ended; None if the launcher said nothing we read.

    ``first_gone``: the rank pids the kernel saw end first (None: not watched).
    """
    text = "\n".join(stderr_lines)
    m = _OMPI.search(text)
    if m:
        rank, pid, host, sig = int(m[1]), int(m[2]), m[3], int(m[4])
        return f"rank {rank} on host {host} was killed by signal {signal_name(sig)}"
    m = _HYDRA_PID.search(text)
    if not m:
        return None
    pid, host = int(m[1]), m[2]
    pids = list(ranks.get("pid") or [])
    hosts = list(ranks.get("host") or [])
    note = ""
    if first_gone is not None and len(first_gone) == 1 and first_gone[0] in pids:
        r = pids.index(first_gone[0])   # the kernel saw it end before any other: the rank that failed
        who = f"rank {r}"
        host = hosts[r] if len(hosts) > r else host
    elif pid in pids:
        who = "a rank"
        if first_gone is None:
            note = f" (the launcher reports rank {pids.index(pid)}, which may be one it stopped)"
    else:
        who = f"a rank (pid {pid}, not in the ranks line)"
    sig = _SIGNAL_TEXT.search(text)
    code = _HYDRA_CODE.search(text)
    if sig:
        how = f"was killed by signal {signal_name(int(sig[1]))}"
    elif code and int(code[1]) > 128:
        how = f"was killed by signal {signal_name(int(code[1]) - 128)}"
    else:
        how = f"exited with status {code[1] if code else 'unknown'}"
    return f"{who} on host {host} {how}{note}"
