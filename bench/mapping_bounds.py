"""How far from optimal are topo and Scotch?  Lower bounds beside both, per case of bench_mapping.

    .venv/bin/python bench/mapping_bounds.py [--scotch-seeds 5] [--case I2,F2]     # from the checkout's root

Per case: hop-bytes and the busiest host link (bytes / 1e6) of topo and of
Scotch (best of N seeds, set up as docs/mapping.md says), and the lower bounds
of fabscope.mapping.bounds, which no mapping goes below.  The goal,
20 % below Scotch on hop-bytes or on the busiest link, is out of reach on a
case where both bounds exceed 0.8 x Scotch's figures ("infeasible"); the
busiest-link bound covers host links only, so it proves a case infeasible
only where Scotch's busiest link is a host link.

    .venv/bin/python bench/mapping_bounds.py --node-send 364,754 --case T6,I3,F3

With ``--node-send R,...`` the busiest-host-link bound of a case is also
raised to the exact least bytes the node holding rank R sends
(``bounds.node_send_bound``, an integer programme: under a second to three
minutes per rank on the 1,024-rank mesh; on a stencil, whose optima are
many and alike, it can run for far longer, so name the cases), and the set
of ranks that reaches it is printed.
"""

from __future__ import annotations

import argparse

from bench_mapping import CASES, _scotch_ok, _setup
from fabscope.mapping.api import map_ranks
from fabscope.mapping.bounds import Bounds, bounds, node_send_bound
from fabscope.mapping.metrics import evaluate, link_loads


def host_link_peak(f, m, g) -> float:
    sh = m.target.slot_host
    load = link_loads(f, sh[m.slot[g.src]], sh[m.slot[g.dst]], g.bytes)
    indptr, order = f.host_uplinks
    ups = order[indptr[m.target.nodes]]
    return float(max(load[ups].max(), load[ups ^ 1].max()))


def gap(x: float, bound: float) -> str:
    """How far above its bound a figure is."""
    return f"{100 * (x / bound - 1):+.0f}%" if bound > 0 else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scotch-seeds", type=int, default=5)
    ap.add_argument("--case")
    ap.add_argument("--node-send", help="comma-separated ranks: exact bytes their node sends at least")
    a = ap.parse_args()
    exact = [int(r) for r in a.node_send.split(",")] if a.node_send else []
    sends: dict[tuple, float] = {}
    algs = ["topo"] + (["scotch"] if _scotch_ok() else [])
    print(f"{'case':<5} {'graph':<20} {'fabric':<24} {'alg':<7} {'hop-bytes':>10} {'bound':>10} {'gap':>6}"
          f" {'max link MB':>11} {'host link MB':>12} {'bound':>8} {'gap':>6}  verdict")
    for cid, comm, fabric, ppn in CASES:
        if a.case and cid not in a.case.split(","):
            continue
        f, g, t = _setup(comm, fabric, ppn)
        b = bounds(g, t)
        spn = set(int(x) for x in t.slots_per_node)
        if exact and len(spn) == 1 and t.n_slots == g.n:         # every node full: it holds exactly p ranks
            for r in exact:
                key = (comm, next(iter(spn)), r)
                if key not in sends:
                    value, members = node_send_bound(g, key[1], r)
                    sends[key] = value
                    print(f"# {cid}: the node holding rank {r} sends at least {value / 1e6:.3f} MB "
                          f"(reached by ranks {', '.join(map(str, members))})", flush=True)
                b = Bounds(b.hop_bytes, max(b.busiest_host_link, sends[key]))
        figs = {}
        for alg in algs:
            m = map_ranks(g, t, alg, scotch_seeds=a.scotch_seeds)
            e = evaluate(m, g)
            figs[alg] = (e.hop_bytes, e.max_link_load, host_link_peak(f, m, g))
        for alg, (hb, ml, hl) in figs.items():
            verdict = ""
            if alg == "scotch":
                if figs["topo"][0] <= 0.8 * hb or figs["topo"][1] <= 0.8 * ml:
                    verdict = "goal met"
                elif b.hop_bytes > 0.8 * hb and b.busiest_host_link > 0.8 * ml:
                    verdict = "infeasible: both bounds above 0.8 x Scotch"
                else:
                    room_hb = 100 * (1 - b.hop_bytes / hb)
                    room_l = 100 * (1 - b.busiest_host_link / ml)
                    verdict = f"open: bounds leave {room_hb:.0f}% (hop-bytes) / {room_l:.0f}% (max link)"
            print(f"{cid:<5} {g.name:<20} {f.name:<24} {alg:<7} {hb:>10.4g} {b.hop_bytes:>10.4g} "
                  f"{gap(hb, b.hop_bytes):>6} {ml / 1e6:>11.2f} {hl / 1e6:>12.2f} "
                  f"{b.busiest_host_link / 1e6:>8.2f} {gap(ml, b.busiest_host_link):>6}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
