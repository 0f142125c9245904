"""Where the budget's model differs from the whole model, cable by cable: the pairs crossing each suspect.

    .venv/bin/python bench/nightly_in_time.py --fabric torus:dims=13x13x13 --rounds 50 --noise-seed 4 \\
        --model-from TORUS-DIAG-1.json          # FILES/night.json, diag.json (default), diag-1.json (taken)
    .venv/bin/python bench/budget_error.py --fabric torus:dims=13x13x13 FILES/night.json FILES/diag.json \\
        FILES/diag-1.json

Two diagnoses of one night: one with the default model (the program in time within its budget of engine
events), one whose ``modeled`` figures are every measured iteration's (``--model-events 0`` or
``--model-from``).  For each suspect of the first, its crossing pairs' mean log ratio of the budget's
model to the whole model, and of the measured figure to the whole model, beside the same over all pairs:
a suspect the whole model does not see but whose pairs the budget puts faster than the rest is the
budget's error, not a fault.
"""

from __future__ import annotations

import argparse

import numpy as np

from fabscope.diagnose.measured import load_measured
from fabscope.diagnose.pairmodel import PairModel
from fabscope.fabric.io import load_fabric
from fabscope.result import Result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", required=True)
    ap.add_argument("night")
    ap.add_argument("budget", help="the diagnosis with the default model")
    ap.add_argument("whole", help="the diagnosis whose modeled figures are every iteration's")
    a = ap.parse_args()
    f = load_fabric(a.fabric)
    m = load_measured([a.night], f)
    d0, d1 = Result.read_json(a.budget), Result.read_json(a.whole)
    pm = PairModel(f, m.hs, m.hd, m.scenario, m.pingpong, m.bytes, d0.meta.get("routing"))
    crossing = pm.pair_links.tocsc()
    bud, whole = np.asarray(d0.pairs["modeled"], float), np.asarray(d1.pairs["modeled"], float)
    meas = np.asarray(d0.pairs["measured"], float)
    r_model, r_meas = np.log(bud / whole), np.log(meas / whole)
    print(f"all {len(bud):,} pairs: budget / whole {r_model.mean():+.4f} (sd {r_model.std():.4f}), "
          f"measured / whole {r_meas.mean():+.4f}")
    named = {s["link"] // 2 for s in d1.extra["suspects"]}
    for s in d0.extra["suspects"]:
        c = s["link"] // 2
        col = np.zeros(f.n_links)
        col[[2 * c, 2 * c + 1]] = 1
        hit = np.asarray(crossing @ col).ravel() > 0
        print(f"  {str(s['name'])[:36]:36s} x{s['factor']:.2f}  {'named by the whole model' if c in named else 'not named by it':25s}"
              f" {int(hit.sum()):5d} pairs: budget / whole {r_model[hit].mean():+.4f}, measured / whole "
              f"{r_meas[hit].mean():+.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
