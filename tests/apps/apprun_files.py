"""Hand-made application kernel runs in fabscope-bench's format (header, ranks, app, app-traffic lines).

The traffic is made here from :func:`fabscope.mapping.commgraph.stencil` and
:func:`~fabscope.mapping.commgraph.pencils`, not from the programs under test.
"""

from __future__ import annotations

import json

import numpy as np

from fabscope.mapping.commgraph import pencils, stencil


def write_run(path, test, hosts, t_iter, size=65536, iterations=None, warmup=2, params=None, sent=None,
              counted=None, traffic=True, app=True):
    n = len(hosts)
    iterations = iterations or len(t_iter)
    counted = counted or iterations + warmup
    if sent is None and traffic:
        if test.startswith("halo"):
            dims = params["dims"]
            g = stencil(dims, halo=size, periodic=params.get("periodic", True))
        elif test == "fft-transpose":
            g = pencils(*params["dims"], size=size)
        else:
            raise ValueError(test)
        sent = [[int(s), int(d), int(b) * counted] for s, d, b in zip(g.src, g.dst, g.bytes)]
    recs = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": n},
            {"type": "ranks", "host": list(hosts), "core": [0] * n, "socket": [0] * n}]
    if app:
        t = sorted(t_iter)
        recs.append({"type": "app", "test": test, "ranks": n, "iterations": iterations, "warmup": warmup,
                     "size": int(size), "params": params or {}, "t_iter": list(t_iter),
                     "t_iter_median": float(np.median(t)), "t_iter_mean": float(np.mean(t)),
                     "t_iter_min": t[0], "t_iter_max": t[-1]})
    if traffic and app:
        recs.append({"type": "app-traffic", "test": test, "ranks": n, "iterations_counted": counted,
                     "counted_as": "messages", "sent": sent})
    recs.append({"type": "end", "status": 0})
    with open(path, "w") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)
