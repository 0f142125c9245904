"""A real Slurm over a testbed's hosts: ``fabscope testbed up ... --slurm``.

One ``munged``, one ``slurmctld`` (both in the root namespace) and one
``slurmd`` per emulated host, inside the host's network namespace and a UTS
namespace named after it; the nodes reach the controller over the management
bridge.  Everything (``slurm.conf``, ``cgroup.conf``, ``topology.conf``
exported by :mod:`fabscope.fabric.exporters.slurm` from the testbed's fabric,
spools, logs, pid files, the munge key and socket) lives in one folder,
``$FABSCOPE_TESTBED_DIR/NAME-slurm``; ``down`` stops every daemon whose command
line names that folder and removes it.  Clients find the cluster through
``SLURM_CONF=.../slurm.conf``.

>>> print(node_line("fstb-sl1-h0", "10.233.0.2", 2))
NodeName=fstb-sl1-h0 NodeAddr=10.233.0.2 CPUs=2 State=UNKNOWN
>>> ctld_port("10.233.7")
16824
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
from pathlib import Path

from fabscope.atomic import atomic_open
from fabscope.testbed import names, state, system
from fabscope.testbed.names import TestbedError

#: the daemons and clients --slurm needs (Debian: slurm-wlm, munge)
PROGRAMS = ("munged", "slurmctld", "slurmd", "sinfo", "scontrol")


def missing() -> str | None:
    """Why Slurm cannot run here (a program not installed), or None."""
    lack = [p for p in PROGRAMS if system.which(p) is None]
    if lack:
        return f"{', '.join(lack)} not found (Debian: apt-get install slurm-wlm munge)"
    return None


def slurm_dir(name: str) -> Path:
    return state.state_dir() / f"{names.check_name(name)}-slurm"


def conf_path(name: str) -> Path:
    """The ``slurm.conf`` of testbed ``name``'s Slurm: what ``SLURM_CONF`` names."""
    return slurm_dir(name) / "etc" / "slurm.conf"


def ctld_port(subnet: str) -> int:
    """slurmctld's port: one per management subnet, so that two testbeds' controllers do not meet."""
    return 16817 + int(subnet.split(".")[2])


def node_line(host: str, addr: str, cpus: int) -> str:
    return f"NodeName={host} NodeAddr={addr} CPUs={cpus} State=UNKNOWN"


def slurm_conf(name: str, hosts: list[str], subnet: str, cpus: int) -> str:
    """``slurm.conf`` text: the controller on this machine's bridge address, one node per host, one partition."""
    from fabscope.fabric.exporters.slurm import compress_hostlist
    from fabscope.testbed.commands import mgmt_ip

    d = slurm_dir(name)
    lines = [
        f"# slurm.conf of fabscope testbed {name}, written by fabscope testbed up --slurm",
        f"ClusterName=fabscope-{name.lower()}",
        f"SlurmctldHost={socket.gethostname()}({subnet}.1)",
        f"SlurmctldPort={ctld_port(subnet)}",
        "SlurmdPort=6818",
        "SlurmUser=root", "SlurmdUser=root",
        f"AuthInfo=socket={d / 'munge' / 'munge.socket'}",
        f"StateSaveLocation={d / 'ctld'}",
        f"SlurmdSpoolDir={d / 'spool'}/d-%n",
        f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'run'}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log'}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/linear", "SchedulerType=sched/backfill",
        "TopologyPlugin=topology/tree",
        "MpiDefault=none", "MailProg=/bin/true", "ReturnToService=2",
        "SlurmdTimeout=30", "InactiveLimit=0", "KillWait=5", "MinJobAge=30",
        # the job steps' temporary folder (Slurm's PMIx plugin makes its per-step folders there, named without
        # the node): one path, which each slurmd's mount namespace binds to a folder of its own node
        f"TmpFS={d / 'tmp'}",
    ]
    lines += [node_line(h, mgmt_ip(subnet, i), cpus) for i, h in enumerate(hosts)]
    lines.append(f"PartitionName=fabscope Nodes={compress_hostlist(hosts)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


CGROUP_CONF = "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n"


def _write(path: Path, text: str) -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def write_topology(name: str, fabric) -> Path:
    """Write ``topology.conf`` beside slurm.conf from ``fabric`` (its host names must be the nodes');
    ``scontrol reconfigure`` makes a running slurmctld read it again."""
    from fabscope.fabric.exporters.slurm import write_slurm

    p = conf_path(name).parent / "topology.conf"
    write_slurm(fabric, p)
    return p


def _daemons(name: str) -> list[int]:
    """Pids of processes of the root namespace whose command line names this testbed's Slurm folder
    (slurmctld, munged; slurmd in the namespaces too, as /proc shows every namespace's processes)."""
    return system.processes_naming(str(slurm_dir(name)))


def running(name: str) -> bool:
    return bool(_daemons(name))


#: seconds ``stop`` waits, after SIGKILL, for the daemons' processes to be gone from /proc
GONE_WAIT = 20.0


def _alive(pid: int) -> bool:
    """``pid`` still exists (a process that exited but is not yet reaped counts: ps and pgrep show it)."""
    return os.path.exists(f"/proc/{pid}")


def stop(name: str) -> int:
    """Stop every daemon of testbed ``name``'s Slurm (SIGTERM, then SIGKILL after 5 s), wait until each
    of their processes is gone (not only no longer naming the folder: ``testbed down`` returns with
    none left), and remove its folder; returns how many processes were stopped."""
    pids = _daemons(name)
    seen = set(pids)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        for p in pids:
            try:
                os.kill(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end and _daemons(name):
            time.sleep(0.1)
        if not _daemons(name):
            break
        pids = _daemons(name)
        seen |= set(pids)
    end = time.monotonic() + GONE_WAIT
    while time.monotonic() < end and any(_alive(p) for p in seen):
        time.sleep(0.1)
    shutil.rmtree(slurm_dir(name), ignore_errors=True)
    return len(seen)


def env(name: str) -> dict[str, str]:
    """The environment a Slurm client (sbatch, srun, sinfo) needs to reach this testbed's Slurm."""
    return {**os.environ, "SLURM_CONF": str(conf_path(name))}


def start(name: str, say=lambda msg: None, timeout: float = 60.0) -> Path:
    """Start munged, slurmctld and one slurmd per host of testbed ``name`` (up); wait until every
    node is idle.  Returns the path of slurm.conf.  Already running: left as it is."""
    why = missing()
    if why:
        raise TestbedError(f"--slurm: {why}")
    st = state.load(name)
    fabric = state.load_fabric(name)
    if running(name):
        return conf_path(name)
    d = slurm_dir(name)
    shutil.rmtree(d, ignore_errors=True)
    for sub in ("etc", "spool", "ctld", "run", "log", "munge"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(d / "munge", 0o700)
    hosts = list(fabric.host_names)
    for h in hosts:
        (d / "spool" / f"d-{h}").mkdir()
        (d / "tmp-nodes" / h).mkdir(parents=True)
    (d / "tmp").mkdir()
    cpus = os.cpu_count() or 1
    conf = conf_path(name)
    _write(conf, slurm_conf(name, hosts, st.mgmt_subnet, cpus))
    _write(conf.parent / "cgroup.conf", CGROUP_CONF)
    write_topology(name, fabric)
    key = d / "munge" / "munge.key"
    with open(key, "wb") as fh:
        os.fchmod(fh.fileno(), 0o400)
        fh.write(os.urandom(128))
    m = d / "munge"
    system.run(["munged", "--force", f"--key-file={key}", f"--socket={m / 'munge.socket'}",
                f"--pid-file={m / 'munged.pid'}", f"--log-file={d / 'log' / 'munged.log'}",
                f"--seed-file={m / 'munged.seed'}"])
    environ = env(name)
    system.run(["slurmctld", "-f", str(conf)], env=environ)
    for i, h in enumerate(hosts):
        ns = names.ns_host(name, i)
        # 'ip netns exec' runs slurmd in a mount namespace of its own (mounts there do not propagate back):
        # TmpFS is this node's folder in it, so that two nodes' step folders of the same name do not collide
        system.run(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                    'hostname "$0" && mount --bind "$2" "$3" && exec slurmd -f "$1" -N "$0"', h, str(conf),
                    str(d / "tmp-nodes" / h), str(d / "tmp")], env=environ)
    wait_idle(name, len(hosts), timeout)
    say(f"testbed {name}: Slurm up ({len(hosts)} nodes in partition fabscope); "
        f"export SLURM_CONF={conf}")
    return conf


def sinfo_states(name: str) -> dict[str, str]:
    """Node name -> state as ``sinfo`` reports it now."""
    out = system.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=env(name), check=False)
    return dict(ln.split(None, 1) for ln in out.splitlines() if len(ln.split()) == 2)


def wait_idle(name: str, n: int, timeout: float) -> None:
    end = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while time.monotonic() < end:
        seen = sinfo_states(name)
        if len(seen) == n and all(s == "idle" for s in seen.values()):
            return
        time.sleep(0.5)
    bad = {k: v for k, v in seen.items() if v != "idle"}
    raise TestbedError(f"testbed {name}: Slurm nodes not idle after {timeout:g} s: "
                       f"{dict(list(bad.items())[:4]) or 'sinfo answered nothing'} "
                       f"(logs in {slurm_dir(name) / 'log'})")


def status(name: str) -> dict | None:
    """None if testbed ``name`` has no Slurm; else its slurm.conf, daemons and node states."""
    if not slurm_dir(name).exists() and not running(name):
        return None
    states = sinfo_states(name) if conf_path(name).exists() and running(name) else {}
    count: dict[str, int] = {}
    for s in states.values():
        count[s] = count.get(s, 0) + 1
    return {"conf": str(conf_path(name)), "daemons": len(_daemons(name)), "nodes": count}
