"""The metrics table ``fabscope map`` prints, one row per algorithm (also used by bench/bench_mapping.py).

Columns and units: hop-bytes [bytes x hops], hops/byte, hops/edge, dilation
[hops], max link MB [10^6 bytes on the busiest directed link], model ms (with
``model``), iter ms (with ``predict``: the application's predicted time per
iteration, :mod:`fabscope.mapping.predict`), seconds [to map].

>>> rows = [{"algorithm": "block", "hop_bytes": 24576e6, "hops_per_byte": 1.0, "hops_per_edge": 1.0,
...          "max_dilation": 1, "max_link_load": 6e6, "seconds": 0.004}]
>>> print("\\n".join(metrics_lines(rows)))
algorithm                 hop-bytes hops/byte hops/edge dilation max link MB  seconds
block                     2.458e+10     1.000     1.000        1        6.00     0.00
"""

from __future__ import annotations

from typing import Any, Sequence


def metrics_header(model: bool = False, predict: bool = False) -> str:
    head = f"{'algorithm':<22} {'hop-bytes':>12} {'hops/byte':>9} {'hops/edge':>9} {'dilation':>8} {'max link MB':>11}"
    return head + (f" {'model ms':>9}" if model else "") + (f" {'iter ms':>9}" if predict else "") + f" {'seconds':>8}"


def metrics_line(r: dict[str, Any], model: bool = False, predict: bool = False) -> str:
    link = r.get("max_link_load")
    line = (f"{r['algorithm']:<22} {r['hop_bytes']:>12.4g} {r['hops_per_byte']:>9.3f} {r['hops_per_edge']:>9.3f} "
            f"{r['max_dilation']:>8d} " + (f"{link / 1e6:>11.2f}" if link is not None else f"{'-':>11}"))
    line += f" {r['model_time'] * 1e3:>9.3f}" if model else ""
    line += f" {r['predicted_iteration'] * 1e3:>9.3f}" if predict else ""
    return line + f" {r['seconds']:>8.2f}"


def metrics_lines(rows: Sequence[dict[str, Any]], model: bool = False, predict: bool = False) -> list[str]:
    """Header and one line per row of :func:`fabscope.mapping.api.metrics_rows`."""
    return [metrics_header(model, predict)] + [metrics_line(r, model, predict) for r in rows]
