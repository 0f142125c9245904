"""The nightly diagnosis with the CLI's default model, the program in time, at a real machine's size.

    .venv/bin/python bench/nightly_in_time.py                                   # 2,197 hosts, 109,800 pairs
    .venv/bin/python bench/nightly_in_time.py --fabric fat-tree:k=4,levels=3 --rounds 4   # a quick look
    mkdir -p /tmp/old && git archive 680dcbf src | tar -x -C /tmp/old        # a peer: another fabscope's source, same pairs
    .venv/bin/python bench/nightly_in_time.py --rounds 10 --against /tmp/old/src
    .venv/bin/python bench/nightly_in_time.py --rounds 10 --parts              # where the time goes
    .venv/bin/python bench/nightly_in_time.py --night NIGHT.json --full        # beside --model-events 0
    .venv/bin/python bench/nightly_in_time.py --night NIGHT.json --confirm     # and the confirmation round
    .venv/bin/python bench/nightly_in_time.py --noise-seed 4 --model-from DIAG-1.json   # night 2, model taken
    .venv/bin/python bench/nightly_in_time.py --healthy --noise-seed 5 --model-from DIAG-1.json

``bench_diagnose.py --parts nightly`` "measures" its pairs with the snapshot and so diagnoses with
``--model static``.  Here the pairs are "measured" by the program in time itself
(:func:`fabscope.diagnose.timemodel.dynamic_bandwidth` on the fabric with the faults: 3 cables and 1
host at x0.25..0.6, fixed seed; fabscope-bench's 100 timed iterations), times 5% lognormal noise, and
``fabscope diagnose`` runs as a user runs it, with its default model: the nominal program in time
(within ``--model-events``: 4 of the 100 iterations at 109,800 pairs), the fit, and where it finds
suspects the program in time again on the fabric with them and the suspects estimated again.  CPU (the
``fabscope diagnose`` process and its worker processes) beside wall, against the goal of under 30 CPU
s, and each fault's estimate beside its true factor.  ``--full``: the same file diagnosed with
``--model-events 0`` too (every measured iteration modeled), a peer in the same run.  ``--confirm``:
the confirmation round end to end (the plan, its pairs "measured" in time here, the script's last
line).  ``--against
SRC``: the same command run by the fabscope at SRC too, one after the other on the same file (its
CPU beside this one's, and whether the two name the same suspects with the same factors).
``--model-from DIAG``: the same file diagnosed with the healthy model taken from DIAG too (``--full``'s
``diag-1.json`` of another night of the same pairs: ``--noise-seed`` draws another night's noise, ``--healthy``
one with no fault).
``--parts``: the diagnosis's four steps in this process, as the CLI runs them (the nominal model, the
fit, the model on the fabric with the first fit's suspects, the suspects estimated again), CPU each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from fabscope.diagnose.plan import bench_random_pairs
from fabscope.diagnose.synthetic import as_result, random_faults, synthetic
from fabscope.diagnose.timemodel import dynamic_bandwidth
from fabscope.fabric.io import load_fabric


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def measured_in_time(spec: str, rounds: int, seed: int, noise: float, healthy: bool = False,
                     noise_seed: int | None = None):
    """(fabric, faults, Measured): fabscope-bench's random pairs (seeds 1 and 2, ``rounds`` rounds each)
    as the program in time gives them on the fabric with the faults (none where ``healthy``), times
    lognormal noise (drawn from ``noise_seed``, default ``seed``)."""
    f = load_fabric(spec)
    s, d, r = bench_random_pairs(f.n_hosts, 1, rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[d, d2], np.r_[r, r2 + rounds]
    faults = {} if healthy else random_faults(f, 3, 1, seed=seed)
    return f, faults, in_time(f, faults, hs, hd, rr, noise, seed if noise_seed is None else noise_seed)


def in_time(f, faults, hs, hd, rr, noise: float, seed: int, size: float = 1 << 20, iters: int = 100):
    """Pairs as the program in time gives them on ``f`` with ``faults``, times lognormal noise."""
    shape = synthetic(f, hs, hd, rr, {}, 0.0, size=size)
    shape = dataclasses.replace(shape, iters=np.full(shape.n_pairs, iters), warmup=np.full(shape.n_pairs, 2))
    cap = f.link_capacity.copy()
    for c, x in faults.items():
        cap[[2 * c, 2 * c + 1]] *= x
    faulty = dataclasses.replace(shape, fabric=dataclasses.replace(f, link_capacity=cap))
    bw = dynamic_bandwidth(faulty).bandwidth * np.exp(np.random.default_rng(seed).normal(0.0, noise, shape.n_pairs))
    return dataclasses.replace(shape, bandwidth=bw, time=shape.bytes * 2 / bw)


def _confirmation(run: str, diag: str, f, faults, spec: str, work: str, noise: float, seed: int) -> None:
    """The confirmation round end to end: ``diagnose --plan --confirm``, its jobs' pairs "measured" in time
    on the fabric with the faults (this bench's part, not timed), and the script's last line (the joint
    diagnosis with the default model), each as the command runs it."""
    from fabscope.diagnose.confirm import confirm_plan
    from fabscope.result import Result

    script = os.path.join(work, "confirm.sh")
    c0, w0 = _cpu(), time.perf_counter()
    rc = subprocess.run([sys.executable, "-m", "fabscope.cli", "diagnose", "--plan", "--confirm", diag, "--fabric",
                         spec, "-o", script], stdout=subprocess.DEVNULL).returncode
    plan_cpu = _cpu() - c0
    plan = confirm_plan(Result.read_json(diag), f)
    a_, b_, sc_ = [], [], []
    for k, job in enumerate(plan.jobs):
        js, jd, _ = job.pairs()
        a_ += js.tolist(); b_ += jd.tolist(); sc_ += [k] * len(js)
    mc = in_time(f, faults, np.array(a_), np.array(b_), np.array(sc_), noise, seed + 100, plan.size, plan.iterations)
    new = os.path.join(work, "confirm-r000.json")
    res = as_result(mc)
    res.meta["argv"] = ["fabscope-bench", "random-pairs", "--iterations", str(plan.iterations)]
    res.write_json(new)
    joint = os.path.join(work, "joint.json")
    rc2, cpu, wall = _diagnose(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"), [diag, new],
                               spec, joint, [])
    d = json.load(open(joint))
    found = {x["link"] // 2 for x in d["extra"]["suspects"]}
    print(f"confirmation: --plan --confirm rc {rc}, {plan_cpu:.1f} CPU s ({len(a_)} pairs in {len(plan.jobs)} "
          f"rounds, {plan.iterations} iterations of {plan.size} B); the script's last line rc {rc2}: "
          f"{len(found & set(faults))} of {len(faults)} confirmed, {len(found - set(faults))} false; "
          f"CPU {cpu:.1f} s, wall {wall:.1f} s; end to end {plan_cpu + cpu:.1f} CPU s (goal under 30: "
          f"{'met' if plan_cpu + cpu < 30 else 'NOT met'})", flush=True)


def _diagnose(src: str, run, fabric: str, out: str, extra: list[str]) -> tuple[int, float, float]:
    """``fabscope diagnose`` run by the fabscope at ``src`` in a process of its own, as the ``fabscope``
    command runs (``python -m fabscope.cli``: one BLAS thread, cli/__init__.py): (rc, CPU, wall)."""
    c0, w0 = _cpu(), time.perf_counter()
    runs = [run] if isinstance(run, str) else list(run)
    rc = subprocess.run([sys.executable, "-m", "fabscope.cli", "diagnose", *runs, "--fabric", fabric, "-o", out, "--top", "0", *extra],
                        env=dict(os.environ, PYTHONPATH=os.path.abspath(src)), stdout=subprocess.DEVNULL).returncode
    return rc, _cpu() - c0, time.perf_counter() - w0


def _untimed(doc) -> str:
    """A result file's JSON without the seconds it records (``seconds``, ``solve_seconds``), as text."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds", "solve_seconds")}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return json.dumps(strip(doc), sort_keys=True)


def _parts(m, events) -> None:
    """The CLI's four steps in this process (``diagnose_with_model``, as cli/diagnose.py runs it), CPU and
    wall each."""
    from fabscope.diagnose.withmodel import diagnose_with_model

    def step(name, fn):
        c0, w0 = _cpu(), time.perf_counter()
        out = fn()
        print(f"  {name}: CPU {_cpu() - c0:.1f} s, wall {time.perf_counter() - w0:.1f} s", flush=True)
        if isinstance(out, tuple) and isinstance(out[1], dict) and "events" in out[1]:
            how = out[1]
            print(f"    {how['iterations']} timed iterations, {how['events']:,} engine events, "
                  f"{how.get('components', 0):,} components ({how.get('components_reused', 0):,} reused)")
        return out

    c0 = _cpu()
    d = diagnose_with_model(m, events=events, step=step)
    print(f"  all: CPU {_cpu() - c0:.1f} s; suspects {[(s['link'], s['direction'], round(s['factor'], 3)) for s in d.suspects]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=13,levels=3")
    ap.add_argument("--rounds", type=int, default=50, help="rounds of random pairs for each of 2 seeds")
    ap.add_argument("--seed", type=int, default=3, help="the faults' and the noise's seed")
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--against", metavar="SRC", help="another fabscope's source folder (its src), run as a peer")
    ap.add_argument("--parts", action="store_true", help="the diagnosis's steps in this process, CPU each")
    ap.add_argument("--confirm", action="store_true",
                    help="then the confirmation round end to end on this fabscope's diagnosis")
    ap.add_argument("--full", action="store_true",
                    help="also diagnose with --model-events 0 (every measured iteration modeled), a peer run")
    ap.add_argument("--model-events", type=int, default=None, metavar="N",
                    help="diagnose's --model-events (default: its own)")
    ap.add_argument("--model-from", metavar="DIAG", help="also diagnose with --model-from DIAG (an earlier "
                    "diagnosis of the same pairs, e.g. --full's diag-1.json), a peer run")
    ap.add_argument("--healthy", action="store_true", help="a night with no fault (the same pairs)")
    ap.add_argument("--noise-seed", type=int, help="the noise's seed (default: --seed): another night of the "
                    "same pairs and faults")
    ap.add_argument("--night", metavar="FILE", help="the night.json an earlier run made with the same --fabric, "
                    "--rounds, --seed and --noise (its faults are drawn again from the seed)")
    a = ap.parse_args()

    c0, w0 = _cpu(), time.perf_counter()
    work = tempfile.mkdtemp(prefix="bench-in-time-")
    run, out = a.night or os.path.join(work, "night.json"), os.path.join(work, "diag.json")
    if a.night:
        from fabscope.diagnose.measured import load_measured

        f = load_fabric(a.fabric)
        faults, m = {} if a.healthy else random_faults(f, 3, 1, seed=a.seed), load_measured([a.night], f)
    else:
        f, faults, m = measured_in_time(a.fabric, a.rounds, a.seed, a.noise, a.healthy, a.noise_seed)
        as_result(m).write_json(run)
    print(f"{m.n_pairs} pairs on {f.n_hosts} hosts ({a.fabric}), faults "
          f"{', '.join(f'{c}: x{x:.2f}' for c, x in faults.items())}; "
          + (f"read from {a.night}" if a.night else
             f"made in time in {_cpu() - c0:.1f} CPU s, {time.perf_counter() - w0:.1f} s wall"), flush=True)
    if a.parts:
        from fabscope.diagnose.budget import MODEL_EVENTS

        _parts(m, MODEL_EVENTS if a.model_events is None else a.model_events)
        return 0
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    mine = [] if a.model_events is None else ["--model-events", str(a.model_events)]
    runs = [("this fabscope", here, mine)]
    if a.full:
        runs.append(("this fabscope, --model-events 0 (every measured iteration)", here, ["--model-events", "0"]))
    if a.model_from:
        runs.append((f"this fabscope, --model-from {a.model_from}", here, [*mine, "--model-from", a.model_from]))
    if a.against:
        runs.append(("peer " + a.against, a.against, []))
    got, files = {}, {}
    for k, (who, src, extra) in enumerate(runs):
        out_k = out if not k else os.path.join(work, f"diag-{k}.json")
        rc, cpu, wall = _diagnose(src, run, a.fabric, out_k, extra)
        d = files[who] = json.load(open(out_k))
        got[who] = sorted((x["link"], x["direction"], round(x["factor"], 4)) for x in d["extra"]["suspects"])
        found = {x["link"] // 2: x["factor"] for x in d["extra"]["suspects"]}
        est = ", ".join(f"{c}: x{found[c]:.2f} (true x{faults[c]:.2f})" for c in faults if c in found)
        info = d["meta"].get("model_info") or {}
        print(f"{who}: diagnose (model {d['meta'].get('model', '?')}, {info.get('iterations')} timed iterations, "
              f"{info.get('events', 0):,} events a model"
              + (f"; taken, the program rerun at {info['rerun_iterations']} iterations" if info.get("rerun_iterations")
                 else "; taken, no program run" if info.get("taken_from") else "") + f"): rc {rc}, "
              f"{len(set(found) & set(faults))} of {len(faults)} faults named ({est}), "
              f"{len(set(found) - set(faults))} false, noise sigma {d['meta']['noise_sigma']:.3f}; "
              f"CPU {cpu:.1f} s, wall {wall:.1f} s (load average {os.getloadavg()[0]:.1f}); goal under 30 CPU s: "
              f"{'met' if cpu < 30 else 'NOT met'}", flush=True)
    if a.confirm:
        _confirmation(run, out, f, faults, a.fabric, work, a.noise, a.seed)
    if len(runs) > 1:
        same = len(set(map(str, got.values()))) == 1
        print(f"they name {'the same suspects, directions and factors (4 digits)' if same else 'different suspects'}"
              f": {got}; the result files are {'the same' if len(set(map(_untimed, files.values()))) == 1 else 'NOT the same'}"
              f" but for the seconds they record")
    print(f"files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
