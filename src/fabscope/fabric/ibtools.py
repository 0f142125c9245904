"""Run ibsim, OpenSM and the InfiniBand diagnostics, with timeouts and cleanup.

:class:`IbSim` brings a fabric up in ``ibsim`` (Debian ``ibsim-utils``) in a
scratch folder, with a socket name of its own so that fabrics run side by
side, and always stops it on leaving the ``with`` block, even on error.
Clients (``opensm``, ``ibnetdiscover``, ``dump_fts``, ``ibtracert``) run
through the ``umad2sim`` preload library, each under a timeout (a client
with no simulator behind it retries for ever), from the scratch folder
(each leaves a fake ``sys-<pid>`` folder behind)::

    with IbSim("fabric.net") as sim:
        dump = sim.opensm("ftree")                 # opensm -o: route once and exit
        topo = sim.run(["ibnetdiscover"]).stdout
        sim.unlink("L12", 17)                      # cut a cable in the running fabric

:func:`run_diag` runs the same tools against a real fabric (no preload).

>>> missing_tools(["sh"])
[]
>>> missing_tools(["no-such-tool-xyz"])
['no-such-tool-xyz']
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import IO, Sequence

from fabscope.errors import FabricError

#: Debian packages that provide each tool
PACKAGES = {"ibsim": "ibsim-utils", "opensm": "opensm", "ibnetdiscover": "infiniband-diags",
            "dump_fts": "infiniband-diags", "ibroute": "infiniband-diags", "ibtracert": "infiniband-diags"}
SIM_TOOLS = ("ibsim", "opensm", "ibnetdiscover", "dump_fts", "ibtracert")


#: searched after PATH: Debian puts the diagnostics and opensm in /usr/sbin
EXTRA_PATH = ("/usr/sbin", "/sbin")


def _path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), *EXTRA_PATH])


def missing_tools(tools: Sequence[str] = SIM_TOOLS) -> list[str]:
    """The tools of ``tools`` on neither PATH nor :data:`EXTRA_PATH`."""
    path = _path()
    return [t for t in tools if shutil.which(t, path=path) is None]


def preload_library() -> str | None:
    """Path of ibsim's ``libumad2sim.so``, or None."""
    hits = sorted(glob.glob("/usr/lib/*/umad2sim/libumad2sim.so") + glob.glob("/usr/lib*/umad2sim/libumad2sim.so")
                  + glob.glob("/usr/local/lib*/umad2sim/libumad2sim.so"))
    return hits[0] if hits else None


def have_ibsim() -> bool:
    return not missing_tools() and preload_library() is not None


def _need(tools: Sequence[str]) -> None:
    miss = missing_tools(tools)
    if miss:
        pk = sorted({PACKAGES.get(t, t) for t in miss})
        raise FabricError(f"{', '.join(miss)} not found: install the InfiniBand tools "
                          f"(Debian/Ubuntu: apt-get install {' '.join(pk)})")


def run_diag(args: Sequence[str], timeout: float = 60, env: dict[str, str] | None = None,
             cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one diagnostic under a timeout; FabricError naming the tool if it fails or hangs."""
    _need([args[0]])
    full = {**os.environ, "PATH": _path(), **(env or {})}
    p = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full,
                         cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        p.communicate()
        raise FabricError(f"{' '.join(args)} did not answer within {timeout:g} s: no fabric or no subnet "
                          "manager answering (is ibsim/opensm running, is the HCA port up?)") from None
    if p.returncode != 0:
        last = [ln for ln in (err or out).strip().splitlines() if ln.strip()]
        if any("can't open MAD port" in ln or "can't open UMAD port" in ln for ln in last):
            raise FabricError(f"{args[0]}: no InfiniBand port to talk through (can't open MAD port): no HCA "
                              "on this host, its driver or ib_umad not loaded, or the port is down")
        raise FabricError(f"{' '.join(args)} failed (exit {p.returncode}): "
                          f"{last[-1] if last else 'no message'}")
    return subprocess.CompletedProcess(list(args), p.returncode, out, err)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        p.kill()


class IbSim:
    """A fabric running in ibsim for the duration of a ``with`` block (see the module docstring)."""

    def __init__(self, netfile: str | os.PathLike[str], workdir: str | None = None, ready_timeout: float = 60,
                 limits: tuple[int, int, int] = (8192, 1024, 65536)) -> None:
        self.netfile = os.path.abspath(netfile)
        self.workdir = workdir
        self.ready_timeout = ready_timeout
        self.limits = limits
        self.sock = f"fabscope-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.proc: subprocess.Popen | None = None
        self._own_dir = False
        self._log: IO | None = None
        self._runs = 0

    # ---- lifetime --------------------------------------------------------
    def __enter__(self) -> "IbSim":
        _need(SIM_TOOLS)
        self.preload = preload_library()
        if self.preload is None:
            raise FabricError("libumad2sim.so not found: install ibsim-utils")
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="fabscope-ibsim-")
            self._own_dir = True
        os.makedirs(self.workdir, exist_ok=True)
        self.log_path = os.path.join(self.workdir, "ibsim.log")
        self._log = open(self.log_path, "w")
        n, s, p = self.limits
        env = {**os.environ, "IBSIM_SOCKNAME": self.sock}
        try:
            # stdin stays an open pipe: the console (for Unlink) never sees end of file
            self.proc = subprocess.Popen(["ibsim", "-s", "-N", str(n), "-S", str(s), "-P", str(p), self.netfile],
                                         stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
                                         cwd=self.workdir, env=env, text=True, start_new_session=True)
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            text = Path(self.log_path).read_text(errors="replace")
            if "Network simulator ready" in text:
                return
            if self.proc.poll() is not None:
                bad = [ln for ln in text.splitlines() if "panic" in ln or "err" in ln.lower()]
                raise FabricError(f"ibsim stopped while reading {self.netfile}: "
                                  f"{(bad or text.splitlines() or ['no output'])[-1].strip()}")
            time.sleep(0.05)
        raise FabricError(f"ibsim did not get ready within {self.ready_timeout:g} s ({self.netfile})")

    def close(self) -> None:
        """Stop ibsim (its whole process group) and remove the scratch folder if it is ours."""
        p, self.proc = self.proc, None
        if p is not None:
            try:
                if p.stdin:
                    p.stdin.close()
            except OSError:
                pass
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=3)
                except (ProcessLookupError, PermissionError):
                    pass
                except subprocess.TimeoutExpired:
                    _kill_group(p)
                    p.wait(timeout=3)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_dir and self.workdir and os.environ.get("FABSCOPE_KEEP_IBSIM") is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- clients -------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        return {"LD_PRELOAD": self.preload or "", "IBSIM_SOCKNAME": self.sock}

    def run(self, args: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a diagnostic against the simulated fabric."""
        if self.proc is None or self.proc.poll() is not None:
            raise FabricError("ibsim is not running")
        cwd = os.path.join(str(self.workdir), "clients")
        os.makedirs(cwd, exist_ok=True)
        return run_diag(args, timeout=timeout, env=self.env, cwd=cwd)

    def opensm(self, engine: str = "minhop", extra: Sequence[str] = (), timeout: float = 240) -> str:
        """Route the fabric once with OpenSM's ``engine``; return the path of its ``opensm-lfts.dump``.

        Raises FabricError if OpenSM fails, hangs, or silently falls back to another engine.
        """
        self._runs += 1
        out = os.path.join(str(self.workdir), f"opensm-{self._runs}-{engine.split(',')[0]}")
        os.makedirs(out, exist_ok=True)
        log = os.path.join(out, "opensm.log")
        env = {"OSM_CACHE_DIR": out, "OSM_TMP_DIR": out}
        try:
            run_diag(["opensm", "-o", "-R", engine, *extra, "-D", "0x43", "--dump_files_dir", out,
                      "-f", log, "-s", "0"], timeout=timeout, env={**self.env, **env}, cwd=out)
        except FabricError as err:
            raise FabricError(f"opensm -R {engine}: {err}") from None
        text = Path(log).read_text(errors="replace") if os.path.exists(log) else ""
        want = engine.split(",")[0]
        done = [ln for ln in text.splitlines() if "tables configured" in ln]
        if not any(f"{want} tables configured" in ln for ln in done):
            got = done[-1].split(":")[-1].strip() if done else "no tables configured"
            raise FabricError(f"opensm -R {engine} did not route with {want} ({got}); see {log}")
        dump = os.path.join(out, "opensm-lfts.dump")
        if not os.path.exists(dump):
            raise FabricError(f"opensm -R {engine} wrote no opensm-lfts.dump in {out}")
        return dump

    def console(self, command: str) -> None:
        """Send one command to ibsim's console (``Unlink "L0"[6]``, ``Clear ...``)."""
        if self.proc is None or self.proc.stdin is None:
            raise FabricError("ibsim is not running")
        self.proc.stdin.write(command.rstrip("\n") + "\n")
        self.proc.stdin.flush()
        time.sleep(0.2)

    def unlink(self, node: str, port: int) -> None:
        """Cut the cable at ``node``'s ``port``."""
        self.console(f'Unlink "{node}"[{port}]')


def discover(timeout: float = 60, hostmap: str | None = None, save_dir: str | None = None,
             tables: bool = True, name: str = "discovered", env: dict[str, str] | None = None,
             cwd: str | None = None):
    """Discover the fabric this host sees: ``ibnetdiscover``, then ``dump_fts`` for the tables.

    Raises FabricError saying what failed: tools missing, nothing answering,
    no subnet manager (every LID 0), a host port down (its LID 0).
    ``save_dir`` keeps the raw outputs (``ibnetdiscover.txt``, ``dump_fts.txt``).
    """
    from fabscope.atomic import atomic_open
    from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts, read_hostmap

    _need(["ibnetdiscover"] + (["dump_fts"] if tables else []))
    outputs = {"ibnetdiscover.txt": run_diag(["ibnetdiscover"], timeout, env, cwd).stdout}
    topo = parse_ibnetdiscover(outputs["ibnetdiscover.txt"], "ibnetdiscover")
    check_lids(topo)
    lft = None
    if tables:
        outputs["dump_fts.txt"] = run_diag(["dump_fts"], timeout, env, cwd).stdout
        lft = parse_lfts(outputs["dump_fts.txt"], "dump_fts")
    if save_dir:
        os.makedirs(save_dir, exist_ok=True)
        for fn, text in outputs.items():
            with atomic_open(os.path.join(save_dir, fn)) as fh:
                fh.write(text)
    f = build_fabric(topo, lft, read_hostmap(hostmap) if hostmap else None, name=name)
    warning = dump_fts_warning(f) if tables else None
    return f.with_params(warning=warning) if warning else f


def dump_fts_warning(fabric) -> str | None:
    """What tables read from ``dump_fts`` miss on ``fabric``: it leaves out every entry whose output
    port is 128 or more, so a switch with a cable there has routes missing.  None if no switch has.

    >>> from fabscope.fabric.generators import xgft
    >>> dump_fts_warning(xgft((4, 2), (1, 1))) is None
    True
    >>> dump_fts_warning(xgft((130, 2), (1, 1)))
    "dump_fts omits ports >= 128 ('s1-0000' has a cable on port 131); use opensm-lfts.dump or ibroute"
    """
    big = (fabric.link_src >= fabric.n_hosts) & (fabric.link_src_port >= 128)
    if not big.any():
        return None
    first = int(fabric.link_src[big].min())
    port = int(fabric.link_src_port[big & (fabric.link_src == first)].max())
    return (f"dump_fts omits ports >= 128 ({fabric.node_names[first]!r} has a cable on port {port}); "
            "use opensm-lfts.dump or ibroute")


def check_lids(topo) -> None:
    """FabricError if no subnet manager has configured the fabric, or a host port is down."""
    nodes = list(topo.nodes.values())
    if nodes and all(n.lid == 0 for n in nodes):
        raise FabricError("no subnet manager has configured the fabric: every port has LID 0 (start opensm)")
    down = [n for n in nodes if n.kind == "CA" and (n.lid == 0 or 0 in n.port_lid.values())]
    if down:
        raise FabricError(f"port down or not configured: CA {down[0].desc!r} has LID 0 "
                          f"({topo.where(down[0].line)}){f' and {len(down) - 1} more' if len(down) > 1 else ''}")


def parse_ibtracert(text: str) -> list[tuple[str, int]]:
    """The hops of an ``ibtracert`` path: (node description, output port) for each node left.

    >>> parse_ibtracert('From ca {0x02} portnum 1 lid 5-5 "H-0-1"\\n'
    ...                 '[1] -> switch port {0x0000000000200000}[2] lid 2-2 "L0"\\n'
    ...                 '[7] -> ca port {0x1d}[1] lid 21-21 "H-3-2"\\nTo ca {0x1c} portnum 1 lid 21-21 "H-3-2"')
    [('H-0-1', 1), ('L0', 7)]
    """
    import re

    hops: list[tuple[str, int]] = []
    prev = None
    for line in text.splitlines():
        m = re.match(r'^From \w+ .*"(.*)"\s*$', line)
        if m:
            prev = m.group(1)
            continue
        m = re.match(r'^\[(\d+)\] -> .*"(.*)"\s*$', line)
        if m:
            if prev is None:
                raise FabricError(f"ibtracert output has a hop before its 'From' line: {line[:60]!r}")
            hops.append((prev, int(m.group(1))))
            prev = m.group(2)
    if not hops:
        raise FabricError("ibtracert printed no path")
    return hops
