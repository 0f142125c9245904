"""Route agreement with the real subnet manager, and Itasca under each OpenSM engine.

For each fabric and OpenSM engine: export the fabric to ibsim, route it with
``opensm -o -R <engine>``, import ``ibnetdiscover`` + ``opensm-lfts.dump``,
and count pairs whose routes are identical
  * to the tables read back from the switches (``dump_fts``), all pairs;
  * to ``ibtracert``, hop by hop, on sampled pairs;
  * to fabscope's own engine on the generated fabric, all pairs.
Then (``--itasca``) run seed 000's patterns on Itasca's real tables under
each engine and print the near/far structure beside the seed and fabscope's
own engines.

    python bench/route_agreement.py            # agreement table (about a minute)
    python bench/route_agreement.py --itasca   # plus Itasca's near/far figures (a few minutes)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric import Placement
from fabscope.fabric.exporters import write_ibsim
from fabscope.fabric.generators import fat_tree, itasca, torus
from fabscope.fabric.ibtools import IbSim, have_ibsim, parse_ibtracert
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts, read_lfts
from fabscope.routing.agreement import compare_routes, unroutable
from fabscope.leafmatrix import leaf_matrix
from fabscope.model.simulate import simulate
from fabscope.routing import make_routing
from fabscope.seeds import ITASCA_MERGE
from fabscope.traffic.spec import make_traffic


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    s, d = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(n)))
    return s[s != d], d[s != d]


def named_paths(fabric, routes, n: int) -> np.ndarray:
    """Paths as (n, hops) arrays of node*512+port codes, by node name order of ``names``."""
    order = np.argsort(routes.flow, kind="stable")
    f, l = routes.flow[order], routes.link[order]
    starts = np.r_[0, np.flatnonzero(np.diff(f)) + 1]
    hop = np.arange(len(f)) - np.repeat(starts, np.diff(np.r_[starts, len(f)]))
    m = np.full((n, 16), -1, np.int64)
    m[f, hop] = fabric.link_src[l].astype(np.int64) * 512 + fabric.link_src_port[l]
    return m


def agreement_with_fabscope(f, g, engine: str) -> tuple[int, int]:
    """Pairs routed identically by fabscope's ``engine`` on generated ``f`` and the tables of imported ``g``."""
    src, dst = all_pairs(f.n_hosts)
    # the imported fabric orders switches its own way: compare paths by node name and port
    rename = np.array([g.node_index[n] for n in f.node_names])
    ok = ~unroutable(g, g.lft, rename[src], rename[dst])
    src, dst = src[ok], dst[ok]
    hs = rename[src]
    hd = rename[dst]
    a = named_paths(g, make_routing(g, "tables").routes(hs, hd), len(src))
    rf = make_routing(f, engine).routes(src, dst)
    b = named_paths(f, rf, len(src))
    node, port = np.divmod(b, 512)
    b = np.where(b >= 0, rename[np.maximum(node, 0)] * 512 + port, -1)
    return len(src), int(np.all(a == b, axis=1).sum())


def run_engine(sim, f, engine, extra=(), samples=20, ours=None, seed=0):
    t0 = time.perf_counter()
    row = {"fabric": f.name, "engine": engine + (" -a spines" if extra == "spine-roots" else "")}
    if extra == "spine-roots":         # root GUIDs for updn/ftree: the top switches, found before routing
        topo0 = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout)
        roots = f"{sim.workdir}/roots.guids"
        with open(roots, "w") as fh:
            fh.writelines(f"{n.guid:#018x}\n" for n in topo0.nodes.values() if "spine" in n.desc)
        extra = ("-a", roots)
    try:
        dump = sim.opensm(engine, extra)
    except FabricError as err:
        row["error"] = str(err).split(";")[0]
        return row, None
    row["opensm_s"] = round(time.perf_counter() - t0, 2)
    topo = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout)
    t1 = time.perf_counter()
    g = build_fabric(topo, read_lfts(dump), name=f"{f.name}/{engine}")
    row["import_s"] = round(time.perf_counter() - t1, 2)
    src, dst = all_pairs(g.n_hosts)
    row["unroutable"] = int(unroutable(g, g.lft, src, dst).sum())
    fts = build_fabric(topo, parse_lfts(sim.run(["dump_fts"]).stdout, "dump_fts"))
    row["dump_fts"] = compare_routes(g, g.lft, fts.lft)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, g.n_hosts, 4 * samples)
    dst = (src + rng.integers(1, g.n_hosts, 4 * samples)) % g.n_hosts
    ok = ~unroutable(g, g.lft, src, dst)
    src, dst = src[ok][:samples], dst[ok][:samples]
    samples = len(src)
    r = make_routing(g, "tables").routes(src, dst)
    same = 0
    for k in range(samples):
        out = sim.run(["ibtracert", str(g.host_lid[src[k]]), str(g.host_lid[dst[k]])]).stdout
        same += parse_ibtracert(out) == [(g.node_names[g.link_src[l]], int(g.link_src_port[l])) for l in r.path(k)]
    row["ibtracert"] = (samples, same)
    if ours:
        row["fabscope"] = (ours, *agreement_with_fabscope(f, g, ours))
    return row, g


CASES = [
    ("fat-tree k=4 levels=3", lambda: fat_tree(k=4, levels=3), [("minhop", (), "minhop"), ("updn", (), "minhop"),
                                                                 ("ftree", (), "dmodk")]),
    ("fat-tree 16 leaves x 16, 8 spines", lambda: fat_tree(k=16, levels=2, up=8),
     [("minhop", (), "minhop"), ("updn", (), "minhop"), ("ftree", (), "dmodk")]),
    ("torus 4x4x2, 2 hosts/router", lambda: torus((4, 4, 2), hosts_per_router=2, capacity=3071e6),
     [("dor", (), "dor"), ("minhop", (), "minhop")]),
    ("itasca", itasca, [("minhop", (), "minhop"), ("updn", (), "minhop"), ("updn", "spine-roots", "minhop"),
                        ("dfsssp", (), "minhop"), ("sssp", (), "minhop"), ("ftree", (), None),
                        ("ftree", "spine-roots", None)]),
]


def fmt(t) -> str:
    return "-" if t is None else f"{t[-1]}/{t[-2]}"


def itasca_figures(fabrics: dict[str, object], seeds: int = 10) -> list[dict]:
    rows = []
    for label, fab, routing in fabrics:
        p = Placement.block(fab, fab.n_hosts, ppn=1)
        lp = simulate(fab, p, make_traffic("leaf-pairs", fab, p, 1e6), routing)
        lm = leaf_matrix(lp, fab)
        bs = lm.block_summary("min")
        iu = np.triu_indices(len(lm.leaves), 1)
        far_min = lm.min[iu][~lm.near[iu]] if lm.near is not None else lm.min[iu]
        rp_rows = []
        for s in range(seeds):
            rp = simulate(fab, p, make_traffic("random-pairs", fab, p, 1e6, seed=s), routing, seed=s)
            rp_rows.append({r.label: (r.max, r.avg, r.min) for r in rp.summary(merge=ITASCA_MERGE)})
        same = np.array([r["Same Leaf"] for r in rp_rows])
        diff = np.array([r["Diff Leafs"] for r in rp_rows])
        rows.append({"engine": label,
                     "leaf_pairs_min_matrix": {k: tuple(round(x) for x in v) for k, v in bs.items()},
                     "far_leaf_pairs_at_full_rate": round(float(np.mean(far_min >= 0.95 * 3071)), 3),
                     "random_same_leaf": tuple(round(float(x)) for x in (same[:, 0].max(), same[:, 1].mean(), same[:, 2].min())),
                     "random_diff_leafs": tuple(round(float(x)) for x in (diff[:, 0].max(), diff[:, 1].mean(), diff[:, 2].min())),
                     "random_diff_leafs_seed0": tuple(round(float(x)) for x in diff[0])})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--itasca", action="store_true", help="also Itasca's near/far figures under each engine")
    ap.add_argument("--samples", type=int, default=20, help="ibtracert pairs per engine")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args()
    if not have_ibsim():
        print("needs ibsim-utils, opensm and infiniband-diags", file=sys.stderr)
        return 1
    rows, itasca_tables = [], {}
    print(f"{'fabric':<36}{'engine':<18}{'unroutable':>11}{'vs dump_fts':>16}{'vs ibtracert':>14}  "
          f"{'vs fabscope engine':<24}{'import s':>9}")
    for name, make, engines in CASES:
        f = make()
        with tempfile.TemporaryDirectory() as tmp:
            write_ibsim(f, f"{tmp}/f.net")
            with IbSim(f"{tmp}/f.net", workdir=f"{tmp}/sim") as sim:
                for engine, extra, ours in engines:
                    row, g = run_engine(sim, f, engine, extra, args.samples, ours)
                    row["fabric"] = name
                    rows.append(row)
                    if "error" in row:
                        print(f"{name:<36}{row['engine']:<18}  {row['error']}")
                        continue
                    if name == "itasca":
                        itasca_tables[row["engine"]] = g
                    fs = row.get("fabscope")
                    print(f"{name:<36}{row['engine']:<18}{row['unroutable']:>11}{fmt(row['dump_fts']):>16}"
                          f"{fmt(row['ibtracert']):>14}  "
                          f"{(fs[0] + ' ' + fmt(fs)) if fs else '-':<24}{row['import_s']:>9}")
    out = {"agreement": rows}
    if args.itasca:
        f = itasca()
        cases = [(f"opensm {e}", g, "tables") for e, g in itasca_tables.items()
                 if not unroutable(g, g.lft, *all_pairs(g.n_hosts)).any()]
        cases += [(f"fabscope {e}", f, e) for e in ("minhop", "ecmp", "adaptive")]
        out["itasca"] = itasca_figures(cases)
        print("\nItasca, seed 000's patterns, 1 rank/node, 1 MB (MB/s, Max/Avg/Min)")
        print(f"{'engine':<18}{'leaf-pairs near (min matrix)':>30}{'leaf-pairs far (min matrix)':>30}"
              f"{'random Same Leaf':>20}{'random Diff Leafs':>20}")
        print(f"{'seed 000 measured':<18}{'~3000 blocks of 9':>30}{'3035 max / 1826 min':>30}"
              f"{'3085/3078/2984':>20}{'3071/1226/588':>20}")
        for r in out["itasca"]:
            m = r["leaf_pairs_min_matrix"]
            near, far = m["Near-set pairs"], m["Far pairs"]
            print(f"{r['engine']:<18}{'/'.join(map(str, near)):>30}{'/'.join(map(str, far)):>30}"
                  f"{'/'.join(map(str, r['random_same_leaf'])):>20}{'/'.join(map(str, r['random_diff_leafs'])):>20}"
                  f"   far pairs at full rate: {100 * r['far_leaf_pairs_at_full_rate']:.0f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
