"""Was a testbed measurement link-bound?  Read off the shapers and the CPUs around the run.

A testbed models its fabric only while the shaped links set the pace.  When
they do, every host that sends a long message fills its own cable's shaper
faster than the shaper lets it out: the ``tbf`` counts the packets it held
back (``overlimits``).  When the CPUs set the pace (ranks starved of CPU, a
machine busy with other work), packets reach the shapers slower than their
rate and no shaper holds anything back.  That is not enough: ranks that
spin on 2 cores shared by 16 still fill their shapers in bursts, but answer
late, and their pairs measure 0.82-0.90 of the model (measured here; 0.98-1.02
when they yield).  So a run is link-bound when the shapers of (nearly) every
host that sent held packets back *and* its uncontended pairs (those the
model gives their host cables' full rate) measure, by their median, at least
:data:`UNCONTENDED_MIN` of the model.  The CPUs' time split and the load
average during the run are recorded beside it.

``measure --testbed`` appends the verdict to its output as one JSON line
``{"type": "testbed", "link_bound": ..., ...}``, which ``compare`` reads to
warn about a run that was not.

>>> verdict(sending=16, held=16, drops=0, packets=1000)[0]
True
>>> verdict(sending=16, held=16, drops=0, packets=1000, uncontended=(6, 0.86))
(False, 'its 6 uncontended pairs measured 0.86 of the model (median): the CPUs, not the links, set the pace')
>>> verdict(sending=16, held=9, drops=0, packets=1000)
(False, 'the shapers of only 9 of 16 sending hosts held packets back: the CPUs, not the links, set the pace')
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.testbed import counters, state

#: a host "sent" when its cable carried at least this many bytes out during the run
SENT_BYTES = 256 * 1024
#: share of sending hosts whose shaper must have held packets back
HELD_SHARE = 0.9
#: median measured/modeled of uncontended pairs a link-bound run reaches at least
UNCONTENDED_MIN = 0.93
#: below this share of idle CPU time over a run (its record's ``cpu_idle``), its CPUs may have set the pace of
#: a pair even where the shapers held packets back: a starved rank is late to post its next message
CPU_IDLE_MIN = 0.1
#: a run that dropped more than this share of its packets at the shapers is not a clean link-bound run
DROP_SHARE = 0.01


def verdict(sending: int, held: int, drops: int, packets: int,
            uncontended: tuple[int, float | None] = (0, None), app: bool = False) -> tuple[bool, str]:
    """(link-bound, why) from the counts of a run and (number, median measured/modeled) of its uncontended pairs.

    ``app``: an application kernel's run, whose ranks send to several peers at once, so that several
    hosts' flows meet at one cable's shaper: its queue overflows and TCP backs off, whatever the CPUs
    do (the links still set the pace; the drops are TCP's answer to a full queue where InfiniBand's
    credits would have held the senders back).  Its drops are recorded, not held against it.

    >>> verdict(sending=16, held=16, drops=60, packets=1000, app=True)[1].split('; ')[1]
    "they dropped 60 of 1000 packets (6.0%: several hosts' flows meeting at one shaper)"
    """
    if sending == 0:
        return False, "no host sent a long message over the fabric"
    if held < HELD_SHARE * sending:
        return False, (f"the shapers of only {held} of {sending} sending hosts held packets back: "
                       "the CPUs, not the links, set the pace")
    if app:
        lost = (f"; they dropped {drops} of {packets} packets ({100 * drops / packets:.1f}%: several hosts' flows "
                "meeting at one shaper)") if drops and packets else ""
        return True, f"the shapers of {held} of {sending} sending hosts held packets back{lost}"
    if packets and drops > DROP_SHARE * packets:
        return False, f"the shapers dropped {drops} of {packets} packets (queues overflowed)"
    n, med = uncontended
    if n and med is not None and med < UNCONTENDED_MIN:
        return False, (f"its {n} uncontended pairs measured {med:.2f} of the model (median): "
                       "the CPUs, not the links, set the pace")
    pairs = f", its {n} uncontended pairs {med:.2f} of the model (median)" if n and med is not None else ""
    return True, f"the shapers of {held} of {sending} sending hosts held packets back{pairs}"


def uncontended(path: str | os.PathLike[str], name: str) -> tuple[int, float | None]:
    """(number, median measured/modeled) of the run's pairs that the model of testbed ``name`` as it runs
    now gives the full rate of their hosts' cables: no sharing, so nothing but the CPUs can slow them.
    Pairs of two ranks on one host (``--ppn`` > 1) cross no cable: TCP loopback, which the testbed does
    not emulate, so they say nothing about the links.  Modeled in lock-step, where pairs share most."""
    from fabscope.diagnose.compare import compare
    from fabscope.diagnose.measured import load_measured
    from fabscope.errors import FabscopeError

    f = state.load_fabric(name, now=True)
    try:
        res = compare(load_measured([os.fspath(path)], f), phases="lockstep")
    except FabscopeError:  # no pair test in this run
        return 0, None
    cap = {f.node_names[int(f.link_src[l])]: float(f.link_capacity[l]) for l in np.flatnonzero(f.link_src < f.n_hosts)}
    p = res.pairs
    free = free_pairs(p["src_host"], p["dst_host"], p["modeled"], cap)
    mod, meas = np.asarray(p["modeled"], float), np.asarray(p["measured"], float)
    if not free.any():
        return 0, None
    return int(free.sum()), float(np.median(meas[free] / mod[free]))


def free_pairs(src_host, dst_host, modeled, cable: dict[str, float]) -> np.ndarray:
    """Which pairs the model gives their host cables' full rate (``cable``: host -> its cable's rate),
    pairs of two ranks on one host left out: they cross no cable (TCP loopback on a testbed).

    >>> free_pairs(["a", "a", "b"], ["b", "a", "c"], [5.0, 4e9, 2.5], {"a": 5.0, "b": 5.0, "c": 5.0}).tolist()
    [True, False, False]
    """
    src, dst = np.asarray(src_host), np.asarray(dst_host)
    full = np.array([min(cable.get(a, 0.0), cable.get(b, 0.0)) for a, b in zip(src.tolist(), dst.tolist())])
    return (np.asarray(modeled, float) >= 0.99 * full) & (full > 0) & (src != dst)


@dataclass
class Watch:
    """Counters and CPU times at the start of a run on testbed ``name``."""

    name: str
    before: counters.Counters
    cpu: np.ndarray
    t0: float

    @classmethod
    def start(cls, name: str) -> "Watch":
        return cls(name, counters.snapshot(name), counters.cpu_stat(), time.monotonic())

    def finish(self, out: str | os.PathLike[str]) -> dict[str, Any]:
        """The record of the run written to ``out``: whether it was link-bound and the figures that say so."""
        st = state.load(self.name)
        d = counters.snapshot(self.name) - self.before
        cpu = counters.cpu_stat()
        f = st.base_fabric()
        host_links = np.flatnonzero(f.link_src < f.n_hosts)
        sent = host_links[d.bytes[host_links] >= SENT_BYTES]
        held = int(np.sum(d.overlimits[sent] > 0))
        from fabscope.measure.apps import is_app_run

        free = uncontended(out, self.name)
        ok, why = verdict(len(sent), held, int(d.drops.sum()), int(d.packets.sum()), free, app=is_app_run(str(out)))
        dc = cpu - self.cpu
        idle = float((dc[3] + dc[4]) / dc.sum()) if dc.sum() > 0 else 0.0
        seconds = time.monotonic() - self.t0
        # how busy the sending hosts' cables were over the whole job (its start-up included, so a
        # lower bound): with several ranks per host no pair is uncontended, and this says how
        # much of the time the cables were the pace
        p = counters.plan_of(st)
        busy = [float(d.bytes[l]) / (p.wire_rate(int(l)) * seconds) for l in sent] if seconds > 0 else []
        return {"type": "testbed", "testbed": self.name, "spec": st.spec, "rate": st.rate,
                "link_bound": ok, "why": why, "hosts_sending": int(len(sent)), "hosts_held": held,
                "packets": int(d.packets.sum()), "overlimits": int(d.overlimits.sum()), "drops": int(d.drops.sum()),
                "uncontended_pairs": free[0], "uncontended_ratio": free[1],
                "host_cables_busy": round(float(np.median(busy)), 4) if busy else None,
                "bytes": int(d.bytes.sum()), "seconds": round(seconds, 3),
                "cpu": counters.cpu_split(self.cpu, cpu), "cpu_idle": round(idle, 4),
                "loadavg": os.getloadavg()[0], "cores": os.cpu_count(),
                "calibration": dict(st.calibration)}


def append(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Add ``record`` as the last line of the run's JSON-lines output (rewritten whole, atomically)."""
    with open(path) as fh:
        text = fh.read()
    if text and not text.endswith("\n"):
        text += "\n"
    with atomic_open(path) as fh:
        fh.write(text + json.dumps(record) + "\n")


def records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The testbed records of a run's output (none for a run elsewhere)."""
    out = []
    try:
        with open(path) as fh:
            for line in fh:
                if '"testbed"' in line:
                    try:
                        d = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(d, dict) and d.get("type") == "testbed":
                        out.append(d)
    except OSError:
        pass
    return out
