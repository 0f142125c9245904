"""The tc counters of every cable direction: the proof that data took the fabric.

Each directed link's shaper sits at its source end, so its counters say
what crossed that link: bytes and packets sent, packets dropped, and
``overlimits``, the times a packet waited for tokens, i.e. the link, not
the CPU, set the pace.  :func:`cpu_times` reads ``/proc/stat`` so a run can
show its CPUs were not saturated while its links were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from fabscope.testbed import state, system
from fabscope.testbed.names import TestbedError
from fabscope.testbed.plan import Plan


@dataclass(frozen=True)
class Counters:
    """Per directed link of the testbed's fabric (before faults): totals since ``up``."""

    bytes: np.ndarray
    packets: np.ndarray
    drops: np.ndarray
    overlimits: np.ndarray
    backlog: np.ndarray

    def __sub__(self, other: "Counters") -> "Counters":
        return Counters(self.bytes - other.bytes, self.packets - other.packets, self.drops - other.drops,
                        self.overlimits - other.overlimits, self.backlog)


def plan_of(st: state.State) -> Plan:
    f = st.base_fabric()
    return Plan(st.name, f, st.scale, st.efficiency)


def snapshot(name: str) -> Counters:
    """Read every shaper of testbed ``name`` (one ``tc`` call per namespace)."""
    st = state.load(name)
    p = plan_of(st)
    f = p.fabric
    n = f.n_links
    out = {k: np.zeros(n, np.int64) for k in ("bytes", "packets", "drops", "overlimits", "backlog")}
    for v in range(f.n_nodes):
        try:
            qd = json.loads(system.run(["tc", "-n", p.netns(v), "-s", "-j", "qdisc", "show"], timeout=30) or "[]")
        except ValueError as err:
            raise TestbedError(f"cannot read tc counters of {p.netns(v)}: {err}") from None
        by_dev = {q["dev"]: q for q in qd if q.get("root") and q.get("kind") == "tbf"}
        for l in np.flatnonzero(f.link_src == v):
            q = by_dev.get(p.ifname(int(l)))
            if q is None:
                raise TestbedError(f"testbed {name}: no shaper on {p.netns(v)} {p.ifname(int(l))}")
            for k in out:
                out[k][l] = int(q.get(k, 0))
    return Counters(**out)


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        vals = [float(x) for x in fh.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    return sum(vals) - idle, sum(vals)


def cpu_busy(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Share of all CPUs busy between two :func:`cpu_times` readings (whole machine, other users included)."""
    db, dt = after[0] - before[0], after[1] - before[1]
    return db / dt if dt > 0 else 0.0


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_stat() -> np.ndarray:
    """Jiffies of all CPUs by kind (:data:`CPU_FIELDS`), from /proc/stat."""
    with open("/proc/stat") as fh:
        vals = [float(x) for x in fh.readline().split()[1:1 + len(CPU_FIELDS)]]
    return np.array(vals + [0.0] * (len(CPU_FIELDS) - len(vals)))


def cpu_split(before: np.ndarray, after: np.ndarray) -> str:
    """Where the CPUs' time went between two :func:`cpu_stat` readings, e.g. ``user 60% system 20% ...``.

    Waiting MPI ranks poll (user time) whatever the links do; the forwarding and shaping
    of the emulated fabric is system and softirq time.
    """
    d = after - before
    tot = d.sum() or 1.0
    share = dict(zip(CPU_FIELDS, d / tot))
    return (f"user {share['user'] + share['nice']:.0%} system {share['system']:.0%} "
            f"softirq {share['softirq'] + share['irq']:.0%} idle {share['idle'] + share['iowait']:.0%}")
