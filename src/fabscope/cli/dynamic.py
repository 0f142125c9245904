"""``fabscope simulate --dynamic``: run the pattern as a program of messages in time.

Pair patterns (random-pairs, leaf-offset, leaf-pairs, partner-hops, bisection)
become ping-pong loops reported as fabscope-bench reports them; other patterns
become one round of messages run to completion; ``allreduce``, ``alltoall``,
``bcast`` (``:algorithm=...``), ``replay:FILE`` (a communication matrix) and
``trace:FILE`` (timed messages) exist only here.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from fabscope.atomic import all_or_none
from fabscope.cli.names import PROGRAM_ONLY
from fabscope.errors import RoutingError, TrafficError
from fabscope.units import format_size

if TYPE_CHECKING:
    from fabscope.fabric.model import Fabric
    from fabscope.fabric.placement import Placement

#: patterns whose flows are ping-pong pairs (both directions of a pair id)
PAIR_PATTERNS = ("random-pairs", "leaf-offset", "leaf-pairs", "partner-hops", "bisection")


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("dynamic simulation (docs/dynamic.md)")
    g.add_argument("--dynamic", action="store_true",
                   help="run messages in time (start, share, finish, answer) instead of the static snapshot")
    g.add_argument("--iterations", type=int, default=None,
                   help="--dynamic: ping-pong iterations (default 100, as fabscope-bench) or rounds of other tests")
    g.add_argument("--warmup", type=int, default=2, help="--dynamic: untimed ping-pong iterations (default 2)")
    g.add_argument("--engine", choices=("auto", "python", "c"), default="auto",
                   help="--dynamic: compiled engine or the pure-Python reference (default: auto)")
    g.add_argument("--jitter", type=float, default=0.0, metavar="SECONDS",
                   help="--dynamic ping-pongs: each ping waits a time drawn uniformly in [0, SECONDS), seeded by "
                        "--seed (default 0: lock-step); paid in every iteration")
    g.add_argument("--start-offset", type=float, default=0.0, metavar="SECONDS",
                   help="--dynamic ping-pongs: each pair's first ping waits a time drawn uniformly in "
                        "[0, SECONDS): the pairs start out of phase (default 0: lock-step)")


def _program(args, fabric: Fabric, placement: Placement, size: float):
    import numpy as np

    from fabscope.dynamic import programs as pg
    from fabscope.traffic.spec import make_traffic

    name, _, arg = args.pattern.strip().partition(":")
    n = placement.n_ranks
    it = args.iterations
    if it is not None and it < 1:
        raise TrafficError(f"--iterations must be at least 1, got {it}")
    if name in ("allreduce", "alltoall", "bcast"):
        kw = dict(x.split("=", 1) if "=" in x else ("algorithm", x) for x in arg.split(",") if x.strip())
        bad = [k for k in kw if k != "algorithm"]
        if bad:
            raise TrafficError(f"pattern {name!r} has no parameter {bad[0]!r} (takes: algorithm)")
        ppn = _ranks_per_node(placement, kw.get("algorithm")) if kw.get("algorithm") in ("rail", "rail-tree") else None
        return [(pg.collective(name, kw.get("algorithm"), n, size, ppn=ppn), None)], name
    if name == "replay":
        return [(pg.replay_matrix(arg, n), None)], name
    if name == "trace":
        return [(pg.replay_trace(arg, n), None)], name
    if name == "random-messaging":
        return [(pg.random_messaging(n, it or 10, seed=args.seed, warmup=args.warmup), None)], name
    if name == "bucket-brigade":
        return [(pg.bucket_brigade(n, size, it or 1), None)], name
    if name in ("natural-ring", "random-ring"):
        return [(pg.ring(n, size, it or 1, name.split("-")[0], seed=args.seed), None)], name
    extra = {k: v for k, v in (("offset", args.offset), ("hops", args.hops)) if v is not None}
    traffic = make_traffic(args.pattern, fabric, placement, size, seed=args.seed, **extra)
    if traffic.name in PAIR_PATTERNS:
        out = []
        for s in range(traffic.n_scenarios):
            sel = np.flatnonzero(traffic.scenario == s)
            _, first = np.unique(traffic.pair[sel], return_index=True)
            f = sel[first]
            out.append((pg.pingpong(traffic.src[f], traffic.dst[f], size, it or 100, args.warmup, n_ranks=n,
                                    jitter=args.jitter, seed=args.seed + s, start_offset=args.start_offset), s))
        return out, traffic.name
    from fabscope.dynamic.program import Program

    return [(Program.from_arrays(traffic.name, n, traffic.src, traffic.dst, traffic.bytes,
                                 np.zeros(traffic.n_flows, dtype=np.int64), **dict(traffic.params)), None)], traffic.name


def _ranks_per_node(placement: Placement, algorithm: str = "rail") -> int:
    """The ranks per node of a placement that puts the same number on every node used, node by
    node (rank ``node * ppn + i`` is local rank ``i``), as the rail-aligned allreduce numbers them."""
    import numpy as np

    host = np.asarray(placement.host)
    ppn = int(np.bincount(host).max())
    nodes = host[::ppn]
    if len(host) % ppn or np.any(host != np.repeat(nodes, ppn)) or len(np.unique(nodes)) != len(nodes):
        raise TrafficError(f"allreduce:{algorithm} needs {ppn} ranks on every node, numbered node by node "
                           "(--placement block with a rank count that fills its nodes)")
    return ppn


def run_dynamic(args: argparse.Namespace, con, fabric: Fabric, placement: Placement, size: float) -> int:
    import numpy as np

    from fabscope.dynamic.results import message_result, pingpong_result
    from fabscope.dynamic.run import run_program_on
    from fabscope.report.tables import print_result
    from fabscope.result import Result
    from fabscope.seeds import ITASCA_MERGE, seed_table

    sharing = "count" if args.model == "congestion" else "maxmin"
    for opt, v in (("--jitter", args.jitter), ("--start-offset", args.start_offset)):
        if not v >= 0 or v == float("inf"):
            raise TrafficError(f"{opt} must be a time >= 0 in seconds, got {v}")
    if args.pattern.replace(" ", "") in ("allreduce:sharp", "allreduce:algorithm=sharp"):
        return _run_sharp(args, con, fabric, placement, size)
    from fabscope.routing import parse_engine

    routing_name, routing_opts = parse_engine(args.routing or "")
    posted = routing_opts.get("when") == "posted"
    if posted and set(routing_opts) - {"when", "cables"}:
        # in time each message chooses whole from the loads then: the static placement's options do nothing
        raise RoutingError(f"{args.routing}: in time (when=posted) UGAL takes cables= alone, not "
                           f"{sorted(set(routing_opts) - {'when', 'cables'})[0]}=")
    progs, pattern = _program(args, fabric, placement, size)
    results = []
    bar = _progress_bar(con)
    with bar:
        for prog, scenario in progs:
            task = bar.add_task(f"simulating {prog.name}", total=prog.n_messages)
            if posted:
                run = _run_posted(args, fabric, placement, prog, sharing, routing_name,
                                  lambda done, t, task=task: bar.update(task, completed=done))
            else:
                run = run_program_on(fabric, placement, prog, args.routing, seed=args.seed, engine=args.engine,
                                     ports=getattr(args, "ports", None), sharing=sharing,
                                     progress=lambda done, t, task=task: bar.update(task, completed=done))
            bar.remove_task(task)
            meta = {"pattern": pattern, "model": args.model, "ppn": args.ppn or None, "size": size,
                    "size_text": format_size(size), "seed": args.seed,
                    "placement": "hostfile" if args.hostfile else args.placement}
            r = pingpong_result(fabric, run, meta) if prog.name == "ping-pong" else message_result(fabric, run, meta)
            if scenario is not None and len(progs) > 1:
                r.pairs["scenario"] = np.full(r.n_pairs, scenario)
            results.append(r)
    if len(results) == 1:
        result = results[0]
    else:
        from fabscope.dynamic.results import merge_link_loads

        links, hot = merge_link_loads(results, fabric)
        result = Result(
            meta={**results[0].meta, "scenarios": len(results),
                  "makespan": max(r.meta["makespan"] for r in results),
                  "events": sum(r.meta["events"] for r in results)},
            class_labels=results[0].class_labels,
            pairs={k: np.concatenate([r.pairs[k] for r in results]) for k in results[0].pairs},
            links=links, extra={"hot_links": hot})
    with all_or_none():
        if args.output:
            result.write_json(args.output)
        if args.csv:
            result.write_csv(args.csv)
        if args.report:
            from fabscope.cli.report import report_results

            report_results([result], args.report, fabric, con)
    merge = ITASCA_MERGE if fabric.params.get("generator") == "itasca" else None
    print_result(result, con, merge=merge, seed=seed_table(result.meta))
    m = result.meta
    algo = m["program_params"].get("algorithm")
    con.print(f"[dim]dynamic: {m['program']}{f' ({algo})' if algo else ''}, {m['messages']:,} messages, "
              f"done at {m['makespan'] * 1e3:.3f} ms simulated, {m['events']:,} events, engine {m['engine']}"
              f"{', congestion sharing' if m.get('model') == 'congestion' else ''}[/dim]")
    if pattern == "leaf-pairs":
        from fabscope.report.tables import print_leaf_matrix

        print_leaf_matrix(con, result, fabric, args.matrix)
    return 0


def _run_sharp(args: argparse.Namespace, con, fabric: Fabric, placement: Placement, size: float) -> int:
    """``allreduce:sharp``: reduced in the switches (fabscope.dynamic.innetwork); prints its time."""
    from fabscope.dynamic.innetwork import allreduce_sharp
    from fabscope.names import terminal

    for opt, v in (("-o", args.output), ("--csv", args.csv), ("--report", args.report)):
        if v:
            raise TrafficError(f"allreduce:sharp prints its time only; {opt} takes the other patterns")
    run = allreduce_sharp(fabric, placement, size, engine=args.engine)
    con.print(f"{terminal(fabric.name)}, allreduce (sharp), {placement.n_ranks} ranks, {format_size(size)}: "
              f"done at {run.makespan * 1e3:.3f} ms simulated")
    con.print(f"[dim]dynamic: reduction tree of {len(run.switches)} switches, depth {run.depth}, root "
              f"{terminal(fabric.node_names[run.switches[0]])}; {run.program.n_messages:,} messages "
              f"({_pieces(run.program.params['pieces'])} each way), engine {run.engine}[/dim]")
    return 0


def _run_posted(args: argparse.Namespace, fabric: Fabric, placement: Placement, prog, sharing: str, name: str,
                progress=None):
    """``--routing ugal-l:when=posted`` / ``ugal-g:when=posted``: each message chooses as it is posted
    (fabscope.dynamic.ugal), in the compiled engine or the reference (``--engine``)."""
    from fabscope.dynamic.ugal import run_ugal

    if sharing != "maxmin":
        raise TrafficError(f"{args.routing}: messages choose as they are posted with max-min sharing only "
                           "(no --model congestion)")
    from fabscope.routing import parse_engine

    cables = parse_engine(args.routing)[1].get("cables", "all")
    return run_ugal(fabric, placement, prog, name, seed=args.seed, engine=args.engine,
                    progress=progress, cables=cables).as_run(placement)


def _pieces(n: int) -> str:
    return f"{n} piece" + ("s" if n != 1 else "")


class _NoBar:
    """What run_dynamic asks of a progress bar, doing nothing (output not to a terminal)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *a, **kw) -> int:
        return 0

    def update(self, *a, **kw) -> None:
        return None

    def remove_task(self, *a) -> None:
        return None


def _progress_bar(con):
    """rich's progress bar on a terminal; elsewhere a bar that draws nothing, without importing rich.progress."""
    if not con.is_terminal:
        return _NoBar()
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.completed:,}/{task.total:,} messages"), TimeElapsedColumn(),
                    console=con, transient=True)
