"""History: does ``history check`` flag the nights it should and no other; how fast the databases are.

    .venv/bin/python bench/bench_history.py                     # both parts
    .venv/bin/python bench/bench_history.py --parts detect --nights 30
    .venv/bin/python bench/bench_history.py --parts speed --pairs 100000 --nights 30

detect: 30 nights on Itasca (min-hop, one rank per node).  Each night is two
runs, random pairs (8 rounds of 536 pairs) and leaf pairs
(``leaf-pairs:nodes_per_leaf=4``, 8,844 pairs in 67 rounds), "measured" as
the flow model gives them (:func:`fabscope.diagnose.synthetic.synthetic`,
every round's pairs sharing the links) times lognormal noise of 3%, and on
each night 0.5% of the pairs jittered to x0.3..0.9 (a daemon waking up, a
late rank).  From night 20 on, one leaf-director cable is at half its
capacity; on night 25 only, one host's NIC delivers 60%.  Every run is added
to a history (SQLite; the night's two runs added together, so one
tomography sees both), and ``check`` runs
on each run against the 7 runs of its test before it.  The script prints
the nights flagged and what was named, and exits 1 unless the flagged
nights are exactly 20 and 25 with the cable and the host named.

speed: 30 nights of 100,000 pairs (Itasca hosts, random pairs, one plan
modeled once, fresh noise each night) added without the tomography to
SQLite, DuckDB (``duckdb:``) and a throw-away PostgreSQL cluster
(:mod:`fabscope.history.throwaway`); then the queries of ``history show``
(a class, a host, a pair over all 30 nights), ``list``, and the read of one
night's pairs that ``check`` does.  Times are wall seconds on this machine,
one run each: noisy where the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.fabric.generators import itasca
from fabscope.fabric.placement import Placement
from fabscope.history.check import check
from fabscope.history.store import History
from fabscope.traffic.spec import make_traffic


def say(*a) -> None:
    print(*a, flush=True)


def random_pairs(f, rounds: int, seed: int):
    rng = np.random.default_rng(seed)
    hs, hd, sc = [], [], []
    for r in range(rounds):
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist()
        hd += p[1::2].tolist()
        sc += [r] * (f.n_hosts // 2)
    return np.array(hs), np.array(hd), np.array(sc)


def leaf_pairs(f):
    pl = Placement.block(f, f.n_hosts, 1)
    t = make_traffic("leaf-pairs:nodes_per_leaf=4", f, pl, 1 << 20)
    _, first = np.unique(t.pair, return_index=True)
    return pl.host[t.src[first]].astype(np.int64), pl.host[t.dst[first]].astype(np.int64), t.scenario[first]


def night_result(f, plan, test: str, faults: dict[int, float], seed: int, noise: float, jitter: float):
    hs, hd, sc = plan
    m = synthetic(f, hs, hd, sc, faults, noise, seed=seed)
    res = as_result(m)
    rng = np.random.default_rng(10_000 + seed)
    bw = res.pairs["bandwidth"]
    j = rng.random(len(bw)) < jitter
    bw[j] *= rng.uniform(0.3, 0.9, int(j.sum()))
    res.meta["test"] = test
    res.meta["source"] = f"bench_history.py synthetic night, seed {seed}"
    return res


def pick_cable(f, plans) -> int:
    """A leaf-director cable both tests cross often, that the tomography can tell from the others."""
    from fabscope.diagnose.pairmodel import PairModel

    cover = np.zeros(f.n_links // 2)
    for hs, hd, sc in plans:
        pl = PairModel(f, hs, hd, sc).pair_links.tocoo()
        hit = np.unique(pl.row * (f.n_links // 2) + pl.col // 2)
        cover += np.bincount(hit % (f.n_links // 2), minlength=f.n_links // 2)
    a, b = f.link_src[0::2], f.link_dst[0::2]
    lv = np.r_[np.zeros(f.n_hosts), f.switch_level]
    leaf_up = np.flatnonzero((a >= f.n_hosts) & (b >= f.n_hosts) & (np.minimum(lv[a], lv[b]) == 1))
    return int(leaf_up[np.argmax(cover[leaf_up])])


def detect(nights: int, bad_night: int, host_night: int, noise: float, jitter: float) -> int:
    from fabscope.diagnose.tomography import cable_name

    f = itasca()
    plans = {"leaf-pairs": leaf_pairs(f)}
    bad = pick_cable(f, [random_pairs(f, 8, 0), plans["leaf-pairs"]])
    host = "node0100" if "node0100" in f.host_index else f.host_names[100]
    hi = f.host_index[host]
    host_cable = int(np.flatnonzero((f.link_src[0::2] == hi) | (f.link_dst[0::2] == hi))[0])
    say(f"detect: Itasca, {nights} nights; cable {cable_name(f, bad)} at 1/2 from night {bad_night}; "
        f"host {host} at 0.6 on night {host_night} only; noise {noise:.0%}, {jitter:.1%} of pairs jittered")
    path = os.path.join(tempfile.mkdtemp(), "history.db")
    t_add = t_check = 0.0
    flagged: dict[int, list[str]] = {}
    with History(path, create=True) as h:
        h.set_fabric(f)
        for n in range(1, nights + 1):
            faults = {bad: 0.5} if n >= bad_night else {}
            if n == host_night:
                faults[host_cable] = 0.6
            items = []
            for k, test in enumerate(("random-pairs", "leaf-pairs")):
                plan = random_pairs(f, 8, n) if test == "random-pairs" else plans[test]
                res = night_result(f, plan, test, faults, seed=100 * n + k, noise=noise, jitter=jitter)
                items.append((res, {"time": f"2026-10-{n:02d}T02:00Z" if n <= 31 else f"2026-11-{n - 31:02d}T02:00Z",
                                    "origin": f"night {n} {test}"}))
            t0 = time.perf_counter()
            ids = h.add_many(items)         # one night: one tomography of both tests
            t_add += time.perf_counter() - t0
            names = []
            for rid in ids:
                if n == 1:
                    continue
                t0 = time.perf_counter()
                rep = check(h, rid)
                t_check += time.perf_counter() - t0
                names += [f"{a.what} {a.name}" + (f" ({a.cable})" if a.what == "host" else "")
                          + f" x{a.test.factor:.2f} from run {a.first_run}" for a in rep.alarms]
                notes = [f for f in rep.findings if not f.alarm and f.first_run not in (None, rid)]
                if notes and n in (bad_night + 1, nights):
                    say(f"  night {n:2d} {rep.run.test}: not alarms: " + "; ".join(
                        f"{x.what} {x.name} slow since run {x.first_run}" for x in notes))
            if names:
                flagged[n] = names
            say(f"  night {n:2d}: " + ("; ".join(sorted(set(names))) if names else "nothing"))
    say(f"detect: {2 * nights} runs added in {t_add:.1f} s (tomography included), "
        f"{2 * (nights - 1)} checks in {t_check:.1f} s")
    want_cable, want_host = cable_name(f, bad), host
    ok = (set(flagged) == {bad_night, host_night}
          and all(want_cable in x for x in flagged[bad_night] if x.startswith("cable"))
          and any(want_cable in x for x in flagged[bad_night])
          and any(f"host {want_host}" in x for x in flagged[host_night])
          and not any(x.startswith("cable") and want_cable not in x for v in flagged.values() for x in v))
    say(f"detect: flagged nights {sorted(flagged)}; expected [{bad_night}, {host_night}] with the cable and the "
        f"host named: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def speed(nights: int, n_pairs: int, dbs: list[str]) -> None:
    from fabscope.diagnose.pairmodel import PairModel
    from fabscope.result import Result

    f = itasca()
    rounds = -(-n_pairs // (f.n_hosts // 2))
    hs, hd, sc = random_pairs(f, rounds, 7)
    hs, hd, sc = hs[:n_pairs], hd[:n_pairs], sc[:n_pairs]
    t0 = time.perf_counter()
    base = PairModel(f, hs, hd, sc).bandwidth()
    say(f"speed: {n_pairs} Itasca pairs ({rounds} rounds) modeled once in {time.perf_counter() - t0:.1f} s; "
        f"{nights} nights of them with fresh 3% noise")
    names = np.array(f.host_names)
    cls = f.classify(hs, hd)

    def night(n: int) -> Result:
        bw = base * np.exp(np.random.default_rng(n).normal(0, 0.03, n_pairs))
        return Result(meta={"kind": "measure", "test": "random-pairs", "fabric": f.name},
                      class_labels=f.class_labels,
                      pairs={"src_host": names[hs], "dst_host": names[hd], "cls": cls,
                             "bytes": np.full(n_pairs, 1 << 20), "bandwidth": bw, "scenario": sc})

    cluster = None
    folder = tempfile.mkdtemp()
    rows = []
    try:
        for kind in dbs:
            if kind == "sqlite":
                url = os.path.join(folder, "h.db")
            elif kind == "duckdb":
                url = "duckdb:" + os.path.join(folder, "h.duckdb")
            else:
                from fabscope.history import throwaway

                cluster = cluster or throwaway.start()
                url = cluster.create("bench")
            t_in = []
            with History(url, create=True) as h:
                h.set_fabric(f)
                for n in range(nights):
                    res = night(n)
                    t0 = time.perf_counter()
                    h.add(res, time=f"2026-10-{n + 1:02d}T02:00Z", diagnose=False)
                    t_in.append(time.perf_counter() - t0)
                q = {}
                from fabscope.history import series

                for label, fn in (("show --class", lambda: series.class_series(h, "Far Leafs")),
                                  ("show --host", lambda: series.host_series(h, str(names[hs[0]]))),
                                  ("show --pair", lambda: series.pair_series(h, str(names[hs[0]]), str(names[hd[0]]))),
                                  ("list", lambda: h.runs()),
                                  ("one night's pairs", lambda: h.pairs(nights))):
                    t0 = time.perf_counter()
                    out = fn()
                    q[label] = (time.perf_counter() - t0, len(out) if not isinstance(out, dict) else len(out["bandwidth"]))
                total = int(h.db.scalar("SELECT count(*) FROM pairs"))
            size = (os.path.getsize(url.split(":", 1)[-1]) / 1e6 if kind != "postgresql" else None)
            rows.append((kind, sum(t_in), np.median(t_in), total, size, q))
            say(f"  {kind:<10} ingest {nights} x {n_pairs} pairs: {sum(t_in):6.1f} s (median night {np.median(t_in):.2f} s, "
                f"{total / sum(t_in):,.0f} pairs/s)" + (f", file {size:.0f} MB" if size else ""))
            say("             " + ", ".join(f"{k} {v[0]:.2f} s ({v[1]} rows)" for k, v in q.items()))
    finally:
        if cluster is not None:
            cluster.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="detect,speed")
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--bad-night", type=int, default=20)
    ap.add_argument("--host-night", type=int, default=25)
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--jitter", type=float, default=0.005)
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--dbs", default="sqlite,duckdb,postgresql")
    a = ap.parse_args()
    status = 0
    parts = a.parts.split(",")
    if "detect" in parts:
        status |= detect(a.nights, a.bad_night, a.host_night, a.noise, a.jitter)
    if "speed" in parts:
        speed(a.nights, a.pairs, a.dbs.split(","))
    return status


if __name__ == "__main__":
    sys.exit(main())
