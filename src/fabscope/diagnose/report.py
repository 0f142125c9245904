"""Plain-text views of diagnose results (the CLI prints them; the HTML report may reuse them)."""

from __future__ import annotations

import numpy as np

from fabscope.diagnose.timemodel import model_line
from fabscope.units import format_rate, plural
from fabscope.result import Result


def diagnosis_lines(result: Result, top: int = 10) -> list[str]:
    m, p, x = result.meta, result.pairs, result.extra
    n = len(p["ratio"])
    ex = x["explained"]
    out = [f"{m['fabric']}, routing {m['routing']}: {plural(n, 'inter-node pair')} in "
           f"{plural(m['scenarios'], 'concurrent set')} "
           f"({', '.join(m['tests'])})",
           f"model: {model_line(m)}",
           f"measured/modeled: {m['efficiency']:.3f} for the nominal pairs (the share of the model's rate the MPI gets), "
           f"noise sigma {100 * m['noise_sigma']:.1f}% (pairs more than {100 * m['threshold']:.0f}% below count as slow)",
           f"model fit, rms log error: {m['rms_log_error_before']:.3f} with nominal capacities, "
           f"{m['rms_log_error_after']:.3f} with the estimated ones",
           "pairs: " + ", ".join(f"{v} {k}" for k, v in ex.items())
           + "  (contention: near the model, held below its path's rate by sharing)"]
    out += noise_lines(m)
    sus = x["suspects"]
    conf = m.get("confirmation")
    if conf:
        out.append(f"confirmation round: {len(conf['confirmed'])} confirmed, {len(conf['cleared'])} cleared by new "
                   f"pairs across them, {len(conf['kept_untested'])} kept (no new pair crossed them), "
                   f"{len(conf.get('kept_slow_again', []))} kept (their new pairs slow too)"
                   + (f", {len(conf['kept_too_mild'])} kept (milder than this model names)"
                      if conf.get("kept_too_mild") else "")
                   + (f"; not added, new in this round (among the candidates): {', '.join(conf['not_added'][:5])}"
                      if conf["not_added"] else ""))
    if not sus:
        out.append("no suspect: the model explains every pair within the noise")
    else:
        out.append(f"suspects ({len(sus)}), most evidence first:")
        for i, s in enumerate(sus[:top], 1):
            way = s.get("direction", "both")
            what = (f"host {s['host']} ({'' if way == 'both' else way + ' only; '}NIC / cable {s['cable']})"
                    if s["host"] else f"cable {s['cable']}" + ("" if way == "both" else f", one way: {way}"))
            kept = f" (kept: {s['kept']})" if s.get("kept") else ""
            out.append(f"{i:>3}. {what}{kept}: about {format_rate(s['capacity'])} of {format_rate(s['nominal'])} "
                       f"(x{s['factor']:.2f}), confidence {s['confidence']:.2f}, {s['n_pairs']} of "
                       f"{s['crossing_pairs']} crossing pairs slow, e.g. "
                       + ", ".join(f"{a} -> {b}" for a, b in s["pairs"][:3]))
            if s.get("by_source"):
                out.append("       slow crossing pairs per run: " + "; ".join(f"{name}: {k} of {n}"
                                                                        for name, k, n in s["by_source"]))
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
            out.append(f"  {p['src_host'][i]} -> {p['dst_host'][i]}: measured {format_rate(p['measured'][i])}, "
                       f"modeled {format_rate(p['modeled'][i])}")
    if x.get("uncovered_cables"):
        out.append(f"{x['uncovered_cables']} cables no measured pair crosses (see 'fabscope diagnose --plan')")
    if x.get("unidentifiable"):
        out.append(f"{len(x['unidentifiable'])} groups of cables crossed by exactly the same pairs")
    return out


def noise_lines(meta: dict) -> list[str]:
    """What the diagnosis read from each pair, the noise it fitted, the penalty, what it can see."""
    out = []
    if meta.get("figure"):
        spread = meta.get("iteration_spread_median")
        out.append(f"per-pair figure: {meta['figure']}"
                   + (f"; iterations spread (worst - best) / median: {100 * spread:.1f}% (median pair)"
                      if spread is not None else ""))
    nm = meta.get("noise_model")
    if nm:
        out.append(f"noise fitted to the pairs: nominal sigma {100 * nm['sigma']:.1f}%, {100 * nm['w']:.1f}% of the "
                   f"pairs jittered (around x{np.exp(nm['mu_j']):.2f} of the model); a suspect needs "
                   f"{meta['penalty']:.1f} nats of evidence, which noise alone exceeds with chance "
                   f"{meta.get('false_alarm', 0.01):g} per diagnosis (false alarm; {meta['null']['draws']} draws); "
                   "confidence = the chance a suspect is degraded rather than noise (docs/diagnose.md)")
    det = meta.get("detectable")
    if det:
        out.append("a degraded cable these pairs would show at this noise: "
                   + ", ".join(f"x{f:g} on {100 * sh:.0f}%" for f, sh in zip(det["factors"], det["share_seen"]))
                   + " of the covered cables")
    if meta.get("mildest_factor"):
        model = meta.get("model_info") or {}
        out.append(f"suspects named down to x{meta['mildest_factor']:g}: the model ran "
                   f"{'/'.join(map(str, model.get('iterations') or ['fewer']))} of the measured "
                   f"{'/'.join(map(str, model.get('iterations_measured') or ['?']))} iterations, and its error "
                   "can look like a milder fault (--model-events 0 or --model-from names milder ones)")
    return out
