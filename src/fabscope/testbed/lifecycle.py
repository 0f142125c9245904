"""Bring a testbed up, take it down, say what exists.

``up`` checks everything first (rights, fabric, routing, size) and creates
nothing until the checks pass; if creation fails halfway it removes what it
made.  ``down`` finds a testbed's namespaces, veths and bridge by their names
(see :mod:`fabscope.testbed.names`), so it also cleans up after a crash, a
SIGKILL of ``up`` or a lost state file.  Deleting a namespace deletes the
veths in it, and with them their peers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from fabscope.errors import FabscopeError
from fabscope.fabric.model import Fabric
from fabscope.routing import default_engine, make_routing
from fabscope.testbed import commands, names, state, system
from fabscope.testbed.names import TestbedError
from fabscope.testbed.plan import Plan, forwarding, make_plan

#: bytes/s x hop of shaped traffic one core forwards through veths and tbf, with room to spare: about
#: half of what bench/bench_testbed.py measured unshaped (1150 per core, load average 21)
#: (see bench/bench_testbed.py); override with $FABSCOPE_TESTBED_CORE_RATE
CORE_RATE = 600e6
#: memory one emulated host takes while measuring (Hydra proxy + one MPICH rank + namespace)
HOST_MEMORY = 64 * 2 ** 20

Say = Callable[[str], None]


def _quiet(msg: str) -> None:
    pass


def core_rate() -> float:
    try:
        return float(os.environ.get("FABSCOPE_TESTBED_CORE_RATE", CORE_RATE))
    except ValueError:
        raise TestbedError("$FABSCOPE_TESTBED_CORE_RATE must be a number of bytes/s") from None


def mean_hops(fabric: Fabric, lft: np.ndarray) -> float:
    """Mean links crossed by a pair's route (host links included), following the tables."""
    from fabscope.routing.tables import TableRouting

    h = fabric.n_hosts
    src, dst = np.divmod(np.arange(h * h), h)
    keep = src != dst
    if not keep.any():
        return 2.0
    return float(TableRouting(fabric, lft).routes(src[keep], dst[keep]).hops.mean())


def hosts_that_fit(fabric: Fabric, lft: np.ndarray, ppn: int = 1) -> tuple[int, str]:
    """How many hosts of this fabric's kind this machine runs link-bound, and which limit says so."""
    cores = os.cpu_count() or 1
    rate = float(np.max(fabric.link_capacity[fabric.link_src < fabric.n_hosts]))
    hops = mean_hops(fabric, lft)
    by_cpu = int(cores * core_rate() / (rate * hops))
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        avail = 8 * 2 ** 30
    by_mem = int(avail / (HOST_MEMORY * ppn))
    why_cpu = (f"{cores} cores forward about {cores * core_rate() / 1e6:.0f} MB/s through shaped veths, and each host "
               f"at {rate * 8 / 1e6:.0f} Mbit over {hops:.1f} links on average needs {rate * hops / 1e6:.1f} MB/s")
    why_mem = f"{avail / 2 ** 30:.1f} GiB free at {HOST_MEMORY / 2 ** 20:.0f} MiB per host"
    return (by_cpu, why_cpu) if by_cpu <= by_mem else (by_mem, why_mem)


@dataclass
class Existing:
    name: str
    netns: list[str]
    links: list[str]
    state: bool


def existing(name: str | None = None) -> list[Existing]:
    """Testbeds that have namespaces on this machine (or a state file), by name; ``name`` is
    looked up by its exact object names whatever else exists."""
    allns = system.list_netns()
    links = system.list_links()
    found = set(state.names_up())
    for ns in allns:
        t = names.testbed_of_netns(ns)
        if t:
            found.add(t)
    # root interfaces alone do not name a testbed (a short "fb" prefix could match a stranger's);
    # they never outlive their namespaces anyway: up makes the namespaces first, down deletes them last
    if name is not None:
        mine = any(names.owns_netns(name, n) for n in allns) or any(names.owns_link(name, x) for x in links)
        found = {name} if name in found or mine else set()
    return [Existing(t, sorted((n for n in allns if names.owns_netns(t, n)), key=_natural),
                     sorted((x for x in links if names.owns_link(t, x)), key=_natural),
                     state.state_path(t).exists()) for t in sorted(found)]


def _natural(s: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", s)]


def down(name: str, say: Say = _quiet) -> tuple[int, int]:
    """Remove everything testbed ``name`` made; returns (namespaces, root links) removed."""
    names.check_name(name)
    system.require()
    n_ns = n_ln = 0
    from fabscope.testbed import slurm

    if slurm.slurm_dir(name).exists() or slurm.running(name):
        say(f"testbed {name}: stopped {slurm.stop(name)} Slurm daemons")
    for ex in existing(name):
        # the root-side veths and the bridge first: then deleting namespaces is quick
        batch = [f"link del {x}" for x in ex.links if x != names.bridge(name)]
        if names.bridge(name) in ex.links:
            batch.append(f"link del {names.bridge(name)}")
        if batch:
            system.run(["ip", "-force", "-batch", "-"], input="\n".join(batch) + "\n", check=False)
        n_ln += len(ex.links)
        _kill_launchers(name)
        _kill_inside(ex.netns)
        if ex.netns:
            system.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {n}\n" for n in ex.netns),
                       check=False, timeout=300)
            n_ns += len(ex.netns)
    _kill_launchers(name)  # also when no namespace is left: an mpiexec of a measure killed halfway
    state.remove(name)
    launcher_path(name).unlink(missing_ok=True)
    shutil.rmtree(batch_dir(name), ignore_errors=True)
    left = existing(name)
    if left and (left[0].netns or left[0].links):
        raise TestbedError(f"testbed {name}: could not remove {', '.join((left[0].netns + left[0].links)[:3])}")
    say(f"testbed {name}: removed {n_ns} namespaces and {n_ln} links")
    return n_ns, n_ln


def launcher_path(name: str) -> Path:
    """Hydra's launcher script of testbed ``name`` (written by :mod:`fabscope.testbed.launch`)."""
    return state.state_dir() / f"{names.check_name(name)}-launch.sh"


def batch_dir(name: str) -> Path:
    """Where ``up`` writes its per-namespace batch files: named after the testbed, so that ``down``
    removes it even after a SIGKILL of ``up``."""
    return state.state_dir() / f"{names.check_name(name)}-batch"


def _kill_launchers(name: str) -> None:
    """SIGKILL processes of the root namespace that launch into this testbed: an ``mpiexec`` whose
    ``fabscope measure`` was SIGKILLed keeps running (it names the testbed's launcher script)."""
    import signal

    for pid in system.processes_naming(str(launcher_path(name)), whole=True):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_inside(namespaces: list[str]) -> None:
    """SIGKILL processes still running in these namespaces (a measurement cut short): a namespace
    outlives its name while a process holds it, and no process of a testbed may outlive it."""
    import signal

    for ns in namespaces:
        for pid in system.run(["ip", "netns", "pids", ns], check=False).split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass


def _free_subnet() -> str:
    used = system.used_ipv4()
    taken = {int(m) for m in re.findall(r"inet 10\.233\.(\d+)\.", used)}
    for st_name in state.names_up():
        try:
            taken.add(int(state.load(st_name).mgmt_subnet.split(".")[2]))
        except (TestbedError, ValueError, IndexError):
            pass
    for k in range(256):
        if k not in taken:
            return f"10.233.{k}"
    raise TestbedError("no free management subnet left in 10.233.0.0/16 (256 testbeds up?)")


def prepare(name: str, spec: str, rate: float, routing: str | None = None) -> tuple[Plan, np.ndarray, str]:
    """Every check ``up`` makes before creating anything: (plan, forwarding tables, engine)."""
    from fabscope.fabric.io import load_fabric

    names.check_name(name)
    try:
        fabric = load_fabric(spec)
    except FabscopeError as err:
        raise TestbedError(f"--fabric {spec}: {err}") from None
    plan = make_plan(name, fabric, rate)
    engine = routing or default_engine(plan.fabric)
    try:
        router = make_routing(plan.fabric, engine)
    except FabscopeError as err:
        raise TestbedError(f"routing {engine}: {err}") from None
    lft = forwarding(plan.fabric, router)
    fit, why = hosts_that_fit(plan.fabric, lft)
    if plan.fabric.n_hosts > fit:
        raise TestbedError(f"fabric {fabric.name!r} has {plan.fabric.n_hosts} hosts; this machine runs at most {fit} "
                           f"link-bound at --rate {rate * 8 / 1e6:g}Mbit: {why} (lower --rate or use a smaller fabric)")
    return plan, lft, engine


#: the rate ``--rate auto`` picks at most (wire rate of the fastest link, bytes/s): 100 Mbit
AUTO_MAX_RATE = 100e6 / 8


def _host_rate(f: Fabric) -> float:
    """Payload bytes/s of the fastest host cable: what one host sends at most."""
    return float(np.max(f.link_capacity[f.link_src < f.n_hosts]))


def up(name: str, spec: str, rate: float | None, routing: str | None = None, say: Say = _quiet,
       calibrate: bool = True, max_rate: float = AUTO_MAX_RATE, slurm: bool = False,
       fair: bool = True) -> state.State:
    """Make testbed ``name`` from fabric ``spec`` with its fastest link shaped to ``rate`` bytes/s.

    ``rate`` None (``--rate auto``): the highest rate, up to ``max_rate`` in whole Mbit, at
    which this machine, as measured now (:mod:`fabscope.testbed.calibrate`), keeps the testbed link-bound.
    With ``calibrate`` (the default) a rate the machine cannot forward now is refused with the rate
    that would fit.

    ``fair`` False: every link a tbf alone, first come first served (for comparisons), instead of the round-robin among the hosts whose routes cross it.

    With ``slurm``, a Slurm cluster over the hosts (see :mod:`fabscope.testbed.slurm`).

    Idempotent: a testbed already up with the same fabric, rate and routing is left as it is
    (and gets its Slurm if ``slurm`` asks for one it does not have).
    """
    from fabscope.testbed import slurm as tb_slurm
    from dataclasses import replace

    from fabscope.fabric.io import to_dict
    from fabscope.testbed import calibrate as cal

    plan, lft, engine = prepare(name, spec, rate or 1e5, routing)
    system.require()
    if slurm and tb_slurm.missing():
        raise TestbedError(f"--slurm: {tb_slurm.missing()}")
    try:
        old = state.load(name)
    except TestbedError:
        old = None
    ex = existing(name)
    if old is not None:
        same = (old.spec, old.routing) == (spec, engine) and (rate is None or old.rate == rate)
        whole = ex and len(ex[0].netns) == plan.fabric.n_nodes and names.bridge(name) in ex[0].links
        if same and whole:
            say(f"testbed {name} is already up ({plan.fabric.n_hosts} hosts)")
            if slurm:
                _start_slurm(name, say)
            return old
        if not same:
            raise TestbedError(f"testbed {name} is up with --fabric {old.spec} --rate {old.rate * 8 / 1e6:g}Mbit "
                               f"--routing {old.routing}; take it down first ('fabscope testbed down {name}')")
    if ex:
        say(f"testbed {name}: removing what an earlier attempt left")
        down(name)
    calib: dict = {}
    if calibrate or rate is None:
        calib = cal.measure_forwarding(name)
        hops = mean_hops(plan.fabric, lft)
        n = plan.fabric.n_hosts
        # the plan's capacities are payload at a wire rate; a host cable's share of the fastest link
        share = _host_rate(plan.fabric) / (plan.efficiency * (rate or 1e5))
        if rate is None:
            top = cal.fit_rate(calib["forwarding"], n, hops) / (plan.efficiency * share)
            rate = float(min(max_rate, np.floor(top * 8 / 1e6) * 1e6 / 8))
            if rate < 1e6 / 8:
                raise TestbedError(f"--rate auto: this machine forwards about {calib['forwarding'] / 1e6:.0f} MB/s x "
                                   f"hop now; {n} hosts over {hops:.1f} links would get less than 1 Mbit each")
            say(f"testbed {name}: this machine forwards about {calib['forwarding'] / 1e6:.0f} MB/s x hop now: "
                f"--rate auto picks {rate * 8 / 1e6:g}Mbit")
            plan, lft, engine = prepare(name, spec, rate, routing)
        else:
            why = cal.check_rate(rate * plan.efficiency * share, calib["forwarding"], n, hops, wire=rate)
            if why:
                raise TestbedError(f"testbed {name}: {why}")
        calib.update(mean_hops=round(hops, 3), rate=rate)
    if float(plan.fabric.link_latency.max()) >= 1e-6 and not system.have_netem():
        plan = replace(plan, delay=False)
        say(f"testbed {name}: this kernel has no netem qdisc: the fabric's link latencies "
            f"(up to {plan.fabric.link_latency.max() * 1e6:g} us) are not emulated, rates are")
    why_not_fair = system.fair_share_missing() if fair else None
    if not fair:
        plan = replace(plan, fair=False)
    elif why_not_fair:
        plan = replace(plan, fair=False)
        say(f"testbed {name}: links are not shared fairly among their flows (first come, first served: "
            f"the model's max-min share is not emulated): {why_not_fair}")
    assert rate is not None
    subnet = _free_subnet()
    t0 = time.monotonic()
    try:
        _create(plan, lft, subnet, say)
    except BaseException:
        try:
            down(name)
        finally:
            raise
    st = state.State(name=name, spec=spec, routing=engine, rate=rate, mgmt_subnet=subnet,
                     fabric=to_dict(plan.fabric), scale=plan.scale, efficiency=plan.efficiency,
                     nominal=to_dict(replace(plan.fabric, lft=lft)), calibration=calib)
    state.save(st)
    say(f"testbed {name}: {plan.fabric.n_hosts} hosts, {plan.fabric.n_switches} switches, "
        f"{plan.fabric.n_links // 2} cables up in {time.monotonic() - t0:.1f} s")
    if slurm:
        _start_slurm(name, say)
    return st


def _start_slurm(name: str, say: Say) -> None:
    """Slurm over the testbed; if it cannot start, the whole testbed goes (nothing half made)."""
    from fabscope.testbed import slurm

    try:
        slurm.start(name, say)
    except BaseException:
        try:
            down(name)
        finally:
            raise


def _create(plan: Plan, lft: np.ndarray, subnet: str, say: Say) -> None:
    f = plan.fabric
    system.run(["ip", "-batch", "-"], input="".join(f"netns add {plan.netns(v)}\n" for v in range(f.n_nodes)))
    lines = commands.mgmt_lines(plan, subnet) + commands.cable_lines(plan)
    system.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", timeout=300)
    sources = commands.link_sources(plan, lft) if plan.fair else None
    tmp = batch_dir(plan.name)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for v in range(f.n_nodes):
            ip_file = os.path.join(tmp, f"ip{v}")
            tc_file = os.path.join(tmp, f"tc{v}")
            with open(ip_file, "w") as fh:
                fh.write("\n".join(commands.node_ip_lines(plan, v, lft, subnet)) + "\n")
            with open(tc_file, "w") as fh:
                fh.write("\n".join(commands.shaper_lines(plan, v, sources, plan.fair)) + "\n")
            sysctl = commands.HOST_SYSCTL if v < f.n_hosts else commands.SWITCH_SYSCTL
            script = (f"sysctl -q -w {' '.join(sysctl)} >/dev/null && "
                      "for x in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $x; done && "
                      f"ip -batch {shlex.quote(ip_file)} && tc -batch {shlex.quote(tc_file)}")
            system.run(["ip", "netns", "exec", plan.netns(v), "sh", "-c", script])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def status(name: str | None = None) -> list[dict]:
    """What exists, per testbed: its state (if any) and the namespaces and links found."""
    out = []
    for ex in existing(name):
        from fabscope.testbed import slurm

        row: dict = {"name": ex.name, "netns": len(ex.netns), "links": len(ex.links), "state": ex.state,
                     "slurm": slurm.status(ex.name)}
        if ex.state:
            try:
                st = state.load(ex.name)
                f = st.base_fabric()
                row.update(spec=st.spec, routing=st.routing, rate=st.rate, hosts=f.n_hosts,
                           switches=f.n_switches, cables=f.n_links // 2, degraded=len(st.degraded), cut=list(st.cut),
                           whole=len(ex.netns) == f.n_nodes, calibration=dict(st.calibration))
            except TestbedError as err:
                row["error"] = str(err)
        out.append(row)
    return out
