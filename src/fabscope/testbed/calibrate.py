"""What this machine forwards now, measured at ``up``, and whether a testbed's rate fits in it.

A testbed is only a model of its fabric while its links, not its CPUs, set
the pace.  The fixed budget of :func:`fabscope.testbed.lifecycle.hosts_that_fit`
is a guess for a quiet machine; a machine shared with other jobs forwards
less.  So ``up`` measures, in three namespaces of the testbed's own names
(host, switch, host: found and removed by ``down`` if ``up`` is killed),
unshaped TCP streams, one per core, through the switch for about a second:
the bytes x hops per second the machine moves through veths and a forwarding
namespace now, the application's own CPU included.  The testbed then needs
``hosts x rate x mean hops`` of it, with room to spare (:data:`HEADROOM`).

>>> fit_rate(measured=1.2e9, hosts=16, hops=3.75)    # bytes/s per link the machine keeps link-bound
10000000.0
>>> check_rate(5e6, measured=1.2e9, hosts=16, hops=3.75) is None
True
>>> print(check_rate(40e6, measured=1.2e9, hosts=16, hops=3.75))
16 hosts at 320Mbit over 3.8 links on average need 2400 MB/s x hop; this machine forwards about 1200 MB/s x hop now (measured at up), of which a testbed may plan on 50%: lower --rate to at most 80Mbit, or use --rate auto
"""

from __future__ import annotations

import os
import sys
import time

from fabscope.testbed import names, system
from fabscope.testbed.names import TestbedError

#: share of the measured forwarding a testbed may plan on: the rest is for MPI's own CPU, bursts, other users
HEADROOM = 0.5
#: seconds of streaming per calibration
SECONDS = 1.0
PORT = 5301

_RECEIVER = r"""
import socket, sys, time
n = int(sys.argv[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[2]))); s.listen(n)
print("ready", flush=True)
conns = [s.accept()[0] for _ in range(n)]
import selectors
sel = selectors.DefaultSelector()
for c in conns: sel.register(c, selectors.EVENT_READ)
total, t0, t1, open_ = 0, None, None, n
while open_:
    for key, _ in sel.select():
        b = key.fileobj.recv(1 << 20)
        if not b:
            sel.unregister(key.fileobj); open_ -= 1; continue
        now = time.monotonic(); t0 = t0 or now; t1 = now; total += len(b)
print(total, (t1 or 0) - (t0 or 0), flush=True)
"""

_SENDER = r"""
import socket, sys, threading, time
n, host, port, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
buf = b"\0" * (1 << 18)
def go():
    c = socket.create_connection((host, port)); end = time.monotonic() + secs
    while time.monotonic() < end: c.sendall(buf)
    c.close()
ts = [threading.Thread(target=go) for _ in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def fit_rate(measured: float, hosts: int, hops: float) -> float:
    """The highest payload rate per link (bytes/s) at which ``hosts`` hosts stay link-bound."""
    return HEADROOM * measured / (hosts * hops)


def check_rate(rate: float, measured: float, hosts: int, hops: float, wire: float | None = None) -> str | None:
    """None if ``rate`` (payload bytes/s of a host's cable) fits what the machine forwards, else why not.
    ``wire``: the ``--rate`` given (wire rate of the fastest link), to name in the message."""
    need = hosts * rate * hops
    if need <= HEADROOM * measured:
        return None
    wire = rate if wire is None else wire
    top = fit_rate(measured, hosts, hops) * wire / rate
    return (f"{hosts} hosts at {wire * 8 / 1e6:g}Mbit over {hops:.1f} links on average need {need / 1e6:.0f} MB/s x "
            f"hop; this machine forwards about {measured / 1e6:.0f} MB/s x hop now (measured at up), of which a "
            f"testbed may plan on {HEADROOM:.0%}: lower --rate to at most {int(top * 8 / 1e6)}Mbit, or use --rate auto")


def measure_forwarding(name: str, seconds: float = SECONDS) -> dict:
    """Bytes x hops per second this machine forwards now: ``cores`` TCP streams host -> switch -> host,
    unshaped, in namespaces named as testbed ``name``'s first two hosts and first switch (removed after)."""
    import subprocess

    h0, h1, s0 = names.ns_host(name, 0), names.ns_host(name, 1), names.ns_switch(name, 0)
    cores = os.cpu_count() or 1
    batch = [f"netns add {x}" for x in (h0, h1, s0)]
    system.run(["ip", "-batch", "-"], input="\n".join(batch) + "\n")
    recv = None
    try:
        gw, mac = "10.199.255.254", "02:fc:00:00:00:0{}".format
        lines = [f"link add fab0 address {mac(1)} netns {h0} type veth peer name p1 address {mac(2)} netns {s0}",
                 f"link add fab0 address {mac(3)} netns {h1} type veth peer name p2 address {mac(4)} netns {s0}"]
        system.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n")
        # as on the testbed: static routes and permanent neighbours, no ARP
        for ns, addr, peer, far in ((h0, "10.200.0.1", "10.200.0.2", mac(2)), (h1, "10.200.0.2", "10.200.0.1", mac(4))):
            system.run(["ip", "-n", ns, "-batch", "-"], input=f"link set lo up\nlink set fab0 mtu 9000 up\n"
                       f"addr add {addr}/32 dev fab0\nneigh replace {gw} lladdr {far} dev fab0 nud permanent\n"
                       f"route add {peer}/32 via {gw} dev fab0 onlink\n")
        sw = [f"link set {port} mtu 9000 up\nneigh replace {gw} lladdr {far} dev {port} nud permanent\n"
              f"route add {dst}/32 via {gw} dev {port} onlink\n"
              for port, dst, far in (("p1", "10.200.0.1", mac(1)), ("p2", "10.200.0.2", mac(3)))]
        # a switch needs an address of its own for routes via an on-link gateway (as the testbed's on lo)
        system.run(["ip", "-n", s0, "-batch", "-"], input="link set lo up\naddr add 10.201.0.1/32 dev lo\n" + "".join(sw))
        system.run(["ip", "netns", "exec", s0, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        recv = subprocess.Popen(["ip", "netns", "exec", h1, sys.executable, "-c", _RECEIVER, str(cores), str(PORT)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if recv.stdout is None or recv.stdout.readline().strip() != "ready":
            raise TestbedError("calibration: the receiver did not start")
        system.run(["ip", "netns", "exec", h0, sys.executable, "-c", _SENDER, str(cores), "10.200.0.2", str(PORT),
                    str(seconds)], timeout=60 + 5 * seconds)
        out, err = recv.communicate(timeout=60)
        try:
            total, dt = (float(x) for x in out.split())
        except ValueError:
            raise TestbedError(f"calibration: the receiver said {(out or err).strip()[:200]!r}") from None
    finally:
        if recv is not None and recv.poll() is None:
            recv.kill()
            recv.wait()
        system.run(["ip", "-batch", "-"], input="".join(f"netns del {x}\n" for x in (h0, h1, s0)), check=False)
    if dt <= 0 or total <= 0:
        raise TestbedError("calibration: no data crossed the probe's switch")
    return {"forwarding": 2 * total / dt, "streams": cores, "seconds": round(dt, 3), "hops": 2,
            "loadavg": os.getloadavg()[0], "time": time.time()}
