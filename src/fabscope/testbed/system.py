"""Running ``ip``, ``tc`` and friends, and finding what exists.

Every call has a timeout and turns a failure into one :class:`TestbedError`
line naming the command and what it said.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from typing import Sequence

from fabscope.testbed.names import NETNS_PREFIX, TestbedError

TOOLS = {"ip": "iproute2", "tc": "iproute2", "nsenter": "util-linux", "unshare": "util-linux"}
_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/bin"])


def which(tool: str) -> str | None:
    return shutil.which(tool, path=_PATH)


def run(argv: Sequence[str], input: str | None = None, timeout: float = 120, check: bool = True,
        env: dict[str, str] | None = None) -> str:
    """Run one command (in ``env``, default this process's); its stdout, or TestbedError with its last error line."""
    exe = which(argv[0]) or argv[0]
    try:
        p = subprocess.run([exe, *argv[1:]], input=input, capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"{' '.join(argv[:4])} ... did not finish within {timeout:g} s") from None
    except OSError as err:
        raise TestbedError(f"cannot run {argv[0]}: {err.strerror}") from None
    if check and p.returncode != 0:
        lines = [ln.strip() for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
        raise TestbedError(f"{' '.join(argv[:6])}{' ...' if len(argv) > 6 else ''} failed: "
                           f"{lines[-1] if lines else f'exit {p.returncode}'}")
    return p.stdout


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why testbeds cannot be made here (None: they can): missing tools, not root, no netns rights."""
    missing = [t for t in TOOLS if which(t) is None]
    if missing:
        pk = sorted({TOOLS[t] for t in missing})
        return f"{', '.join(missing)} not found (Debian: apt-get install {' '.join(pk)})"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "testbeds need root (network namespaces, veth cables and tc shapers): run with sudo"
    probe = f"{NETNS_PREFIX}-probe-{os.getpid()}"
    try:
        run(["ip", "netns", "add", probe], timeout=20)
    except TestbedError as err:
        return f"cannot create a network namespace here ({err}); a container needs CAP_SYS_ADMIN and CAP_NET_ADMIN"
    try:
        run(["ip", "-n", probe, "link", "add", "fbprobe0", "type", "veth", "peer", "name", "fbprobe1"], timeout=20)
        run(["tc", "-n", probe, "qdisc", "add", "dev", "fbprobe0", "root", "tbf", "rate", "1mbit",
             "burst", "32kb", "latency", "50ms"], timeout=20)
    except TestbedError as err:
        return f"veth cables or tc shapers do not work here: {err}"
    finally:
        run(["ip", "netns", "del", probe], timeout=20, check=False)
    return None


def require() -> None:
    """Raise TestbedError with the reason if testbeds cannot be made here."""
    why = unavailable_reason()
    if why:
        raise TestbedError(why)


def list_netns() -> list[str]:
    """Names of the network namespaces ``ip netns`` knows."""
    out = run(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def list_links() -> list[str]:
    """Interfaces of the root namespace."""
    out = run(["ip", "-o", "link", "show"], check=False)
    found = []
    for ln in out.splitlines():
        m = re.match(r"^\d+:\s+([^:@\s]+)", ln)
        if m:
            found.append(m.group(1))
    return found


def used_ipv4() -> str:
    return run(["ip", "-4", "-o", "addr", "show"], check=False)


@functools.lru_cache(maxsize=1)
def have_netem() -> bool:
    """Whether this kernel has the netem qdisc (link delays); some minimal kernels lack it."""
    probe = f"{NETNS_PREFIX}-netem-{os.getpid()}"
    try:
        run(["ip", "netns", "add", probe], timeout=20)
        run(["ip", "-n", probe, "link", "add", "fbprobe0", "type", "veth", "peer", "name", "fbprobe1"], timeout=20)
        run(["tc", "-n", probe, "qdisc", "add", "dev", "fbprobe0", "root", "netem", "delay", "10us"], timeout=20)
        return True
    except TestbedError:
        return False
    finally:
        run(["ip", "netns", "del", probe], timeout=20, check=False)


@functools.lru_cache(maxsize=1)
def fair_share_missing() -> str | None:
    """Why this kernel cannot share an emulated link fairly among its sources (None when it can): the
    construction of :func:`fabscope.testbed.commands.shaper` (an htb under the tbf, a class and a
    bfifo per source, u32 filters on the source address) tried on a probe namespace's veth.  The
    kernels this was written on have no fair-queueing qdisc (sfq, fq, fq_codel, drr, qfq, cake ...),
    hence htb."""
    probe = f"{NETNS_PREFIX}-fair-{os.getpid()}"
    lines = ["qdisc add dev fbprobe0 root handle 1: tbf rate 1mbit burst 20000 limit 100000",
             "qdisc add dev fbprobe0 parent 1:1 handle 2: htb default 1",
             "class add dev fbprobe0 parent 2: classid 2:1 htb rate 10mbit quantum 9014",
             "qdisc add dev fbprobe0 parent 2:1 bfifo limit 100000",
             "filter add dev fbprobe0 parent 2: protocol ip prio 1 u32 match ip src 10.0.0.1/32 flowid 2:1"]
    try:
        run(["ip", "netns", "add", probe], timeout=20)
        run(["ip", "-n", probe, "link", "add", "fbprobe0", "type", "veth", "peer", "name", "fbprobe1"], timeout=20)
        for ln in lines:
            run(["tc", "-n", probe, *ln.split()], timeout=20)
        return None
    except TestbedError as err:
        return str(err)
    finally:
        run(["ip", "netns", "del", probe], timeout=20, check=False)


def processes_naming(mark: str, whole: bool = False) -> list[int]:
    """Pids of this machine's processes (every namespace's: /proc shows them all), this one apart, with
    ``mark`` in their command line: as one whole argument (``whole``), else inside any argument.

    >>> os.getpid() in processes_naming("python")
    False
    """
    want = mark.encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if want in argv if whole else any(want in a for a in argv):
            out.append(int(name))
    return out
