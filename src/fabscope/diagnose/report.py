"""Plain-text views of diagnose results (the CLI prints them; the HTML report may reuse them)."""

from __future__ import annotations

import numpy as np

from fabscope.diagnose.timemodel import model_line
from fabscope.units import plural
from fabscope.fabric.model import MB
from fabscope.result import Result


def diagnosis_lines(result: Result, top: int = 10) -> list[str]:
    m, p, x = result.meta, result.pairs, result.extra
    n = len(p["ratio"])
    ex = x["explained"]
    out = [f"{m['fabric']}, routing {m['routing']}: {plural(n, 'inter-node pair')} in "
           f"{plural(m['scenarios'], 'concurrent set')} "
           f"({', '.join(m['tests'])})",
           f"model: {model_line(m)}",
           f"measured/modeled: median {m['efficiency']:.3f} (the share of the model's rate the MPI gets), "
           f"noise sigma {100 * m['noise_sigma']:.1f}% (pairs more than {100 * m['threshold']:.0f}% below count as slow)",
           f"model fit, rms log error: {m['rms_log_error_before']:.3f} with nominal capacities, "
           f"{m['rms_log_error_after']:.3f} with the estimated ones",
           "pairs: " + ", ".join(f"{v} {k}" for k, v in ex.items())
           + "  (contention: near the model, held below its path's rate by sharing)"]
    sus = x["suspects"]
    if not sus:
        out.append("no suspect: the model explains every pair within the noise")
    else:
        out.append(f"suspects ({len(sus)}), most evidence first:")
        for i, s in enumerate(sus[:top], 1):
            what = f"host {s['host']} (NIC / cable {s['cable']})" if s["host"] else f"cable {s['cable']}"
            out.append(f"{i:>3}. {what}: about {s['capacity'] / MB:.0f} of {s['nominal'] / MB:.0f} MB/s "
                       f"(x{s['factor']:.2f}), confidence {s['confidence']:.2f}, {s['n_pairs']} of "
                       f"{s['crossing_pairs']} crossing pairs slow, e.g. "
                       + ", ".join(f"{a} -> {b}" for a, b in s["pairs"][:3]))
            for t in s.get("separate_by", []):
                sep = (f"measure {t['pair'][0]} <-> {t['pair'][1]} (crosses {t['crosses']})" if t["pair"]
                       else "no single pair found that separates them")
                out.append(f"       cannot be told from {t['cable']}: {sep}")
    ratio = np.asarray(p["ratio"], float)
    lab = np.asarray(p["label"])
    cont = np.flatnonzero(lab == "contention")
    if len(cont):
        lim = np.asarray(p["limit"])[cont]
        names, counts = np.unique(lim[lim != ""], return_counts=True)
        order = np.argsort(-counts)[:3]
        out.append(f"explained by the routes (contention): {plural(len(cont), 'pair')}, limited most often by "
                   + "; ".join(f"{names[i]} ({counts[i]})" for i in order))
    bad = np.flatnonzero(lab == "unexplained")
    if len(bad):
        out.append(f"unexplained slow pairs ({len(bad)}):")
        for i in bad[np.argsort(ratio[bad])][:top]:
            out.append(f"  {p['src_host'][i]} -> {p['dst_host'][i]}: measured {p['measured'][i] / MB:.0f}, "
                       f"modeled {p['modeled'][i] / MB:.0f} MB/s")
    if x.get("uncovered_cables"):
        out.append(f"{x['uncovered_cables']} cables no measured pair crosses (see 'fabscope diagnose --plan')")
    if x.get("unidentifiable"):
        out.append(f"{len(x['unidentifiable'])} groups of cables crossed by exactly the same pairs")
    return out
