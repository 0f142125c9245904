"""Import time of a real 2,000-host fabric: ibnetdiscover + OpenSM's tables -> Fabric (aim: under 5 s).

The fabric is brought up in ibsim and routed by opensm (minhop), so the
inputs are the real tools' output: 125 leaves of 16 hosts under 8 spines.

    python bench/bench_import.py [--leaves 125] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from fabscope.fabric.exporters import write_ibsim
from fabscope.fabric.generators import xgft
from fabscope.fabric.ibtools import IbSim, have_ibsim
from fabscope.fabric.importers import import_fabric
from fabscope.fabric.io import read_json, write_json


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, default=125)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not have_ibsim():
        print("needs ibsim-utils, opensm and infiniband-diags", file=sys.stderr)
        return 1
    f = xgft((16, args.leaves), (1, 8))
    with tempfile.TemporaryDirectory() as tmp:
        net = os.path.join(tmp, "f.net")
        write_ibsim(f, net)
        t = time.perf_counter()
        with IbSim(net, workdir=os.path.join(tmp, "sim")) as sim:
            up = time.perf_counter() - t
            t = time.perf_counter()
            dump = sim.opensm("minhop")
            route = time.perf_counter() - t
            t = time.perf_counter()
            topo = os.path.join(tmp, "topo.txt")
            with open(topo, "w") as fh:
                fh.write(sim.run(["ibnetdiscover"], timeout=120).stdout)
            disc = time.perf_counter() - t
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            g = import_fabric(topo, dump)
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        write_json(g, os.path.join(tmp, "f.json"))
        wj = time.perf_counter() - t
        t = time.perf_counter()
        read_json(os.path.join(tmp, "f.json"))
        rj = time.perf_counter() - t
        size = (os.path.getsize(topo) + os.path.getsize(dump)) / 1e6
    print(f"fabric: {g.n_hosts} hosts, {g.n_switches} switches, {g.n_links // 2} cables "
          f"({size:.1f} MB of ibnetdiscover + opensm-lfts.dump)")
    print(f"ibsim up {up:.2f} s, opensm minhop {route:.2f} s, ibnetdiscover {disc:.2f} s")
    print(f"import (parse, build, tables, loop check): best {min(times):.2f} s of {args.repeat}  (aim < 5 s)")
    print(f"fabric JSON with tables: write {wj:.2f} s, read {rj:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
