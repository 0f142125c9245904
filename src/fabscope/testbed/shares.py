"""How several TCP flows that meet on one emulated link share it: each flow's rate, measured.

One receiver in a host's namespace takes one connection per sender; each sender
(a host namespace) sends as fast as TCP lets it for a few seconds.  The receiver
notes every connection's bytes over time, and each flow's rate is taken over the
window in which all of them were running, their first and last :data:`SETTLE` s
left out (TCP's start, the senders' staggered ends).  A link that shares fairly
gives the flows that have no other bottleneck equal rates.

>>> spread([10.0, 10.0, 9.0])        # slowest flow's rate / fastest's
0.9
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from fabscope.testbed import system
from fabscope.testbed.names import TestbedError

#: seconds left out at each end of the window in which all flows ran
SETTLE = 1.0
PORT = 5299

RECEIVER = r"""
import json, socket, sys, threading, time
ip, port, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((ip, port)); srv.listen(n); print("ready", flush=True)
srv.settimeout(seconds + 30)
log = {}
def take(c, peer):
    got, rows, last = 0, [], 0.0
    c.settimeout(seconds + 30)
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        got += len(b)
        t = time.monotonic()
        if t - last >= 0.002:
            rows.append((t, got)); last = t
    rows.append((time.monotonic(), got))
    log[peer] = rows
threads = []
for _ in range(n):
    c, a = srv.accept()
    th = threading.Thread(target=take, args=(c, a[0])); th.start(); threads.append(th)
for th in threads:
    th.join()
print(json.dumps(log), flush=True)
"""

SENDER = r"""
import socket, sys, time
ip, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.create_connection((ip, port), timeout=30)
buf = b"x" * (1 << 20)
end = time.monotonic() + seconds
while time.monotonic() < end:
    s.sendall(buf)
s.close()
"""


MESSAGES = r"""
import socket, sys, time
ip, port, size, count, period, t0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    float(sys.argv[5]), float(sys.argv[6])
s = socket.create_connection((ip, port), timeout=30)
buf = b"x" * size
for k in range(count):
    time.sleep(max(0.0, t0 + k * period - time.monotonic()))
    s.sendall(buf)
s.close()
"""


def spread(rates: Sequence[float]) -> float:
    """Slowest flow's rate over the fastest's: 1 for an even share."""
    r = np.asarray(rates, float)
    return float(r.min() / r.max()) if r.size and r.max() > 0 else 0.0


def window_rates(log: dict[str, list[tuple[float, int]]], settle: float = SETTLE) -> dict[str, float]:
    """Bytes/s of each flow over the window in which all of them ran, ``settle`` s cut at each end.

    >>> log = {"a": [(0.0, 0), (1.0, 100), (4.0, 400), (5.0, 500)], "b": [(0.5, 0), (4.5, 200)]}
    >>> {k: round(v) for k, v in window_rates(log, settle=0.5).items()}
    {'a': 100, 'b': 50}
    """
    t0 = max(rows[0][0] for rows in log.values()) + settle
    t1 = min(rows[-1][0] for rows in log.values()) - settle
    if t1 <= t0:
        raise TestbedError("the flows did not run together long enough to measure their shares")
    out = {}
    for peer, rows in log.items():
        t = np.array([r[0] for r in rows])
        b = np.array([r[1] for r in rows], float)
        out[peer] = float((np.interp(t1, t, b) - np.interp(t0, t, b)) / (t1 - t0))
    return out


def _run(flows: Sequence[tuple[str, str, str, str]], port: int, seconds: float,
         sender: Callable[[str], list[str]]) -> dict[str, list[tuple[float, int]]]:
    """Start one receiver per destination of ``flows``, then one sender per flow (``python -c`` and
    ``sender(destination IP)``), wait for all; each flow's (time, bytes) log by source IP.  Every
    process is gone when this returns or raises."""
    py = sys.executable
    dests: dict[tuple[str, str], int] = {}
    for _, _, dns, dip in flows:
        dests[(dns, dip)] = dests.get((dns, dip), 0) + 1
    procs: list[subprocess.Popen] = []
    log: dict[str, list[tuple[float, int]]] = {}
    try:
        rx = []
        for (dns, dip), n in dests.items():
            p = subprocess.Popen(["ip", "netns", "exec", dns, py, "-c", RECEIVER, dip, str(port), str(n), str(seconds)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            rx.append(p)
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise TestbedError(f"flow receiver in {dns} did not start: {p.stderr.read() if p.stderr else ''}")
        tx = []
        for sns, _, _, dip in flows:
            p = subprocess.Popen(["ip", "netns", "exec", sns, py, "-c", *sender(dip)], stderr=subprocess.PIPE, text=True)
            procs.append(p)
            tx.append(p)
        for p in tx:
            if p.wait(timeout=seconds + 60) != 0:
                raise TestbedError(f"flow sender failed: {p.stderr.read() if p.stderr else ''}")
        for p in rx:
            out, err = p.communicate(timeout=60)
            if p.returncode != 0:
                raise TestbedError(f"flow receiver failed: {err.strip()}")
            log.update(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return log


def measure(flows: Sequence[tuple[str, str, str, str]], seconds: float = 8.0, port: int = PORT) -> list[float]:
    """Rates (bytes/s) of one TCP flow per ``(source namespace, source IP, destination namespace,
    destination IP)`` of ``flows`` (each source once), all sending at once for ``seconds``."""
    log = _run(flows, port, seconds, lambda dip: [SENDER, dip, str(port), str(seconds)])
    want = [sip for _, sip, _, _ in flows]
    if sorted(log) != sorted(want):
        raise TestbedError(f"flows from {sorted(log)} reached the receivers, expected {sorted(want)}")
    rates = window_rates(log)
    return [rates[ip] for ip in want]


def deviation(shares: Sequence[float]) -> float:
    """The largest departure of one flow's share from the flows' mean, as a fraction of the mean
    (0 for an even share).

    >>> round(deviation([9.0, 10.0, 11.0]), 3)
    0.1
    """
    r = np.asarray(shares, float)
    return float(np.abs(r / r.mean() - 1).max()) if r.size and r.mean() > 0 else 1.0


def message_shares(log: dict[str, list[tuple[float, int]]], size: int, starts: Sequence[float]) -> list[list[float]]:
    """Per round of messages (all senders send ``size`` bytes at ``starts[k]``): the bytes each flow
    delivered between the round's start and the first flow's completion.  A link that serves them
    round-robin gives equal figures; one that serves a message after the other, one full and the
    others near 0.

    >>> log = {"a": [(0.0, 0), (1.0, 50), (2.0, 100)], "b": [(0.0, 0), (1.0, 100)]}
    >>> message_shares(log, 100, [0.0])
    [[50.0, 100.0]]
    """
    out = []
    for k, t0 in enumerate(starts):
        done, got = [], []
        for rows in log.values():
            t = np.array([r[0] for r in rows])
            b = np.array([r[1] for r in rows], float)
            i = int(np.searchsorted(b, (k + 1) * size))
            done.append(float(t[min(i, len(t) - 1)]))
        end = min(done)
        for rows in log.values():
            t = np.array([r[0] for r in rows])
            b = np.array([r[1] for r in rows], float)
            got.append(float(np.interp(end, t, b)) - k * size)
        out.append(got)
    return out


def measure_messages(flows: Sequence[tuple[str, str, str, str]], size: int = 1 << 20, count: int = 10,
                     period: float = 1.0, port: int = PORT, warm: bool = False) -> list[list[float]]:
    """:func:`message_shares` of ``count`` rounds in which every flow of ``flows`` (as :func:`measure`'s)
    sends one message of ``size`` bytes at the same moment, ``period`` s apart (a ping-pong's turns).

    ``warm``: the senders keep their congestion windows between messages (``tcp_slow_start_after_idle``
    0 in their namespaces for the run), so that each message enters the network at once and the
    link alone decides how the messages share it; otherwise TCP's slow start after each pause
    paces the first part of every message, and its luck shows in the shares."""
    if warm:
        for sns, _, _, _ in flows:
            system.run(["ip", "netns", "exec", sns, "sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0"])
    seconds = count * period + 5
    t0 = time.monotonic() + 3.0                       # the senders' start-up (one interpreter each) before it
    try:
        log = _run(flows, port, seconds,
                   lambda dip: [MESSAGES, dip, str(port), str(size), str(count), str(period), f"{t0:.6f}"])
    finally:
        if warm:
            for sns, _, _, _ in flows:
                system.run(["ip", "netns", "exec", sns, "sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=1"],
                           check=False)
    if len(log) != len(flows):
        raise TestbedError(f"{len(log)} of {len(flows)} flows reached the receivers")
    return message_shares(log, size, [t0 + k * period for k in range(count)])


def hold_back(ns: str, ifname: str) -> tuple[int, int]:
    """(overlimits, drops) of the tbf on ``ifname`` in ``ns``: how often it held packets back, and dropped."""
    q = [d for d in json.loads(system.run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", ifname]) or "[]")
         if d.get("root")]
    return (int(q[0].get("overlimits", 0)), int(q[0].get("drops", 0))) if q else (0, 0)
