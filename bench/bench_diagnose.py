"""Diagnosis: accuracy on injected faults, no false alarm from routing, speed; criticality sweep times.

    .venv/bin/python bench/bench_diagnose.py                 # everything, 50 trials per setting
    .venv/bin/python bench/bench_diagnose.py --trials 10 --parts accuracy
    .venv/bin/python bench/bench_diagnose.py --parts routing,speed,critical --critical-cables 200
    .venv/bin/python bench/bench_diagnose.py --parts models,nominal     # the program in time vs the snapshot
    .venv/bin/python bench/bench_diagnose.py --parts nominal --rounds 5 --nominal full,fast,fast-it5
    .venv/bin/python bench/bench_diagnose.py --parts periodic        # why no periodic extrapolation
    .venv/bin/python bench/bench_diagnose.py --parts sensitivity     # a capacity moved by 1e-12: the pairs' figures
    .venv/bin/python bench/bench_diagnose.py --parts nightly          # the nightly job at 2,197 hosts, 109,800 pairs
    .venv/bin/python bench/bench_diagnose.py --parts nightly --fabric fat-tree:k=4,levels=3 --rounds 4   # a quick look
    .venv/bin/python bench/bench_diagnose.py --parts nightly --nights 8 --history-db /tmp/nightly.db  # builds it
    .venv/bin/python bench/bench_diagnose.py --parts nightly --nights 8 --history-db /tmp/nightly.db \
        --check-repeat 3 --peer-src ../other-checkout/src            # then times history check alone, beside a peer

Accuracy: on Itasca (min-hop) and a 3-level fat tree of 2,197 hosts (k=13,
D-mod-K), the pairs the plan (``make_plan``, budget 10 min) chooses are
"measured" as the flow model gives them with injected faults (1, 3, 10
cables at x0.25..0.6 chosen among all cables, host cables included, plus 1
slow host) times lognormal noise of 5% and 10%.  A suspect is right when
its cable, or a cable it cannot be told from, is a fault.  Recall is given
over all faults and over the faults on cables the planned pairs cross (a
cable no route crosses cannot be seen by any measurement).  Fixed seeds:
trial t injects with seed t and draws noise with seed 1000 + t.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from fabscope.diagnose.measured import Measured
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.plan import bench_random_pairs, make_plan
from fabscope.diagnose.synthetic import random_faults, synthetic
from fabscope.diagnose.tomography import diagnose
from fabscope.fabric.io import load_fabric

FABRICS = {"itasca": "itasca", "ft3": "fat-tree:k=13,levels=3"}


def say(*a) -> None:
    print(*a, flush=True)


def accuracy(spec: str, trials: int, faults_list, noises) -> None:
    f = load_fabric(spec)
    t0 = time.perf_counter()
    plan = make_plan(f, budget=600)
    hs, hd, r = plan.pairs
    pm = PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(plan.size)))
    crossed = np.zeros(f.n_links // 2, bool)
    crossed[pm.routes.link // 2] = True
    s = plan.summary()
    say(f"\n== accuracy on {f.name}: {f.n_hosts} hosts, {f.n_links // 2} cables, routing {pm.router.name}; plan: "
        f"{s['jobs']} jobs, {s['rounds']} rounds, {s['pairs']} pairs, ~{s['estimated_seconds']} s to run "
        f"(planned in {time.perf_counter() - t0:.1f} s); {int((~crossed).sum())} cables no planned pair crosses")
    say(f"{'faults':>7} {'noise':>6} {'trials':>7} {'precision':>10} {'recall':>7} {'recall(seen)':>13} "
        f"{'suspects/trial':>15} {'s/trial':>8}")
    for nf in faults_list:
        for noise in noises:
            tp = fp = fn = fn_seen = n_seen = n_sus = 0
            t1 = time.perf_counter()
            for t in range(trials):
                faults = random_faults(f, nf, 1, seed=t)
                m = synthetic(f, hs, hd, r, faults, noise, seed=1000 + t, model=pm)
                d = diagnose(m, pm.router)
                truth = set(faults)
                for sus in d.suspects:
                    group = {sus["link"] // 2} | {_cable_id(f, n) for n in sus["tied"]}
                    if group & truth:
                        tp += 1
                    else:
                        fp += 1
                found = set()
                for sus in d.suspects:
                    found |= {sus["link"] // 2} | {_cable_id(f, n) for n in sus["tied"]}
                fn += len(truth - found)
                seen = {c for c in truth if crossed[c]}
                n_seen += len(seen)
                fn_seen += len(seen - found)
                n_sus += len(d.suspects)
            n_faults = trials * (nf + 1)
            prec = tp / (tp + fp) if tp + fp else 1.0
            say(f"{nf:>5}+1 {noise:6.0%} {trials:>7} {prec:10.3f} {1 - fn / n_faults:7.3f} "
                f"{1 - fn_seen / max(n_seen, 1):13.3f} {n_sus / trials:15.2f} "
                f"{(time.perf_counter() - t1) / trials:8.2f}")


_NAMES: dict[int, dict[str, int]] = {}


def _cable_id(f, name: str) -> int:
    from fabscope.diagnose.tomography import cable_name

    table = _NAMES.setdefault(id(f), {cable_name(f, c): c for c in range(f.n_links // 2)})
    return table[name]


def routing_false_alarm(noise: float = 0.05, seed: int = 7) -> None:
    """Itasca, min-hop, no fault: seed 000's leaf pairs (8 nodes per leaf, rounds of a tournament)."""
    from fabscope.fabric.placement import Placement
    from fabscope.traffic.patterns import leaf_pairs

    f = load_fabric("itasca")
    pl = Placement.block(f, f.n_hosts, ppn=1)
    tr = leaf_pairs(f, pl, 1 << 20, nodes_per_leaf=8)
    fw = tr.src < tr.dst
    first = np.unique(tr.pair, return_index=True)[1]
    hs, hd, sc = pl.host[tr.src[first]], pl.host[tr.dst[first]], tr.scenario[first]
    t0 = time.perf_counter()
    m = synthetic(f, hs, hd, sc, {}, noise, seed=seed, routing="minhop")
    d = diagnose(m, "minhop")
    res = d.to_result()
    cls = np.asarray(res.pairs["cls"])
    far = cls == f.class_labels.index("Far Leafs")
    lab = np.asarray(res.pairs["label"])
    ratio_far = np.asarray(res.pairs["modeled"])[far] / f.link_capacity[0]
    say(f"\n== no fault, Itasca min-hop, leaf-pairs (8 nodes per leaf, {m.n_pairs} pairs in {m.n_scenarios} rounds), "
        f"noise {noise:.0%}: {len(d.suspects)} suspects in {time.perf_counter() - t0:.1f} s")
    say(f"far-leaf pairs: {int(far.sum())}; modeled at {ratio_far.min():.2f}..{ratio_far.max():.2f} of the link "
        f"rate; labelled: " + ", ".join(f"{k} {int(np.sum(lab[far] == k))}" for k in np.unique(lab[far])))
    say("all pairs: " + ", ".join(f"{k} {v}" for k, v in d.counts.items()))


def speed(n_rounds: int = 50, seed: int = 3) -> None:
    f = load_fabric("fat-tree:k=13,levels=3")
    s, dd, r = bench_random_pairs(f.n_hosts, 1, n_rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, n_rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[dd, d2], np.r_[r, r2 + n_rounds]
    t0 = time.perf_counter()
    faults = random_faults(f, 3, 1, seed=seed)
    m = synthetic(f, hs, hd, rr, faults, 0.05, seed=seed)
    t1 = time.perf_counter()
    d = diagnose(m)
    t2 = time.perf_counter()
    found = {x["link"] // 2 for x in d.suspects}
    say(f"\n== speed: {m.n_pairs} measured pairs on {f.n_hosts} hosts ({f.name}), 3 faults + 1 slow host, 5% noise: "
        f"diagnose {t2 - t1:.1f} s (making the measurements {t1 - t0:.1f} s); "
        f"{len(found & set(faults))} of {len(faults)} faults found, {len(found - set(faults))} false")


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for (the dynamic model's processes)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _timed(label: str, goal: float | None, goal_what: str, fn) -> Any:
    """Run ``fn``, print its CPU beside wall seconds against its goal; return what it returned."""
    import os

    c0, w0 = _cpu(), time.perf_counter()
    out = fn()
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    verdict = "" if goal is None else (f"; goal: under {goal:g} {goal_what}: "
                                       f"{'met' if (cpu if goal_what == 'CPU s' else wall) < goal else 'NOT met'}")
    say(f"  {label:<44} CPU {cpu:6.1f} s, wall {wall:6.1f} s (load average {os.getloadavg()[0]:.1f}){verdict}")
    return out


def nightly(n_rounds: int = 50, nights: int = 3, seed: int = 3, spec: str = "fat-tree:k=13,levels=3",
            history_db: str | None = None, check_repeat: int = 1, peer_src: str | None = None) -> None:
    """The nightly job at a real machine's size, each step as a user runs it (the CLI, in this process):
    ``diagnose`` of one night, the confirmation round end to end (its plan, then the script's last line,
    the joint diagnosis, on the round's pairs "measured" by the flow model with the same faults: no
    fabscope-bench at 2,197 hosts here), ``history add`` of ``nights`` nights with their diagnosis (a
    fresh noise draw each), and ``history check`` of the last against the others.

    The pairs are "measured" by the snapshot (``synthetic``), so every diagnosis runs the snapshot
    (``--model static``, as ``history add`` does); the CLI's default, the program in time, adds its
    model (6-8 s a run here, docs/diagnose.md) and, where it finds suspects, a second model and fit.
    Run on the snapshot's pairs it finds the model itself off and is no measure of either.

    ``history_db``: build the history there (its nights only: no ``diagnose`` or confirmation round
    before); when it exists already, skip every step but ``history check``, timed ``check_repeat``
    times in this process and as many times as a fresh process (as the nightly job runs it: its
    imports included), beside the fabscope of ``peer_src`` if given."""
    import json
    import os
    import tempfile

    from fabscope.cli import main as cli
    from fabscope.diagnose.synthetic import as_result

    if history_db and os.path.exists(history_db):
        say(f"\n== history check of the kept history {history_db}")
        _check_timed(history_db, nights, check_repeat, peer_src)
        return
    f = load_fabric(spec)
    s, dd, r = bench_random_pairs(f.n_hosts, 1, n_rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, n_rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[dd, d2], np.r_[r, r2 + n_rounds]
    faults = random_faults(f, 3, 1, seed=seed)
    pm = PairModel(f, hs, hd, rr, bytes=np.full(len(hs), float(1 << 20)))
    work = tempfile.mkdtemp(prefix="bench-nightly-")      # left for a look; /tmp
    say(f"\n== the nightly job: {len(hs)} measured pairs on {f.n_hosts} hosts ({spec}), 3 faults + 1 slow host "
        f"({', '.join(f'{c}: x{x:.2f}' for c, x in faults.items())}), 5% noise; files in {work}")

    def night(k: int) -> str:
        m = synthetic(f, hs, hd, rr, faults, 0.05, seed=seed + k, model=pm)
        res = as_result(m)
        res.meta["time"] = f"2026-01-{k + 1:02d}T02:00:00"
        path = os.path.join(work, f"night{k:02d}.json")
        res.write_json(path)
        return path

    run0 = night(0)
    if history_db:
        _history(cli, history_db, spec, nights, run0, night, check_repeat)
        return
    diag = os.path.join(work, "diag.json")
    _timed("diagnose (static model)", 30, "CPU s",
           lambda: cli(["diagnose", run0, "--fabric", spec, "--model", "static", "-o", diag, "--top", "0"]))
    d = json.load(open(diag))
    found = {x["link"] // 2 for x in d["extra"]["suspects"]}
    say(f"    {len(found & set(faults))} of {len(faults)} faults named, {len(found - set(faults))} false; "
        f"null: {d['meta']['null']}")
    # the confirmation round: the plan, its jobs (measured here by the flow model), the script's last line
    script = os.path.join(work, "confirm.sh")
    _timed("confirmation: diagnose --plan --confirm", None, "",
           lambda: cli(["diagnose", "--plan", "--confirm", diag, "--fabric", spec, "-o", script]))
    # the jobs' pairs, round by round, as fabscope-bench will pair the host files' ranks
    from fabscope.diagnose.confirm import confirm_plan
    from fabscope.result import Result

    plan = confirm_plan(Result.read_json(diag), f)
    a_, b_, sc_ = [], [], []
    for k, job in enumerate(plan.jobs):
        js, jd, _ = job.pairs()
        a_ += js.tolist(); b_ += jd.tolist(); sc_ += [k] * len(js)
    mc = synthetic(f, np.array(a_), np.array(b_), np.array(sc_), faults, 0.05, seed=seed + 100, size=plan.size)
    new = os.path.join(work, "confirm-r000.json")
    as_result(mc).write_json(new)
    last = [w for w in open(script).read().splitlines() if w.startswith("$FABSCOPE diagnose")][0]
    say(f"    {len(a_)} new pairs in {len(plan.jobs)} rounds; the script's last line: {last.replace('$FABSCOPE', 'fabscope')}")
    _timed("confirmation: the joint diagnosis", 30, "CPU s",
           lambda: cli(["diagnose", diag, new, "--fabric", spec, "--model", "static", "--top", "0"]))
    _history(cli, os.path.join(work, "nightly.db"), spec, nights, run0, night, check_repeat)


def _history(cli, db: str, spec: str, nights: int, run0: str, night, check_repeat: int) -> None:
    """Each night added with its diagnosis, then the last checked against the nights before."""
    for k in range(nights):
        path = run0 if k == 0 else night(k)
        extra = ["--fabric", spec] if k == 0 else []
        _timed(f"history add, night {k + 1} of {nights}, with its diagnosis", 30, "CPU s",
               lambda: cli(["history", "add", "--db", db, path, *extra]))
    _check_timed(db, nights, check_repeat)


def _check_timed(db: str, nights: int, repeat: int, peer_src: str | None = None) -> None:
    """``history check`` of the last night: in this process (its imports already loaded after the first),
    then as a fresh process (the nightly job's figure, imports included), alternating with a fresh process
    of the fabscope in ``peer_src`` (another checkout's ``src``) when given: CPU and wall of each, the
    ratio of their medians, and whether they printed the same bytes."""
    import os
    import subprocess

    from fabscope.cli import main as cli

    for _ in range(repeat):
        _timed(f"history check (night {nights} against {nights - 1})", 2, "CPU s",
               lambda: cli(["history", "check", "--db", db]))
    argv = [sys.executable, "-c", "import sys; from fabscope.cli import main; sys.exit(main())",
            "history", "check", "--db", db]
    mine = os.environ.get("PYTHONPATH", "")
    runs: dict[str, list] = {"this": [], "peer": []}
    for _ in range(repeat):
        for who in ("this", "peer") if peer_src else ("this",):
            env = dict(os.environ, PYTHONPATH=peer_src if who == "peer" else mine)
            label = "history check, a fresh process" + (f" ({peer_src})" if who == "peer" else "")
            c0, w0 = _cpu(), time.perf_counter()
            out = _timed(label, 2, "CPU s", lambda: subprocess.run(argv, env=env, capture_output=True, check=False))
            runs[who].append((_cpu() - c0, time.perf_counter() - w0, out.stdout))
    if peer_src:
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        cpu_r = med([c for c, _, _ in runs["peer"]]) / med([c for c, _, _ in runs["this"]])
        wall_r = med([w for _, w, _ in runs["peer"]]) / med([w for _, w, _ in runs["this"]])
        same = {o for *_, o in runs["this"] + runs["peer"]}
        say(f"  the peer took {cpu_r:.2f}x the CPU and {wall_r:.2f}x the wall of this checkout (medians of {repeat}); "
            f"printed the same bytes: {'yes' if len(same) == 1 else 'NO'}")


MODEL_FABRICS = ("fat-tree:k=4,levels=2,up=2", "fat-tree:k=8,levels=2", "fat-tree:k=13,levels=3", "itasca",
                 "torus:4x4x4")


def _bench_measured(f, rounds: int, iters: int, seed: int = 1):
    """fabscope-bench's random pairs at one rank per node, as a Measured (bandwidth: placeholder)."""
    from fabscope.traffic.draws import random_pairs_rounds

    hs, hd, sc = [], [], []
    for r, (a, b) in enumerate(random_pairs_rounds(f.n_hosts, seed, rounds)):
        hs += a.tolist()
        hd += b.tolist()
        sc += [r] * len(a)
    hs, hd, sc = np.array(hs), np.array(hd), np.array(sc)
    k = len(hs)
    return Measured(f, hs, hd, hs, hd, np.full(k, float(1 << 20)), np.ones(k), np.zeros(k), sc, np.ones(k, bool),
                    np.full(k, "random-pairs"), ("bench",), tuple(("bench", "random-pairs", r) for r in range(rounds)),
                    np.full(k, iters), np.full(k, 2))


def models(rounds: int = 4, iters: int = 20) -> None:
    from fabscope.diagnose.timemodel import dynamic_bandwidth

    say(f"\n== the program in time vs the snapshot: random pairs, 1 rank per node, --seed 1, {rounds} rounds, "
        f"1 MiB, {iters} + 2 iterations (MB/s, class averages)")
    say(f"{'fabric':<28}{'class':<14}{'pairs':>6}{'snapshot':>10}{'in time':>10}{'ratio':>7}{'full s':>7}"
        f"{'fast s':>7}{'fast vs full':>13}")
    for spec in MODEL_FABRICS:
        f = load_fabric(spec)
        m = _bench_measured(f, rounds, iters)
        st = PairModel(f, m.hs, m.hd, m.scenario, bytes=m.bytes).bandwidth()
        t0 = time.perf_counter()
        dyn = dynamic_bandwidth(m, fast=False).bandwidth
        t1 = time.perf_counter()
        fast = dynamic_bandwidth(m).bandwidth             # components, shapes reused, one process
        t2 = time.perf_counter()
        dev = np.abs(np.log(fast / dyn)).max()
        cls = f.classify(m.hs, m.hd)
        for c, label in enumerate(f.class_labels):
            sel = cls == c
            if sel.any():
                say(f"{f.name:<28}{label:<14}{int(sel.sum()):>6}{st[sel].mean() / 1e6:10.0f}"
                    f"{dyn[sel].mean() / 1e6:10.0f}{dyn[sel].mean() / st[sel].mean():7.2f}{t1 - t0:7.2f}"
                    f"{t2 - t1:7.2f}{dev:13.1e}")
    f = load_fabric("fat-tree:k=13,levels=3")
    m = _bench_measured(f, 1, 100)
    ref = dynamic_bandwidth(m).bandwidth
    for it in (20, 5, 2):
        t0 = time.perf_counter()
        bw = dynamic_bandwidth(m, iterations=it).bandwidth
        e = np.log(bw / ref)
        say(f"{f.name}, one round of {m.n_pairs} pairs: {it} modeled iterations against 100: rms |log ratio| "
            f"{np.sqrt(np.mean(e * e)):.3f}, worst {np.abs(e).max():.3f} ({time.perf_counter() - t0:.2f} s)")


def nominal(n_rounds: int = 50, iters: int = 20, seed: int = 3, variants: str = "full,fast") -> None:
    """The speed case's nominal model in time, each way asked (``--nominal``), then the fit on it.

    full: every set as one program in this process (the reference); fast: sets split into their
    independent components, shapes already run reused, sets shared among the usable cores;
    fast1: the same in one process; fast-itN: fast with N modeled iterations instead of the measured ones.
    """
    import os

    from fabscope.diagnose.nominal import nominal_model
    from fabscope.diagnose.timemodel import default_workers

    f = load_fabric("fat-tree:k=13,levels=3")
    s, dd, r = bench_random_pairs(f.n_hosts, 1, n_rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, n_rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[dd, d2], np.r_[r, r2 + n_rounds]
    faults = random_faults(f, 3, 1, seed=seed)
    syn = synthetic(f, hs, hd, rr, faults, 0.05, seed=seed)
    m = Measured(f, syn.src, syn.dst, syn.hs, syn.hd, syn.bytes, syn.bandwidth, syn.time, syn.scenario, syn.pingpong,
                 syn.test, syn.sources, syn.scenario_key, np.full(syn.n_pairs, iters), np.full(syn.n_pairs, 2))
    say(f"\n== nominal in time: {m.n_pairs} pairs in {m.n_scenarios} rounds on {f.name}, {iters} + 2 iterations, "
        f"3 faults + 1 slow host, 5% noise; load average {os.getloadavg()[0]:.1f} at the start")
    ref = None
    for v in variants.split(","):
        kw = {"fast": False, "workers": 1} if v == "full" else {"workers": 1 if v == "fast1" else default_workers()}
        if v.startswith("fast-it"):
            kw["iterations"] = int(v[len("fast-it"):])
        t0 = time.perf_counter()
        nom, info = nominal_model(m, events=0, **kw)   # the measured iterations: what each variant costs
        t1 = time.perf_counter()
        d = diagnose(m, nominal=nom)
        t2 = time.perf_counter()
        found = {x["link"] // 2 for x in d.suspects}
        err = ""
        if ref is None:
            ref = nom
        else:
            e = np.abs(np.log(nom / ref))
            err = f"; against the first: max |log ratio| {np.nanmax(e):.1e}, rms {np.sqrt(np.nanmean(e * e)):.1e}"
        comp = (f", {info['components']:,} components ({info['components_reused']:,} reused)"
                if info.get("components") else "")
        say(f"{v:>9}: dynamic model {t1 - t0:6.1f} s ({info['events']:,} events{comp}, {info['workers']} "
            f"process(es)), then the fit {t2 - t1:.1f} s; {len(d.suspects)} suspects, "
            f"{len(found & set(faults))} of {len(faults)} faults{err} "
            f"(load {os.getloadavg()[0]:.1f})")


def periodic(iters: int = 60, max_period: int = 15) -> None:
    """Why the nominal model does not extrapolate a periodic regime: one round of random pairs per
    fabric, run whole for ``iters`` timed iterations; per pair, does the last iteration's time
    repeat one ``p`` iterations earlier (1e-9 relative, some p <= max_period)?  And the sizes of
    the set's independent components (pairs sharing no resource or rank)."""
    from fabscope.diagnose.benchprogram import bench_program, pair_ranks, timed_seconds
    from fabscope.diagnose.components import components
    from fabscope.dynamic.resources import build_paths
    from fabscope.dynamic.run import run_program_on
    from fabscope.fabric.placement import Placement

    say(f"\n== periodic regime? one round of random pairs (--seed 1), 1 MiB, {iters} + 2 iterations, lock-step")
    say(f"{'fabric':<28}{'pairs':>6}{'components':>11}{'largest':>8}{'periodic pairs':>15}{'all periodic':>13}")
    for spec in MODEL_FABRICS:
        f = load_fabric(spec)
        m = _bench_measured(f, 1, iters)
        a, b, host = pair_ranks(m.src, m.dst, m.hs, m.hd)
        first, second = np.minimum(a, b), np.maximum(a, b)
        key = np.r_[host[first] * f.n_hosts + host[second], host[second] * f.n_hosts + host[first]]
        uniq, inv = np.unique(key, return_inverse=True)
        paths = build_paths(f, None, uniq // f.n_hosts, uniq % f.n_hosts)
        n = len(first)
        comp = components(n, inv[:n], inv[n:], paths, first, second)
        w = 2
        prog = bench_program(a, b, m.bytes, iters, w, True, len(host))
        pl = Placement(host=host.astype(np.int32), core=np.zeros(len(host), np.int32))
        run = run_program_on(f, pl, prog)
        ends = np.stack([timed_seconds(prog, run.outcome.step_end, first, 2 * (w + j) - 1, -1) for j in range(iters + 1)], 1)
        d = np.diff(ends, axis=1)
        ok = np.zeros(n, bool)
        for p in range(1, max_period + 1):
            ok |= np.abs(d[:, -1] - d[:, -1 - p]) <= 1e-9 * d[:, -1]
        size = np.bincount(comp)
        say(f"{f.name:<28}{n:>6}{len(size):>11}{size.max():>8}{ok.mean():>15.1%}{'yes' if ok.all() else 'no':>13}")


def sensitivity(iters: int = 100, steps=(1e-12, 1e-9, 1e-6, 1e-3)) -> None:
    """How far the program in time moves each pair's figure when one capacity moves by a hair: one
    round of random pairs per fabric, lock-step, ``iters`` + 2 iterations (fabscope-bench's default),
    run whole; the switch link the most pairs' paths cross is scaled by 1 - eps.  A shortcut that
    does not compute the same numbers (another order of sums, an extrapolation) moves them as much
    as such a change: the last line of each fabric ("comp.") is the components' shortcut against
    the whole set (no capacity moved)."""
    import dataclasses

    from fabscope.diagnose.benchprogram import bench_program, pair_ranks, timed_seconds
    from fabscope.diagnose.pairmodel import PairModel
    from fabscope.diagnose.timemodel import dynamic_bandwidth
    from fabscope.dynamic.run import run_program_on
    from fabscope.fabric.placement import Placement

    say(f"\n== sensitivity: one round of random pairs (--seed 1), 1 MiB, {iters} + 2 iterations, lock-step; "
        f"per-pair |relative change| of the timed seconds when one switch link's capacity x (1 - eps)")
    say(f"{'fabric':<28}{'pairs':>6}{'eps':>8}{'median':>10}{'max':>10}{'pairs moved > 1e-6':>20}")
    for spec in MODEL_FABRICS:
        f = load_fabric(spec)
        m = _bench_measured(f, 1, iters)
        a, b, host = pair_ranks(m.src, m.dst, m.hs, m.hd)
        first = np.minimum(a, b)
        prog = bench_program(a, b, m.bytes, iters, 2, True, len(host))
        pl = Placement(host=host.astype(np.int32), core=np.zeros(len(host), np.int32))
        base = timed_seconds(prog, run_program_on(f, pl, prog).outcome.step_end, first, 2 * (2 + iters) - 1, 3)
        pm = PairModel(f, m.hs, m.hd, m.scenario, m.pingpong, m.bytes)
        use = np.bincount(pm.routes.link, minlength=f.n_links)
        inner = (f.link_src >= f.n_hosts) & (f.link_dst >= f.n_hosts)
        link = int(np.argmax(np.where(inner, use, -1)))
        for eps in steps:
            cap = f.link_capacity.copy()
            cap[link] *= 1 - eps
            g = dataclasses.replace(f, link_capacity=cap)
            t = timed_seconds(prog, run_program_on(g, pl, prog).outcome.step_end, first, 2 * (2 + iters) - 1, 3)
            d = np.abs(t / base - 1)
            say(f"{f.name:<28}{m.n_pairs:>6}{eps:>8.0e}{np.median(d):>10.1e}{d.max():>10.1e}"
                f"{int(np.sum(d > 1e-6)):>20}")
        # the components' shortcut (diagnose's default) sums in another order than the whole set
        d = np.abs(dynamic_bandwidth(m).bandwidth / dynamic_bandwidth(m, fast=False).bandwidth - 1)
        say(f"{f.name:<28}{m.n_pairs:>6}{'comp.':>8}{np.median(d):>10.1e}{d.max():>10.1e}{int(np.sum(d > 1e-6)):>20}")


def critical(n_cables: int, workers_list) -> None:
    from fabscope.diagnose.critical import criticality
    from fabscope.fabric.placement import Placement
    from fabscope.traffic.patterns import random_pairs

    f = load_fabric("itasca")
    pl = Placement.block(f, f.n_hosts, ppn=1)
    tr = random_pairs(f.n_hosts, 1 << 20, seed=0)
    n_c = f.n_links // 2
    cables = np.arange(n_c) if n_cables <= 0 else np.linspace(0, n_c - 1, n_cables).astype(int)
    say(f"\n== criticality on Itasca (min-hop, random pairs, 1 rank per node): {len(cables)} of {n_c} cables cut")
    for w in workers_list:
        t0 = time.perf_counter()
        res = criticality(f, pl, tr, "minhop", cables=cables, workers=w)
        dt = time.perf_counter() - t0
        top = res.extra["criticality"][0]
        say(f"{res.meta['executor']:>32}: {dt:7.1f} s ({dt / len(cables) * 1000:.0f} ms per cable, "
            f"whole fabric ~{dt / len(cables) * n_c / 60:.1f} min); most critical {top['cable']} "
            f"(-{100 * top['lost_fraction']:.2f}%)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--fabrics", default="itasca,ft3")
    ap.add_argument("--faults", default="1,3,10")
    ap.add_argument("--noise", default="0.05,0.10")
    ap.add_argument("--parts", default="routing,speed,accuracy,critical")
    ap.add_argument("--critical-cables", type=int, default=0, help="cables to sweep (0: all)")
    ap.add_argument("--workers", default="0,1,2", help="criticality executors: 0 serial, N Dask workers")
    ap.add_argument("--nominal", default="full,fast",
                    help="--parts nominal: the ways to run the model, the first the reference (full, fast, fast1, fast-itN)")
    ap.add_argument("--rounds", type=int, default=50,
                    help="--parts nominal, nightly: rounds of each of the two draws of random pairs")
    ap.add_argument("--nights", type=int, default=3, help="--parts nightly: nights added to the history")
    ap.add_argument("--fabric", default=FABRICS["ft3"], help="--parts nightly: the fabric (spec)")
    ap.add_argument("--history-db", help="--parts nightly: keep the history in this SQLite file; when it exists, "
                    "time only `history check` on it")
    ap.add_argument("--check-repeat", type=int, default=1, help="--parts nightly: times `history check` is timed")
    ap.add_argument("--peer-src", help="--parts nightly: time `history check` of the fabscope in this src folder too "
                    "(a fresh process, alternating), e.g. another worktree's src")
    a = ap.parse_args()
    parts = a.parts.split(",")
    say(f"bench_diagnose: {time.strftime('%Y-%m-%d %H:%M:%S')}, python {sys.version.split()[0]}")
    if "routing" in parts:
        routing_false_alarm()
    if "speed" in parts:
        speed()
    if "accuracy" in parts:
        for name in a.fabrics.split(","):
            accuracy(FABRICS.get(name, name), a.trials, [int(x) for x in a.faults.split(",")],
                     [float(x) for x in a.noise.split(",")])
    if "critical" in parts:
        critical(a.critical_cables, [int(x) for x in a.workers.split(",")])
    if "models" in parts:
        models()
    if "periodic" in parts:
        periodic()
    if "sensitivity" in parts:
        sensitivity()
    if "nominal" in parts:
        nominal(a.rounds, variants=a.nominal)
    if "nightly" in parts:
        nightly(a.rounds, a.nights, spec=a.fabric, history_db=a.history_db,
                check_repeat=a.check_repeat, peer_src=a.peer_src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
