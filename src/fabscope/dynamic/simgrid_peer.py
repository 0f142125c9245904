"""Run one flow set in SimGrid and print every communication's completion time.

This file is a script for the *system* Python, where Debian's
``python3-simgrid`` lives (it is not importable from a virtual environment):
``/usr/bin/python3 simgrid_peer.py problem.json`` reads the problem and prints
``{"finish": [...], "seconds": wall}`` as JSON.  It needs only the standard
library and SimGrid; :mod:`fabscope.dynamic.simgrid` writes the problem.

The problem: ``hosts`` (names), ``links`` (``[name, bytes/s, shared]``; a
link that is not shared is a FATPIPE: it caps each flow without sharing),
``routes`` (``[src host, dst host, [link indices]]``) and ``comms``
(``[src host, dst host, bytes]``), all started at time 0.  Every link has
latency 0; SimGrid runs CM02 with cross-traffic off: plain max-min sharing.

Or, instead of hosts, links and routes, ``fat_tree``: ``[levels, down,
up, count, bytes/s]``, SimGrid's own fat-tree zone (its D-mod-K routing),
whose hosts are numbered as SimGrid numbers them.

The communications are waited for by one actor per few of them: a single
actor calling ``wait_any`` on all of them costs time quadratic in their
number (16,384 on a fat tree: minutes instead of seconds).
"""

import json
import sys
import time


PER_ACTOR = 8


def full_zone(simgrid, prob):
    """A Full zone with one link per resource and the explicit routes; returns the hosts."""
    zone = simgrid.NetZone.create_full_zone("fabric")
    hosts = [zone.create_host(name, 1e9) for name in prob["hosts"]]
    links = []
    for name, bw, shared in prob["links"]:
        lk = zone.create_link(name, float(bw))
        if not shared:
            lk.set_sharing_policy(simgrid.Link.SharingPolicy.FATPIPE, None)
        lk.set_latency(0.0)
        lk.seal()
        links.append(lk)
    for s, d, ids in prob["routes"]:
        zone.add_route(hosts[s].netpoint, hosts[d].netpoint, None, None,
                       [simgrid.LinkInRoute(links[i]) for i in ids], False)
    zone.seal()
    return hosts


def fat_tree(simgrid, spec):
    """SimGrid's fat-tree zone ``[levels, down, up, count, bytes/s]``; returns the hosts in SimGrid's order."""
    # SPLITDUPLEX: one link each way, as fabscope's directed links (SHARED would halve a full-duplex cable)
    levels, down, up, count, bw = spec
    made = {}

    def netpoint(zone, coord, ident):
        h = zone.create_host(f"h{ident}", 1e9).seal()
        made[ident] = h
        return h.netpoint, None

    root = simgrid.NetZone.create_full_zone("root")
    ft = simgrid.NetZone.create_fatTree_zone("fabric", root, simgrid.FatTreeParams(levels, down, up, count),
                                             simgrid.ClusterCallbacks(netpoint, None, None), float(bw), 0.0,
                                             simgrid.Link.SharingPolicy.SPLITDUPLEX)
    ft.seal()
    root.seal()
    return [made[i] for i in range(len(made))]


def main(argv):
    import simgrid

    with open(argv[1]) as fh:
        prob = json.load(fh)
    cfg = ["fabscope", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
           "--cfg=contexts/guard-size:0", "--log=root.thresh:critical"]
    cfg += [f"--cfg={c}" for c in prob.get("cfg", [])]
    e = simgrid.Engine(cfg)
    if "fat_tree" in prob:
        hosts = fat_tree(simgrid, prob["fat_tree"])
    else:
        hosts = full_zone(simgrid, prob)
    comms_spec = prob["comms"]
    finish = [None] * len(comms_spec)

    def launcher(lo, hi):
        live = [simgrid.Comm.sendto_async(hosts[s], hosts[d], int(b)) for s, d, b in comms_spec[lo:hi]]
        left = list(range(lo, hi))
        while live:
            i = simgrid.Comm.wait_any(live)
            finish[left[i]] = e.clock
            del live[i]
            del left[i]

    for lo in range(0, len(comms_spec), PER_ACTOR):
        simgrid.Actor.create(f"launcher{lo}", hosts[0], launcher, lo, min(lo + PER_ACTOR, len(comms_spec)))
    t0 = time.perf_counter()
    e.run()
    json.dump({"finish": finish, "seconds": time.perf_counter() - t0}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
