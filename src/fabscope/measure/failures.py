"""What a launcher's error output says about a rank that died.

Hydra (MPICH, MVAPICH, Intel MPI) names the pid and host of the process that
ended badly, and the signal in its exit string; Open MPI's ``mpirun`` names
the rank, pid, node and signal.  fabscope-bench writes every rank's pid in
its ``ranks`` line, so a pid gives the rank.

>>> hydra = ["=   PID 4711 RUNNING AT vm", "=   EXIT CODE: 9",
...          "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"]
>>> dead_rank(hydra, {"pid": [4710, 4711], "host": ["vm", "vm"]})
'rank 1 on host vm was killed by signal SIGKILL'
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


def dead_rank(stderr_lines: Sequence[str], ranks: Mapping[str, Any]) -> str | None:
    """One phrase naming the rank, its host and how it ended; None if the launcher said nothing we read."""
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
    who = f"rank {pids.index(pid)}" if pid in pids else f"a rank (pid {pid}, not in the ranks line)"
    hosts = list(ranks.get("host") or [])
    if pid in pids and len(hosts) > pids.index(pid):
        host = hosts[pids.index(pid)]
    sig = _SIGNAL_TEXT.search(text)
    code = _HYDRA_CODE.search(text)
    if sig:
        how = f"was killed by signal {signal_name(int(sig[1]))}"
    elif code and int(code[1]) > 128:
        how = f"was killed by signal {signal_name(int(code[1]) - 128)}"
    else:
        how = f"exited with status {code[1] if code else 'unknown'}"
    return f"{who} on host {host} {how}"
