"""Route agreement with the real subnet manager, and Itasca under each OpenSM engine.

For each fabric and OpenSM engine: export the fabric to ibsim, route it with
``opensm -o -R <engine>``, import ``ibnetdiscover`` + ``opensm-lfts.dump``,
and count pairs whose routes are identical
  * to the tables read back from the switches (``dump_fts``), all pairs;
  * to ``ibtracert``, hop by hop, on sampled pairs;
  * to fabscope's own engine (minhop, dor, ftree, updn), all pairs, run on the
    generated fabric and on the fabric imported back;
where OpenSM refuses a fabric (falls back to minhop), whether fabscope's
engine refuses it too.
Then (``--itasca``) run seed 000's patterns on Itasca's real tables under
each engine and print the near/far structure beside the seed and fabscope's
own engines.

    python bench/route_agreement.py --quick    # small versions of the four shapes (seconds)
    python bench/route_agreement.py            # 648-host 3-level, 576-host 2:1 tree, torus, irregular
    python bench/route_agreement.py --itasca   # plus Itasca under each engine and its near/far figures
    python bench/route_agreement.py --more     # shapes neither the tests nor the cases above use (under a minute)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import numpy as np

from fabscope.errors import FabricError, RoutingError
from fabscope.fabric import Placement
from fabscope.fabric.exporters import write_ibsim
from fabscope.fabric.generators import director, dragonfly, fat_tree, hypercube, itasca, mesh, torus, xgft
from fabscope.fabric.ibtools import IbSim, have_ibsim, parse_ibtracert
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts, read_lfts
from fabscope.routing.agreement import compare_routes, unroutable
from fabscope.report.leafmatrix import leaf_matrix
from fabscope.model.simulate import simulate
from fabscope.routing import make_routing
from fabscope.seeds import ITASCA_MERGE
from fabscope.traffic.spec import make_traffic
from fabscope.whatif import cut_cables


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
    """Pairs routed identically by fabscope's ``engine`` on generated ``f`` and the tables of imported ``g``.

    Pairs the imported tables leave unroutable are left out (counted by ``unroutable_agreement``).
    """
    src, dst = all_pairs(f.n_hosts)
    # the imported fabric orders switches its own way: compare paths by node name and port
    # a switch whose cables were all cut is not discovered: it lies on no path, so it maps nowhere
    rename = np.array([g.node_index.get(n, -1) for n in f.node_names])
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


def agreement_on_imported(g, engine: str) -> tuple[int, int]:
    """Pairs fabscope's ``engine`` run on the imported fabric ``g`` routes as ``g``'s own tables do.

    With tables on both sides every pair counts (a pair both leave unroutable is identical).
    """
    r = make_routing(g, engine)
    lft = getattr(r, "lft", None)
    if lft is not None:
        return compare_routes(g, g.lft, lft)
    src, dst = all_pairs(g.n_hosts)
    a = named_paths(g, make_routing(g, "tables").routes(src, dst), len(src))
    b = named_paths(g, r.routes(src, dst), len(src))
    return len(src), int(np.all(a == b, axis=1).sum())


def refuses(f, engine: str) -> str | None:
    """fabscope's refusal of ``engine`` on ``f`` (one line), or None if it routes."""
    try:
        make_routing(f, engine)
    except RoutingError as err:
        return str(err)
    return None


def roots_file(sim, names) -> tuple[str, ...]:
    """``-a FILE`` naming the switches ``names`` by GUID, as read from ibnetdiscover before routing."""
    topo0 = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout)
    path = f"{sim.workdir}/roots-{len(names)}.guids"
    with open(path, "w") as fh:
        fh.writelines(f"{n.guid:#018x}\n" for n in topo0.nodes.values() if n.desc in set(names))
    return ("-a", path)


def run_engine(sim, f, engine, roots=(), samples=20, ours=None, seed=0):
    """Route with ``opensm -R engine`` (``roots``: switch names for ``-a``), import, and count agreement."""
    t0 = time.perf_counter()
    label = engine + (f" -a {roots[0]}.." if len(roots) > 1 else f" -a {roots[0]}" if roots else "")
    row = {"fabric": f.name, "engine": label}
    extra = roots_file(sim, roots) if roots else ()
    try:
        dump = sim.opensm(engine, extra)
    except FabricError as err:
        row["error"] = "opensm falls back to minhop" if "did not route with" in str(err) else str(err).split(";")[0]
        if ours:
            why = refuses(f, ours)
            row["fabscope_refuses"] = why
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
        t2 = time.perf_counter()
        row["fabscope_imported"] = agreement_on_imported(g, ours)
        row["fabscope_s"] = round(time.perf_counter() - t2, 2)
        if row["unroutable"] == 0 or refuses(f, ours) is None:
            row["fabscope_generated"] = agreement_with_fabscope(f, g, ours)
        row["fabscope"] = ours
    if engine == "ftree" and "fabscope_generated" in row and refuses(f, "dmodk") is None:
        row["dmodk_generated"] = agreement_with_fabscope(f, g, "dmodk")
        if refuses(g, "dmodk") is None:
            row["dmodk_imported"] = agreement_on_imported(g, "dmodk")
    return row, g


def _irregular():
    """A 3-level k=4 fat tree with four cables cut (a leaf uplink, two of a middle switch's, a top one)."""
    g, _ = cut_cables(fat_tree(k=4, levels=3), ["s1-0000[5]", "s2-0005[4]", "s2-0005[8]", "s3-0002[1]"])
    return g.with_params(generator="irregular")


def _against_names():
    """The 2:1 tree with each leaf's hosts cabled in reverse name order (port 1: the last name), as
    clusters often are: an import numbers hosts by name, so host order no longer follows the ports."""
    import dataclasses

    f = xgft((24, 24), (1, 12))
    per = 24
    hn = [f"h{(i // per) * per + (per - 1 - i % per):04d}" for i in range(f.n_hosts)]
    return dataclasses.replace(f, node_names=tuple(hn) + f.node_names[f.n_hosts:],
                               name=f.name + ", hosts cabled against name order")


#: (label, fabric, [(opensm engine, root switch names for -a, fabscope engine)])
FOUR = ["minhop", "dor", "ftree", "updn"]
CASES = [
    ("3-level tree, 648 hosts", lambda: xgft((18, 6, 6), (1, 9, 6)), [(e, (), e) for e in FOUR]),
    ("2:1 tree, 24 leaves x 24, 12 spines", lambda: xgft((24, 24), (1, 12)), [(e, (), e) for e in FOUR]),
    ("torus 4x4x2, 2 hosts/router", lambda: torus((4, 4, 2), hosts_per_router=2, capacity=3071e6),
     [(e, (), e) for e in FOUR] + [("updn", ("r(0,0,0)",), "updn:roots=r(0,0,0)"), ("dor", (), "dor:tie=opensm")]),
    ("irregular (3-level k=4 tree, 4 cables cut)", _irregular, [(e, (), e) for e in FOUR]),
    ("2:1 tree, hosts cabled against names", _against_names, [("ftree", (), "ftree")]),
]
QUICK = [
    ("3-level tree k=4 (64 hosts)", lambda: fat_tree(k=4, levels=3), [(e, (), e) for e in FOUR]),
    ("2:1 tree, 4 leaves x 4, 2 spines", lambda: fat_tree(k=4, levels=2, up=2), [(e, (), e) for e in FOUR]),
    ("torus 4x4x2, 2 hosts/router", CASES[2][1], CASES[2][2]),
    ("irregular (3-level k=4 tree, 4 cables cut)", _irregular, CASES[3][2]),
]


def _cut(make, cables, label):
    """A generated fabric with ``cables`` cut (a ``node[port]`` or a whole switch)."""
    return lambda: cut_cables(make(), cables)[0].with_params(generator=label)


def _tops(make, prefix):
    f = make()
    return tuple(n for n in f.node_names[f.n_hosts:] if n.startswith(prefix))


def _with_roots(make, prefix, engines=FOUR, skip=()):
    roots = tuple(n for n in _tops(make, prefix) if n not in skip)
    return [(e, (), e) for e in engines] + [("ftree", roots, "ftree:roots=" + "+".join(roots))]


#: shapes the tests and CASES do not use: other arities and level counts, 3:1, parallel cables,
#: odd and 2-D tori, a mesh, a hypercube, a dragonfly, a cut cable at each level, a spine gone
MORE = [
    ("2-level k=6 tree (36 hosts)", lambda: fat_tree(k=6, levels=2), [(e, (), e) for e in FOUR]),
    ("3-level k=3 tree (27 hosts)", lambda: fat_tree(k=3, levels=3), [(e, (), e) for e in FOUR]),
    ("XGFT m=6,4,3 w=1,3,2 (72 hosts)", lambda: xgft((6, 4, 3), (1, 3, 2)), [(e, (), e) for e in FOUR]),
    ("3:1 tree, 8 leaves x 12, 4 spines", lambda: xgft((12, 8), (1, 4)), [(e, (), e) for e in FOUR]),
    ("2-level k=4, 2 cables per pair", lambda: fat_tree(k=4, levels=2, links_per_pair=2),
     [(e, (), e) for e in FOUR]),
    ("3-level k=4, 2 cables per pair", lambda: fat_tree(k=4, levels=3, links_per_pair=2), [("ftree", (), "ftree")]),
    ("XGFT m=4,4,4 w=1,2,2, 2 cables per pair", lambda: xgft((4, 4, 4), (1, 2, 2), links_per_pair=2),
     [("ftree", (), "ftree")]),
    ("2:1 k=6 tree, 2 cables per pair", lambda: fat_tree(k=6, levels=2, up=3, links_per_pair=2),
     [("ftree", (), "ftree")]),
    ("director, radix 12 (2 cables per pair)", lambda: director(12), [(e, (), e) for e in FOUR]),
    ("Itasca with 3 leaves of 4 nodes", lambda: itasca(leaves=3, nodes_per_leaf=4), [(e, (), e) for e in FOUR]),
    ("torus 3x3x3", lambda: torus((3, 3, 3), capacity=3071e6),
     [(e, (), e) for e in FOUR] + [("updn", ("r(0,0,0)",), "updn:roots=r(0,0,0)")]),
    ("torus 6x4, 2 hosts/router", lambda: torus((6, 4), hosts_per_router=2, capacity=3071e6),
     [("dor", (), "dor"), ("dor", (), "dor:tie=opensm"), ("minhop", (), "minhop"),
      ("updn", ("r(0,0)",), "updn:roots=r(0,0)")]),
    ("mesh 4x4", lambda: mesh((4, 4), capacity=3071e6), [("dor", (), "dor"), ("minhop", (), "minhop"),
                                                       ("updn", (), "updn")]),
    ("hypercube d=4, 2 hosts/router", lambda: hypercube(4, hosts_per_router=2, capacity=3071e6),
     [("dor", (), "dor"), ("minhop", (), "minhop"), ("updn", (), "updn")]),
    ("dragonfly a=4,p=2,h=2,g=9", lambda: dragonfly(4, 2, 2, 9),
     [("minhop", (), "minhop"), ("dor", (), "dor"), ("updn", (), "updn")]),
    ("2-level k=6, a leaf uplink cut", _cut(lambda: fat_tree(k=6, levels=2), ["s1-0002[8]"], "cut"),
     _with_roots(lambda: fat_tree(k=6, levels=2), "s2-")),
    ("XGFT m=6,4,3, a middle uplink cut", _cut(lambda: xgft((6, 4, 3), (1, 3, 2)), ["s2-0003[5]"], "cut"),
     _with_roots(lambda: xgft((6, 4, 3), (1, 3, 2)), "s3-")),
    ("3-level k=3, a top cable cut", _cut(lambda: fat_tree(k=3, levels=3), ["s3-0004[2]"], "cut"),
     _with_roots(lambda: fat_tree(k=3, levels=3), "s3-")),
    ("3-level k=3, a top switch gone", _cut(lambda: fat_tree(k=3, levels=3), ["s3-0001"], "cut"),
     _with_roots(lambda: fat_tree(k=3, levels=3), "s3-", skip=("s3-0001",))),
]


def itasca_cases():
    from fabscope.fabric.generators.itasca import itasca as make

    f = make()
    spines = [n for n in f.node_names[f.n_hosts:] if "spine" in n]
    roots = "+".join(spines)
    return ("itasca", make, [("minhop", (), "minhop"), ("dor", (), "dor"), ("updn", (), "updn"),
                             ("updn", tuple(spines), f"updn:roots={roots}"),
                             ("dfsssp", (), None), ("sssp", (), None), ("ftree", (), "ftree"),
                             ("ftree", tuple(spines), f"ftree:roots={roots}")])


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


_SIMGRID_ROUTES = r"""
import json, sys, simgrid
dims, pairs = json.loads(sys.stdin.read())
n = 1
for k in dims:
    n *= k
xml = ("<?xml version='1.0'?><!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>"
       "<platform version='4.1'><cluster id='t' prefix='n' suffix='' radical='0-%d' speed='1Gf' bw='1GBps' "
       "lat='0us' topology='TORUS' topo_parameters='%s'/></platform>" % (n - 1, ",".join(map(str, dims))))
open(sys.argv[1], "w").write(xml)
e = simgrid.Engine(["sg", "--log=root.thres:critical"])
e.load_platform(sys.argv[1])
hs = {h.name: h for h in e.all_hosts}
out = []
for a, b in pairs:
    cur, seq = a, [a]
    for l in hs["n%d" % a].route_to(hs["n%d" % b])[0]:
        x, y = (int(v) for v in l.name.split("_from_")[1].rsplit("_", 1)[0].split("_to_"))
        cur = y if cur == x else x
        seq.append(cur)
    out.append(seq)
print(json.dumps(out))
"""


def simgrid_agreement(dims, pairs: int | None = None, seed: int = 0) -> tuple[int, int, int] | None:
    """(pairs, identical under dor:tie=simgrid, identical under dor:tie=plus) against SimGrid's torus zone.

    Router by router, one host per router; all pairs, or a random matching of ``pairs``.  Runs SimGrid's
    Python bindings under the system Python (Debian's python3-simgrid); None when they are missing.
    """
    import shutil
    import subprocess

    py = shutil.which("python3", path="/usr/bin")
    if not py or subprocess.run([py, "-c", "import simgrid"], capture_output=True).returncode:
        return None
    f = torus(dims)
    n = f.n_hosts
    # SimGrid numbers hosts with the first dimension fastest; fabscope with the last
    c = f.coords.astype(np.int64)
    sg_id = np.zeros(n, np.int64)
    stride = 1
    for i, k in enumerate(dims):
        sg_id += c[:, i] * stride
        stride *= k
    of_sg = np.argsort(sg_id)
    if pairs is None:
        src, dst = all_pairs(n)
    else:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(n)
        src, dst = perm[: n // 2], perm[n // 2:]
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([py, "-c", _SIMGRID_ROUTES, f"{tmp}/torus.xml"], capture_output=True, text=True,
                             input=json.dumps([list(dims), [[int(sg_id[a]), int(sg_id[b])] for a, b in zip(src, dst)]]))
    if res.returncode:
        raise RuntimeError(res.stderr.strip().splitlines()[-1])
    theirs = [tuple(int(of_sg[v]) for v in seq) for seq in json.loads(res.stdout)]
    out = []
    for tie in ("simgrid", "plus"):
        r = make_routing(f, f"dor:tie={tie}").routes(src, dst)
        same = 0
        for k in range(len(src)):
            nodes = [int(src[k])] + [int(f.link_dst[l]) - f.n_hosts for l in r.path(k)[1:-1]]
            same += tuple(nodes) == theirs[k]
        out.append(same)
    return len(src), out[0], out[1]


def short(spec: str | None) -> str:
    """``updn:roots=a+b+c+...`` -> ``updn:roots=a+..(18)`` for the table."""
    if not spec or len(spec) <= 24 or "roots=" not in spec:
        return spec or "-"
    head, roots = spec.split("roots=", 1)
    parts = roots.split("+")
    return f"{head}roots={parts[0]}+..({len(parts)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--itasca", action="store_true", help="also Itasca, and its near/far figures under each engine")
    ap.add_argument("--quick", action="store_true", help="small versions of the four shapes (under a minute)")
    ap.add_argument("--more", action="store_true", help="only: shapes the tests and the default cases do not use")
    ap.add_argument("--samples", type=int, default=20, help="ibtracert pairs per engine")
    ap.add_argument("--simgrid", action="store_true", help="only: dor's tie rules against SimGrid's torus zone")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args()
    if args.simgrid:
        print("dor against SimGrid's torus zone (routers crossed), pairs identical / pairs checked")
        for dims, pairs in (((4, 4, 2), None), ((6, 4, 4), None), ((16, 8, 8), 512)):
            got = simgrid_agreement(dims, pairs)
            if got is None:
                print("needs SimGrid's Python bindings for /usr/bin/python3 (Debian: python3-simgrid)")
                return 1
            what = "all pairs" if pairs is None else f"random matching, {got[0]} pairs"
            print(f"torus {'x'.join(map(str, dims)):<8} {what:<28} tie=simgrid {got[1]}/{got[0]}   "
                  f"tie=plus {got[2]}/{got[0]}")
        return 0
    if not have_ibsim():
        print("needs ibsim-utils, opensm and infiniband-diags", file=sys.stderr)
        return 1
    rows, itasca_tables = [], {}
    print("pairs identical / pairs checked; 'generated': fabscope's engine on the generated fabric, "
          "'imported': on the fabric read back from ibsim")
    print(f"{'fabric':<44}{'opensm engine':<22}{'unroutable':>10}{'vs dump_fts':>16}{'vs ibtracert':>13}  "
          f"{'fabscope engine':<24}{'generated':>18}{'imported':>18}")
    cases = MORE if args.more else (QUICK if args.quick else CASES) + ([itasca_cases()] if args.itasca else [])
    for name, make, engines in cases:
        f = make()
        with tempfile.TemporaryDirectory() as tmp:
            write_ibsim(f, f"{tmp}/f.net")
            with IbSim(f"{tmp}/f.net", workdir=f"{tmp}/sim") as sim:
                for engine, roots, ours in engines:
                    row, g = run_engine(sim, f, engine, roots, args.samples, ours)
                    row["fabric"] = name
                    rows.append(row)
                    if "error" in row:
                        ref = row.get("fabscope_refuses")
                        tail = ("" if not ours else f"; fabscope's {ours} refuses too: {ref}" if ref
                                else f"; fabscope's {ours} routes it (OpenSM does not)")
                        print(f"{name:<44}{row['engine']:<22}  {row['error']}{tail}")
                        continue
                    if name == "itasca":
                        itasca_tables[row["engine"]] = g
                    print(f"{name:<44}{row['engine']:<22}{row['unroutable']:>10}{fmt(row['dump_fts']):>16}"
                          f"{fmt(row['ibtracert']):>13}  {short(row.get('fabscope')):<24}"
                          f"{fmt(row.get('fabscope_generated')):>18}{fmt(row.get('fabscope_imported')):>18}")
                    if "dmodk_generated" in row:
                        print(f"{'':<44}{'':<22}{'':>10}{'':>16}{'':>13}  {'dmodk (textbook)':<24}"
                              f"{fmt(row['dmodk_generated']):>18}{fmt(row.get('dmodk_imported')):>18}")
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
