"""Do ping-pong pairs that share a link stay in phase?  Measured on the testbed, in time.

The leaf-pairs question: on a 2:1 oversubscribed tree, leaf pairs
measure about 1.2-1.5 times the static and the lock-step dynamic model, which both
have the pairs that share an uplink send their messages at the same moments, so
each gets half the uplink (``compare``'s default now draws the phases independently).  If real pairs drift out of phase, one
pair's message crosses the uplink while the other's answer comes back the other
way, and both get more.

While the real benchmark runs leaf pairs, one sampler per switch namespace
reads ``/proc/net/dev`` (per network namespace: every port of that switch)
every few milliseconds.  A switch port's received bytes are what its host sent.
For every two hosts whose messages share a link (by the testbed's routes), the
script prints how often they sent at the same time: the share of the samples in
which host a was sending that host b was sending too.  Lock-step pairs give
about 1, pairs in opposite phase about 0, independent ones about the share of
the time b sends (about 0.5 in a ping-pong).  It also prints the pairs' measured rates
beside ``fabscope compare``'s default model.

    sudo .venv/bin/python bench/testbed_phase.py [--fabric fat-tree:k=4,levels=2,up=2] [--rate auto:40Mbit]

Figures are taken on whatever else the machine is running; say so when quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from fabscope.cli import main
from fabscope.result import Result
from fabscope.testbed import state, system
from fabscope.testbed.counters import plan_of
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

SAMPLER = r"""
import os, sys, time
stop = sys.argv[1]; dt = float(sys.argv[2])
out = []
while not os.path.exists(stop):
    t = time.monotonic()
    with open("/proc/net/dev") as fh:
        rows = fh.read().splitlines()[2:]
    out.append(f"{t:.6f} " + " ".join(r.split(":")[0].strip() + "=" + r.split(":")[1].split()[0] for r in rows))
    time.sleep(max(0.0, dt - (time.monotonic() - t)))
print("\n".join(out))
"""


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def sample(ns: str, stop: str, dt: float, into: dict) -> None:
    """Sample ``/proc/net/dev`` of namespace ``ns`` every ``dt`` s until the file ``stop`` exists."""
    p = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", SAMPLER, stop, str(dt)],
                       capture_output=True, text=True, timeout=1200)
    rows = []
    for ln in p.stdout.splitlines():
        t, *kv = ln.split()
        rows.append((float(t), {k: int(v) for k, v in (x.split("=") for x in kv)}))
    into[ns] = rows


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2,up=2")
    ap.add_argument("--rate", default="auto:40Mbit")
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--iterations", default="10")
    ap.add_argument("--dt", type=float, default=0.005, help="sampling interval, s (default 0.005)")
    a = ap.parse_args()
    why = system.unavailable_reason()
    if why:
        print(f"testbed_phase: {why}", file=sys.stderr)
        return 1
    name = "ac5"
    auto = a.rate.startswith("auto:")
    rate = parse_rate(a.rate[5:] if auto else a.rate)
    with tempfile.TemporaryDirectory(prefix="bench-phase-") as tmp:
        os.environ["FABSCOPE_TESTBED_DIR"] = os.path.join(tmp, "state")
        st = up(name, a.fabric, None if auto else rate, max_rate=rate)
        try:
            p = plan_of(st)
            f = p.fabric
            leaf = int(np.bincount(f.groups["leaf"]).max())
            print(f"{a.fabric}: {f.n_hosts} hosts, {st.rate * 8 / 1e6:g}Mbit, load average {os.getloadavg()[0]:.1f}")
            out = os.path.join(tmp, "lp.jsonl")
            samples: dict = {}
            stop = os.path.join(tmp, "stop")
            sw = [p.netns(v) for v in range(f.n_hosts, f.n_nodes)]
            threads = [threading.Thread(target=sample, args=(ns, stop, a.dt, samples)) for ns in sw]
            for t in threads:
                t.start()
            t0 = time.monotonic()
            rc = quiet(["measure", "--testbed", name, "--timeout", "300", "leaf-pairs", "--leaf-size", str(leaf),
                        "--size", a.size, "--iterations", a.iterations, "--out", out])
            t1 = time.monotonic()
            open(stop, "w").close()
            for t in threads:
                t.join()
            if rc != 0:
                raise SystemExit("measure failed")
            res = os.path.join(tmp, "lp.json")
            quiet(["compare", out, "--fabric", name, "-o", res])
            r = Result.read_json(res)
            # bytes each host sent, per sample, from its switch port's received bytes
            host_port = {}
            for h in range(f.n_hosts):
                l_in = int(np.flatnonzero(f.link_src == h)[0]) ^ 1      # the switch -> host link's source end
                host_port[h] = (p.netns(int(f.link_src[l_in])), p.ifname(l_in))
            grid = None
            series = {}
            for h, (ns, port) in host_port.items():
                rows = [(t, d.get(port, 0)) for t, d in samples.get(ns, [])]
                ts = np.array([t for t, _ in rows])
                bs = np.array([b for _, b in rows], float)
                if grid is None:
                    grid = np.arange(max(ts[0], t0), min(ts[-1], t1), a.dt)
                series[h] = np.interp(grid, ts, bs)
            link_rate = float(f.link_capacity[f.link_src < f.n_hosts].max()) / st.efficiency
            active = {h: np.diff(s) / a.dt > 0.3 * link_rate for h, s in series.items()}
            _, router = state.load_routing(name)
            idx = f.host_index
            src = np.array([idx[x] for x in r.pairs["src_host"]])
            dst = np.array([idx[x] for x in r.pairs["dst_host"]])
            scen = np.asarray(r.pairs["scenario"])
            routes = router.routes(np.r_[src, dst], np.r_[dst, src])
            n = len(src)
            shared = []
            for k in range(n):
                for m in range(k + 1, n):
                    if scen[k] != scen[m]:
                        continue
                    for (a_, la), (b_, lb) in (((src[k], k), (src[m], m)), ((src[k], k), (dst[m], m + n)),
                                               ((dst[k], k + n), (src[m], m)), ((dst[k], k + n), (dst[m], m + n))):
                        common = set(routes.link[routes.flow == la].tolist()) & set(routes.link[routes.flow == lb].tolist())
                        sw_links = [x for x in common if f.link_src[x] >= f.n_hosts and f.link_dst[x] >= f.n_hosts]
                        if sw_links:
                            both = active[a_] & active[b_]
                            shared.append((f.host_names[a_], f.host_names[b_], int(active[a_].sum()),
                                           float(both.sum() / max(1, active[a_].sum())),
                                           float(active[b_].mean()), f.link_name(sw_links[0])))
            ratio = np.asarray(r.pairs["ratio"], float)
            from fabscope.diagnose.timemodel import model_line

            print(f"model: {model_line(r.meta)}")
            print(f"leaf pairs: {n} pairs, measured / model (compare's default): mean {ratio.mean():.2f}, "
                  f"range {ratio.min():.2f}-{ratio.max():.2f}; {len(grid)} samples of {a.dt * 1e3:g} ms "
                  f"over {t1 - t0:.1f} s")
            if shared:
                co = np.array([s[3] for s in shared])
                base = np.array([s[4] for s in shared])
                print(f"{len(shared)} pairs of hosts whose messages share a switch link: when one sends, the other "
                      f"sends too in {co.mean():.2f} of the samples (median {np.median(co):.2f}, "
                      f"range {co.min():.2f}-{co.max():.2f}); independent senders would give {base.mean():.2f}, "
                      "lock-step 1, opposite phase 0")
                for s in sorted(shared, key=lambda s: s[3])[:6]:
                    print(f"    {s[0]} & {s[1]} over {s[5]}: {s[3]:.2f} (a sending in {s[2]} samples)")
        finally:
            down(name)
    return 0


if __name__ == "__main__":
    sys.exit(run())
