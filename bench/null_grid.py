"""The null calibration's grid: the penalty it gives against a grid twice as fine, and the CPU each takes.

    .venv/bin/python bench/nightly_in_time.py                       # makes NIGHT.json (109,800 pairs)
    .venv/bin/python bench/null_grid.py --night NIGHT.json --fabric fat-tree:k=13,levels=3
    .venv/bin/python bench/null_grid.py --fabric fat-tree:k=4,levels=3 --rounds 8     # a quick look

The diagnosis's noise threshold (the penalty) is the law of the largest gain any cable shows in draws
of pure noise (:func:`fabscope.diagnose.calibration.null_calibration`): every cable's best factor on
:data:`~fabscope.diagnose.calibration.NULL_GRID`, then each draw's
:data:`~fabscope.diagnose.calibration.NULL_REFINE` strongest cables refined.  Here the fit of a night
(its noise, its faults found) is taken from a first diagnosis with the CLI's default model, and the
null is drawn on it with the project's grid and with one twice as fine (the same refinement), for
three seeds of draws: the penalties side by side, how far each draw's largest gain moved, and the CPU
of the effects (once per grid) and of one calibration of 30 draws.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fabscope.diagnose.tomography as tomography
from fabscope.diagnose import calibration as cal
from fabscope.diagnose.basis import Basis
from fabscope.diagnose.measured import load_measured
from fabscope.diagnose.nominal import nominal_model
from fabscope.fabric.io import load_fabric


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=13,levels=3")
    ap.add_argument("--night", metavar="FILE", help="a night nightly_in_time.py made on --fabric (default: "
                    "one made here with --rounds)")
    ap.add_argument("--rounds", type=int, default=8, help="without --night: rounds of random pairs per seed")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the null's draws")
    a = ap.parse_args()

    f = load_fabric(a.fabric)
    if a.night:
        m = load_measured([a.night], f)
    else:
        from nightly_in_time import measured_in_time

        f, _, m = measured_in_time(a.fabric, a.rounds, 3, 0.05)
    nominal, how = nominal_model(m)
    # the fit as the diagnosis left it: the arguments of its last null calibration
    seen: dict = {}
    calibrate = tomography.null_calibration

    def spy(fit, cables, factor, rate, bw, **kw):
        seen.update(fit=fit, noise=fit.noise, args=(cables, factor.copy(), rate, bw))
        return calibrate(fit, cables, factor, rate, bw, **kw)

    tomography.null_calibration = spy
    d = tomography.diagnose(m, nominal=nominal, meta={"model_info": how}, basis=Basis())
    tomography.null_calibration = calibrate
    fit, (cables, factor, rate, bw) = seen["fit"], seen["args"]
    fit.noise = seen["noise"]
    print(f"{m.n_pairs:,} pairs on {f.n_hosts:,} hosts ({a.fabric}), {len(cables):,} units; suspects "
          f"{[(s['name'], round(s['factor'], 2)) for s in d.suspects]}; noise sigma {fit.noise.sigma:.3f}")
    coarse = cal.NULL_GRID
    fine = np.geomspace(coarse[0], coarse[-1], 2 * len(coarse) - 1)
    runs = {}
    for name, grid in (("fine", fine), ("project", coarse)):
        cal.NULL_GRID = grid
        t = time.process_time()
        eff = cal.null_effects(fit, cables, factor, rate, bw)
        t_eff = time.process_time() - t
        t = time.process_time()
        runs[name] = [cal.null_calibration(fit, cables, factor, rate, bw, seed=m.n_pairs + s, effects=eff)
                      for s in range(a.seeds)]
        t_null = (time.process_time() - t) / a.seeds
        print(f"  {name:8s} grid of {len(grid)} factors: effects {t_eff:.1f} CPU s, 30 draws {t_null:.1f} CPU s; "
              f"penalties {[round(float(r.penalty), 2) for r in runs[name]]}")
    cal.NULL_GRID = coarse
    moved = np.concatenate([p.maxima - q.maxima for p, q in zip(runs["project"], runs["fine"])])
    print(f"  each draw's largest gain, project minus fine: mean {moved.mean():+.3f}, least {moved.min():+.3f} nats; "
          f"penalties moved {max(abs(p.penalty - q.penalty) for p, q in zip(runs['project'], runs['fine'])):.3f} "
          f"at most")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
