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
"""

import json
import sys
import time


def main(argv):
    import simgrid

    with open(argv[1]) as fh:
        prob = json.load(fh)
    cfg = ["fabscope", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
           "--cfg=contexts/guard-size:0", "--log=root.thresh:critical"]
    cfg += [f"--cfg={c}" for c in prob.get("cfg", [])]
    e = simgrid.Engine(cfg)
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
    comms_spec = prob["comms"]
    finish = [None] * len(comms_spec)

    def launcher():
        comms = [simgrid.Comm.sendto_async(hosts[s], hosts[d], int(b)) for s, d, b in comms_spec]
        left = list(range(len(comms)))
        live = list(comms)
        while live:
            i = simgrid.Comm.wait_any(live)
            finish[left[i]] = e.clock
            del live[i]
            del left[i]

    simgrid.Actor.create("launcher", hosts[0], launcher)
    t0 = time.perf_counter()
    e.run()
    json.dump({"finish": finish, "seconds": time.perf_counter() - t0}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
