"""The classic dragonfly table: minimal, Valiant and UGAL under uniform and worst-case traffic.

For each dragonfly and routing, shares of a host's injection link:

* *average*: every flow offered in full, the mean max-min share a host gets (what ``fabscope
  simulate`` prints as Average);
* *saturation*: the largest share of injection every host can offer that every flow is carried
  at, as a packet simulator measures its saturation throughput (UGAL choosing at that offered
  load, ``load=``: a link offered less than it carries has no queue to steer by).

Traffic: uniform random as flows, every host to every other at once (the fluid limit of each
packet to a random destination); the worst case of Kim et al. 2008, every host to the same host
of the next group (``shift`` by a*p).  Beside them what the analysis of the papers gives (Kim,
Dally, Scott, Abts 2008; Jiang, Kim, Dally 2009): uniform, minimal ~1 and Valiant ~1/2 (two
global cables a packet), UGAL ~ minimal; worst case, minimal 1/(a p) times the cables between two
groups (every flow of a group on the cables to the next), Valiant and UGAL ~1/2.  CPU seconds of
routing and solving beside each row.

    python bench/dragonfly_routing.py              # balanced dragonflies and a Slingshot-radix one (~4 CPU min)
    python bench/dragonfly_routing.py --quick      # the two smallest
    python bench/dragonfly_routing.py --dragonfly 32,16,17,24 --routing ugal-l ugal-g --worst-case   # rows alone
    python bench/dragonfly_routing.py --parts      # UGAL's worst-case saturation against parts=N
    python bench/dragonfly_routing.py --booksim PATH   # then the table beside BookSim2 (bench/booksim_dragonfly.py)
    python bench/dragonfly_routing.py --in-time    # the worst case as one round of 1 MiB messages in time
    python bench/dragonfly_routing.py --in-time --loads   # why UGAL's round in time is what it is

``--in-time`` runs the worst case as messages in the dynamic engine: every host sends 1 MiB to the
same host of the next group, all at once; the share is the vector over the makespan, against one
link's time.  Minimal and the static UGAL (one choice per flow, made before the run) in the
compiled engine; UGAL in time (each message chooses when posted, from the loads then:
``fabscope.dynamic.ugal``) in the compiled engine, then in the reference beside it (CPU of each,
and whether the two made the same choices; the reference up to 2,000 hosts).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabscope.fabric.generators import dragonfly
from fabscope.model.maxmin import maxmin
from fabscope.routing import make_routing

#: (a, p, h, g): balanced ones of the papers (a = 2p = 2h, g = a h + 1), and a Slingshot-radix one
#: (64-port switches: 16 hosts, 31 local and 17 global ports a switch; 24 groups)
FABRICS = [(4, 2, 2, 9), (6, 3, 3, 19), (8, 4, 4, 33), (32, 16, 17, 24)]
ENGINES = ("minimal", "valiant", "valiant:via=all", "ugal-l", "ugal-g")
#: all-to-all flows beyond which uniform traffic is left out (Valiant spreads each over g - 2 groups)
MAX_UNIFORM_FLOWS = 200_000
#: the parts a UGAL flow is placed in for the rows towards per-packet choice
UGAL_PARTS = 8
#: ``--in-time``: hosts beyond which the reference engine is not run beside the compiled one
MAX_REFERENCE_HOSTS = 2_000


def shares(f, s, d, engine: str, seed: int = 0) -> tuple[float, float]:
    """(average, smallest) max-min rate a host gets over its injection link, flows as routed."""
    r = make_routing(f, engine, seed=seed).routes(s, d)
    rate = maxmin(r.matrix(f.n_links), f.link_capacity)
    cap = f.link_capacity[0]
    per_host = np.bincount(s, weights=rate, minlength=f.n_hosts) / cap
    return float(per_host.mean()), float(rate.min() / cap)


def saturation(f, s, d, engine: str, per_host: int, parts: int = 1, seed: int = 0,
               steps: int = 8) -> tuple[float, float]:
    """(average, saturation) as shares of a host's injection link.  *average*: the mean max-min share,
    every flow offered in full; *saturation*: the largest share of injection a host can offer (split
    evenly over its ``per_host`` flows) that every flow is carried at, as a packet simulator finds its
    saturation throughput.  Oblivious routings: the busiest link's inverse load.  UGAL: the choices
    made at that offered load (``load=``), by bisection (``steps``), in ``parts`` parts a flow."""
    if not engine.startswith("ugal"):
        avg, low = shares(f, s, d, engine, seed)
        return avg, min(low * per_host, 1.0)
    spec = f"{engine}:parts={parts}"
    avg = shares(f, s, d, spec, seed)[0]

    def carried(x: float) -> bool:
        return shares(f, s, d, f"{spec},load={x / per_host!r}", seed)[1] * per_host >= x * (1 - 1e-9)

    if carried(1.0):
        return avg, 1.0
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if carried(mid) else (lo, mid)
    return avg, lo


def published(a: int, p: int, h: int, g: int, traffic: str, engine: str) -> str:
    """What the papers' analysis gives (Kim et al. 2008; Jiang et al. 2009), as shares of injection."""
    if traffic == "uniform":
        return "~1/2" if engine.startswith("valiant") else "~1"
    if engine == "minimal":
        cables = (a * h) // (g - 1)
        return f"{cables}/{a * p} = {cables / (a * p):.3f}"
    return "~1/2"


def in_time(fabrics, seed: int) -> None:
    from fabscope.dynamic.program import Program
    from fabscope.dynamic.run import run_program_on
    from fabscope.dynamic.ugal import run_ugal
    from fabscope.fabric import Placement

    print("| dragonfly | hosts | routing | choice | share (round) | share (mean message) | Valiant messages | CPU s "
          "| reference CPU s | same choices |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")

    def shares(out) -> str:
        took = out.msg_end - out.msg_post
        return f"{link / out.makespan:.3f} | {float(np.mean(link / took)):.3f}"

    size = float(1 << 20)
    for a, p, h, g in fabrics:
        f = dragonfly(a=a, p=p, h=h, g=g)
        n = f.n_hosts
        r = np.arange(n)
        prog = Program.from_rounds("worst case", n, [(r, (r + a * p) % n, size)])
        pl = Placement.block(f, n, ppn=1)
        link = size / f.link_capacity[0]
        name = f"a={a},p={p},h={h},g={g}"
        for engine in ("minimal", "ugal-l", "ugal-g"):
            t0 = time.process_time()
            out = run_program_on(f, pl, prog, engine, seed=seed).outcome
            choice = "none" if engine == "minimal" else "per flow, before the run"
            print(f"| {name} | {n:,} | {engine} | {choice} | {shares(out)} | - | {time.process_time() - t0:.2f} "
                  "| - | - |", flush=True)
        for mode in ("ugal-l", "ugal-g"):
            t0 = time.process_time()
            run = run_ugal(f, pl, prog, mode, seed=seed, engine="c")
            t1 = time.process_time()
            ref_cpu = same = "-"
            if n <= MAX_REFERENCE_HOSTS:
                ref = run_ugal(f, pl, prog, mode, seed=seed, engine="python")
                same = "yes" if np.array_equal(run.took_valiant, ref.took_valiant) else "NO"
                ref_cpu = f"{time.process_time() - t1:.2f}"
            print(f"| {name} | {n:,} | {mode} | per message, when posted | {shares(run.outcome)} | "
                  f"{int(run.took_valiant.sum())} | {t1 - t0:.2f} | {ref_cpu} | {same} |", flush=True)


def in_time_loads(fabrics, seed: int) -> None:
    """Why UGAL's round in time is what it is: the worst case as one round of 1 MiB messages, UGAL's
    choice per flow made before the run (the static one), and per message when posted, the messages
    listed by rank (each group's in turn, so they choose group by group) and in a seeded random order
    (the groups interleaved).  Beside the round's share, the load the choices leave on the cables from
    a group to the next (only minimal paths cross them: Valiant's third group is neither of a flow's
    two) and on the other global cables, in messages a cable, every message in flight: a cable shared
    by L messages' worth gives each 1/L of a link, and the round ends with the busiest one's."""
    from fabscope.dynamic.program import Program
    from fabscope.dynamic.run import run_program_on
    from fabscope.dynamic.ugal import run_ugal
    from fabscope.fabric import Placement

    print("| dragonfly | routing | choice | messages listed | share (round) | Valiant messages "
          "| next-group cables: busiest | next-group cables: mean | other global cables: mean | ratio of the means "
          "| CPU s |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    size = float(1 << 20)
    for a, p, h, g in fabrics:
        f = dragonfly(a=a, p=p, h=h, g=g)
        n = f.n_hosts
        sw_group = np.zeros(f.n_nodes, np.int64)
        sw_group[f.host_switch] = f.groups["group"]
        ls, ld = f.link_src, f.link_dst
        glob = (ls >= n) & (ld >= n) & (sw_group[ls] != sw_group[ld])
        nxt = glob & (sw_group[ld] == (sw_group[ls] + 1) % g)
        pl = Placement.block(f, n, ppn=1)
        link = size / f.link_capacity[0]

        def row(mode, choice, order, makespan, valiant, load, cpu):
            print(f"| a={a},p={p},h={h},g={g} | {mode} | {choice} | {order} | {link / makespan:.3f} | {valiant} | "
                  f"{load[nxt].max():.2f} | {load[nxt].mean():.2f} | {load[glob & ~nxt].mean():.2f} | "
                  f"{load[nxt].mean() / load[glob & ~nxt].mean():.2f} | {cpu:.2f} |", flush=True)

        r = np.arange(n)
        prog = Program.from_rounds("worst case", n, [(r, (r + a * p) % n, size)])
        for mode in ("ugal-l", "ugal-g"):
            t0 = time.process_time()
            routes = make_routing(f, mode, seed=seed).routes(r, (r + a * p) % n)
            load = np.bincount(routes.link, weights=routes.weight, minlength=f.n_links)
            out = run_program_on(f, pl, prog, mode, seed=seed).outcome
            row(mode, "per flow, before the run", "by rank", out.makespan, "-", load, time.process_time() - t0)
        for order in ("by rank", "random"):
            r = np.arange(n) if order == "by rank" else np.random.default_rng(seed).permutation(n)
            prog = Program.from_rounds("worst case", n, [(r, (r + a * p) % n, size)])
            for mode in ("ugal-l", "ugal-g"):
                t0 = time.process_time()
                run = run_ugal(f, pl, prog, mode, seed=seed, engine="c")
                cpu = time.process_time() - t0
                pp, paths = run.msg_path, run.paths
                cnt = paths.indptr[pp + 1] - paths.indptr[pp]
                at = np.repeat(paths.indptr[pp], cnt) + np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
                res, w = paths.res[at], paths.weight[at]
                load = np.bincount(res[res < f.n_links], weights=w[res < f.n_links], minlength=f.n_links)
                row(mode, "per message, when posted", order, run.makespan, int(run.took_valiant.sum()), load, cpu)


def classic(fabrics, seed: int, engines=ENGINES, traffics=("uniform", "worst case")) -> None:
    print("| dragonfly | hosts | traffic | routing | average | saturation | published | CPU s |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for a, p, h, g in fabrics:
        f = dragonfly(a=a, p=p, h=h, g=g)
        n = f.n_hosts
        i = np.arange(n)
        pats = {"worst case": (i, (i + a * p) % n, 1)}
        if n * (n - 1) <= MAX_UNIFORM_FLOWS:
            src, dst = np.meshgrid(i, i, indexing="ij")
            pats = {"uniform": (src[src != dst], dst[src != dst], n - 1), **pats}
        for traffic, (s, d, per_host) in pats.items():
            if traffic not in traffics:
                continue
            for engine in engines:
                # parts=8 costs 8 placements: left out where all-to-all has many flows
                for parts in (1, UGAL_PARTS) if engine.startswith("ugal") and len(s) <= 20_000 else (1,):
                    t0 = time.process_time()
                    avg, sat = saturation(f, s, d, engine, per_host, parts, seed)
                    name = engine if parts == 1 else f"{engine}:parts={parts}"
                    print(f"| a={a},p={p},h={h},g={g} | {n:,} | {traffic} | {name} | {avg:.3f} | {sat:.3f} | "
                          f"{published(a, p, h, g, traffic, engine)} | {time.process_time() - t0:.2f} |", flush=True)


def parts_sweep(fabrics, seed: int) -> None:
    """UGAL's worst-case average and saturation against the parts a flow is placed in."""
    counts = (1, 2, 4, 8, 16)
    print("| dragonfly | routing | " + " | ".join(f"parts={n}" for n in counts) + " | CPU s |")
    print("| --- | --- | " + " | ".join("---:" for _ in counts) + " | ---: |")
    for a, p, h, g in fabrics:
        f = dragonfly(a=a, p=p, h=h, g=g)
        i = np.arange(f.n_hosts)
        for engine in ("ugal-l", "ugal-g"):
            t0 = time.process_time()
            cells = []
            for n in counts:
                if f.n_hosts > 5_000 and n > 8:          # the 12,288-host one: a minute a cell beyond
                    cells.append("-")
                    continue
                avg, sat = saturation(f, i, (i + a * p) % f.n_hosts, engine, 1, n, seed)
                cells.append(f"{avg:.3f} / {sat:.3f}")
            print(f"| a={a},p={p},h={h},g={g} | {engine} | " + " | ".join(cells) +
                  f" | {time.process_time() - t0:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--in-time", action="store_true")
    ap.add_argument("--loads", action="store_true", help="with --in-time: UGAL's cable loads, messages by rank and "
                    "in a random order")
    ap.add_argument("--parts", action="store_true", help="UGAL's saturation against parts=N")
    ap.add_argument("--booksim", help="BookSim2's source folder: then the table beside it")
    ap.add_argument("--dragonfly", nargs="+", metavar="A,P,H,G", help="these dragonflies instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--routing", nargs="+", choices=ENGINES, default=list(ENGINES), help="these routings only")
    ap.add_argument("--worst-case", action="store_true", help="the worst case only (no uniform traffic)")
    args = ap.parse_args()
    fabrics = FABRICS[:2] if args.quick else FABRICS
    if args.dragonfly:
        try:
            fabrics = [tuple(int(x) for x in d.split(",")) for d in args.dragonfly]
        except ValueError:
            ap.error(f"--dragonfly takes A,P,H,G (four whole numbers), got {' '.join(args.dragonfly)}")
        if any(len(d) != 4 for d in fabrics):
            ap.error("--dragonfly takes A,P,H,G (four whole numbers)")
    if args.in_time and args.loads:
        in_time_loads(fabrics if args.dragonfly else FABRICS, args.seed)
    elif args.in_time:
        in_time(fabrics if args.dragonfly else FABRICS, args.seed)
    elif args.parts:
        parts_sweep(fabrics, args.seed)
    else:
        classic(fabrics, args.seed, args.routing, ("worst case",) if args.worst_case else ("uniform", "worst case"))
    if args.booksim:
        import booksim_dragonfly              # the bench folder, first on the path when run as a script

        print()
        booksim_dragonfly.main(["--booksim", args.booksim])


if __name__ == "__main__":
    main()
