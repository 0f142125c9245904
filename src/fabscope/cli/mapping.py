"""``fabscope permute``, ``map`` and ``place``: where ranks should go, and how a job sits.

    fabscope permute --fabric itasca --comm stencil3d:16x16x32 < $PBS_NODEFILE > newhostfile
    fabscope map --fabric torus:8x8x16,cores=8 --comm stencil3d:16x16x32 --compare block,cyclic,random,scotch
    fabscope map --fabric fabric.json --nodes $SLURM_JOB_NODELIST --ppn 8 --comm profile.mtx --format rankfile -o ranks.txt
    fabscope place --fabric itasca --nodes nodes.txt
"""

from __future__ import annotations

import argparse
import json
import sys

from fabscope.atomic import all_or_none, atomic_open, check_outputs
from fabscope.cli.files import existing, nodes_or_stdin, program_file, reads, writes
from fabscope.cli.options import add_seed, add_size, examples, require_positive
from fabscope.cli.names import FORMATS


FORMAT_HELP = ("file format: hostfile (one host per rank, for mpirun --map-by seq), rankfile (Open MPI), "
               "machinefile (MPICH's host:count), slurm (SLURM_HOSTFILE), map (rank host core, for people)")


def _common(p: argparse.ArgumentParser, comm: bool = True) -> None:
    reads(p.add_argument("--fabric", default="itasca", help="fabric spec, JSON file or testbed (default: itasca)"),
          existing)
    reads(p.add_argument("--nodes", help="the job's nodes: a host file ($PBS_NODEFILE, 'host slots=N', 'host:N') "
                                         "or a compressed list ($SLURM_JOB_NODELIST); default: standard input if it "
                                         "is not a terminal, else the fabric's first hosts"), nodes_or_stdin)
    p.add_argument("--ppn", type=int, help="ranks per node (default: the host file's counts, else all cores)")
    if comm:
        reads(p.add_argument("--comm", required=True,
                             help="communication graph: stencil3d:16x16x32, stencil2d:64x64, pencils:32x32, ring:N, "
                                  "tree:N, random:N, a .csv/.mtx file, or an application kernel's run (.jsonl of "
                                  "fabscope-bench)"), existing)
        p.add_argument("--algorithm", default="topo", help="mapping algorithm (default: topo; see docs/mapping.md)")
        p.add_argument("--io-ranks", default="", help="comma-separated ranks that each get a node of their own")
        add_seed(p, what="the random and annealing algorithms")
        p.add_argument("--objective", default="busiest-link", choices=("hop-bytes", "busiest-link", "time"),
                       help="what topo's best stage is chosen by (default: busiest-link; time: the flow model)")
        p.add_argument("--scotch-seeds", type=int, default=5,
                       help="Scotch runs this many seeds (each with its own vertex order) and keeps the best (default: 5)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("permute", help="reorder a host file so that talkative ranks sit close (seed 000's permute.exe)",
                       description="Read the job's host file on standard input, write one host per rank in the "
                                   "mapped order (use with mpirun --map-by seq).",
                       epilog=examples("fabscope permute --fabric itasca --comm stencil3d:16x16x32 < $PBS_NODEFILE "
                                       "> newhostfile",
                                       "fabscope permute --fabric itasca --nodes nodes.txt --comm ring:64 "
                                       "--algorithm hier"))
    _common(p)
    p.add_argument("--format", choices=FORMATS, default="hostfile", help=FORMAT_HELP)
    writes(p.add_argument("-o", "--output", default="-", help="output file (default: standard output)"))
    p.set_defaults(func=run_permute)
    p = sub.add_parser("map", help="map ranks topology-aware, compare algorithms, write host/rank files",
                       description="Map the ranks of a communication graph onto a job's nodes, print hop-bytes, "
                                   "dilation and the busiest link for the chosen algorithm (and others with "
                                   "--compare), and write the mapping as a host file, rank file or map "
                                   "(docs/mapping.md).",
                       epilog=examples("fabscope map --fabric torus:4x4x4,cores=8 --comm stencil3d:8x8x8 "
                                       "--compare block,cyclic,random",
                                       "fabscope map --fabric fat-tree:k=4,levels=2,up=1 --ppn 1 --comm stencil2d:4x4 "
                                       "--compare block,random --predict",
                                       "fabscope map --fabric itasca --nodes nodes.txt --ppn 8 --comm ring:128 "
                                       "--format rankfile -o ranks.txt"))
    _common(p)
    p.add_argument("--compare", help="comma-separated algorithms to print side by side, e.g. block,cyclic,random,"
                                     "scotch")
    p.add_argument("--model", action="store_true", help="also predict one exchange's time with the flow model")
    p.add_argument("--predict", action="store_true",
                   help="also predict the application's time per iteration on each mapping: its program run in "
                        "time (the kernel's own for a kernel's run given as --comm, else the graph per iteration)")
    p.add_argument("--iterations", type=int, default=1, metavar="N",
                   help="--predict: the --comm matrix holds N iterations' bytes (a PMPI matrix of a whole run; "
                        "default 1; a kernel's run says its own)")
    reads(p.add_argument("--trace", metavar="FILE",
                   help="--predict: replay this trace of timed messages (CSV time,src,dst,bytes; --iterations N: "
                        "it holds N iterations) instead of the graph's program; implies --predict"))
    p.add_argument("--model-iterations", type=int, default=20, metavar="N",
                   help="--predict: simulate at most N timed iterations after the warm-up (default 20)")
    p.add_argument("--format", choices=FORMATS, default="hostfile", help=FORMAT_HELP)
    writes(p.add_argument("-o", "--output", help="write the chosen algorithm's mapping to this file"))
    writes(p.add_argument("--json", help="write the metrics as JSON"))
    reads(p.add_argument("--program", metavar="PROGRAM",
                   help="-o: the program the mapping is for; the launch line printed runs it as its MPI launches "
                        "(its MPI read from its ELF dependencies, as testbed run does; default: the MPI found)"),
          program_file)
    p.add_argument("--mpi", choices=("openmpi", "mpich", "mpich-ofi", "mpich-ucx", "none"),
                   help="-o: the program's MPI, when it cannot be read from the program (a script, a static build)")
    p.set_defaults(func=run_map)
    p = sub.add_parser("place", help="how a job's nodes sit in the fabric, and the bandwidth they can expect",
                       description="Say how a job's nodes sit in the fabric (leaves, levels crossed, as seed 000's "
                                   "job size against the fabric's levels) and the bandwidth random pairs among "
                                   "them can expect in the flow model.",
                       epilog=examples("fabscope place --fabric itasca --nodes nodes.txt",
                                       "fabscope place --fabric itasca --nodes 'node[0001-0064]' --json place.json"))
    _common(p, comm=False)
    add_size(p, "message size of the modeled traffic")
    writes(p.add_argument("--json", help="write the report as JSON"))
    p.set_defaults(func=run_place)


def _target(args: argparse.Namespace, fabric, n_ranks: int | None):
    from fabscope.mapping.targets import Target, read_nodes
    from fabscope.measure.hostlists import parse_hostfile

    if args.nodes:
        nodes = read_nodes(args.nodes)
        compressed = not _is_file(args.nodes)
    elif _testbed(fabric) and getattr(args, "func", None) is not run_permute:
        # a testbed is a whole job: its hosts, --ppn ranks each (default: the testbed's, 1), not standard input
        from fabscope.testbed.state import load

        return Target.from_names(fabric, fabric.host_names, None, args.ppn or load(_testbed(fabric)).ppn)
    else:
        lines = [] if sys.stdin is None or sys.stdin.isatty() else sys.stdin.readlines()
        nodes, compressed = parse_hostfile(lines), False
        if not nodes:
            return Target.whole(fabric, n_ranks or fabric.n_hosts, args.ppn)
    if not nodes:
        from fabscope.errors import PlacementError

        raise PlacementError(f"the node list {args.nodes!r} is empty")
    names = [h for h, _ in nodes]
    if compressed and not args.ppn:
        idx = fabric.host_index
        ppn = None
        slots = [int(fabric.host_cores[idx[h]]) if h in idx else 1 for h in names]
        return Target.from_names(fabric, names, slots, ppn)
    return Target.from_names(fabric, names, [c for _, c in nodes], args.ppn)


def _testbed(fabric) -> str | None:
    """The testbed's name if ``fabric`` is one's (as the resolver returns it), else None."""
    name = fabric.params.get("testbed")
    return name if isinstance(name, str) and fabric.params.get("testbed_view") else None


def _is_file(path: str) -> bool:
    import os

    return os.path.isfile(path)


def _map(args: argparse.Namespace, algorithm: str):
    from fabscope.mapping.api import map_ranks
    from fabscope.mapping.commspec import load_comm

    from fabscope.resolver import resolve_fabric

    fabric = resolve_fabric(args.fabric)
    graph = load_comm(args.comm)
    target = _target(args, fabric, graph.n)
    io = [int(x) for x in args.io_ranks.split(",") if x.strip()] if args.io_ranks else []
    if args.scotch_seeds < 1:
        from fabscope.errors import MappingError

        raise MappingError(f"--scotch-seeds must be at least 1, not {args.scotch_seeds}")
    return graph, target, map_ranks(graph, target, algorithm, seed=args.seed, io_ranks=io, objective=args.objective,
                                    scotch_seeds=args.scotch_seeds), io


def run_permute(args: argparse.Namespace) -> int:
    from fabscope.mapping.metrics import evaluate
    from fabscope.mapping.outputs import write

    require_positive(args, "ppn")
    check_outputs({"-o/--output": args.output})
    graph, target, m, _ = _map(args, args.algorithm)
    write(m, args.format, args.output)
    e = evaluate(m, graph, links=False)
    print(f"fabscope permute: {m.n_ranks} ranks on {target.n_nodes} nodes by {m.algorithm}: "
          f"{e.hops_per_byte:.3f} hops per byte, max dilation {e.max_dilation}", file=sys.stderr)
    return 0


def run_map(args: argparse.Namespace) -> int:
    from fabscope.mapping.api import compare, metrics_rows
    from fabscope.mapping.outputs import launch_command, write
    from fabscope.mapping.metrics import evaluate
    from fabscope.mapping.table import metrics_lines

    require_positive(args, "ppn")
    check_outputs({"-o/--output": args.output, "--json": args.json})
    program = None
    if args.program or args.mpi:
        from fabscope.measure.mpi import program_mpi

        # read before any mapping: a program whose MPI is not known is refused in one line
        # a bare name is found on $PATH, as the shell running the printed line would find it
        found = program_file(args.program, args) if args.program else []
        if args.program and not found:
            from fabscope.errors import MappingError

            raise MappingError(f"--program {args.program!r}: no such file, nor a program of that name on $PATH")
        program = program_mpi(found[0] if found else args.program or "./a.out", args.mpi)
    if args.trace:
        from fabscope.dynamic.programs import replay_trace

        args.predict = True
        _announce_trace(args.trace, len([a for a in (args.compare or "").split(",") if a.strip()]) + 1)
        replay_trace(args.trace)                  # read once here: a bad trace is refused before the mapping
    if args.predict:
        require_positive(args, "iterations")
        require_positive(args, "model_iterations")
    # when the mapping goes to standard output, the table goes to standard error
    out = sys.stderr if args.output == "-" else sys.stdout
    graph, target, m, io = _map(args, args.algorithm)
    # the chosen algorithm's row comes once, last, whether or not --compare names it too
    algs = [a.strip() for a in args.compare.split(",") if a.strip() and a.strip() != args.algorithm] \
        if args.compare else []
    results = compare(graph, target, algs, seed=args.seed, model=args.model, io_ranks=io, objective=args.objective,
                      scotch_seeds=args.scotch_seeds) if algs else []
    results.append((m, evaluate(m, graph, model=args.model)))
    rows = metrics_rows(results)
    for row, asked in zip(rows, algs + [args.algorithm]):
        if not row["algorithm"].startswith(asked):        # topo names the stage it chose: say whose row it is
            row["algorithm"] = f"{asked}: {row['algorithm']}"
    predict = _predict(args, graph, target, results, rows) if args.predict else None
    print(f"# {graph.name}: {graph.n} ranks on {target.n_nodes} nodes of {target.fabric.name} "
          f"({target.n_slots} slots); hops: {'router hops' if target.fabric.coords is not None else 'links crossed'}",
          file=out)
    for line in metrics_lines(rows, args.model, args.predict):
        print(line, file=out)
    if predict:
        for line in predict["lines"]:
            print(line, file=out)
    for mm, _ in results:
        if mm.algorithm.startswith("scotch") and isinstance(mm.info, dict) and "seed" in mm.info:
            print(f"# {mm.algorithm}: seed {mm.info['seed']} (best of {mm.info['seeds'][0]}..{mm.info['seeds'][1]}), "
                  f"strategy {mm.info['strategy']}, order {mm.info['order']}, target {mm.info['target']}", file=out)
    with all_or_none():
        if args.json:
            with atomic_open(args.json) as fh:
                doc = {"schema": "fabscope.mapping.metrics", "schema_version": 1, "graph": graph.name,
                       "fabric": target.fabric.name, "rows": rows}
                if predict:
                    doc["predict"] = predict["info"]
                json.dump(doc, fh, indent=1)
        if args.output:
            write(m, args.format, args.output)
    tb = _testbed(target.fabric)
    if args.output and (args.format != "map" or tb):
        from fabscope.errors import MeasureError
        from fabscope.measure.mpi import find_mpi

        try:
            # the program's MPI, else the MPI a program built here would have (the one measure uses)
            vendor = program.family if program else None if tb else find_mpi().vendor
        except MeasureError:
            vendor = None   # no MPI here: every MPI's line, as the file's format goes
        ompi = None
        if args.format == "rankfile" and not tb:
            from fabscope.mapping.outputs import detect_openmpi

            ompi = detect_openmpi()
        line = launch_command(args.format, args.output, m.n_ranks, ompi, vendor, tb, args.program or "./a.out",
                              args.mpi)
        print(f"# wrote {args.output}; launch: {line}", file=out)
    return 0


#: traces of more messages (about) are announced before they are read
TRACE_ANNOUNCED = 1_000_000


def _announce_trace(path: str, mappings: int) -> None:
    """Before a trace is read: one whose replay would not fit the memory limit (``FABSCOPE_MAX_MEMORY``,
    else the available memory), from the count its size implies, is refused; a large one is announced:
    how many messages, replayed on how many mappings (reading and replaying take seconds a million
    messages; the run's memory is checked again from the real count before it starts)."""
    import os
    import warnings

    from fabscope.dynamic.sizes import check_trace_size
    from fabscope.errors import FabscopeWarning
    from fabscope.limits import human_bytes, memory_limit

    try:
        size = os.path.getsize(path)
    except OSError:
        return                                   # the reader says what is wrong with it
    limit, where = memory_limit()
    about = check_trace_size(f"--trace {path}", size, limit, where)
    if about >= TRACE_ANNOUNCED:
        warnings.warn(f"--trace {path}: {human_bytes(size)}, about {about / 1e6:.1f} million messages, replayed "
                      f"on {mappings} mapping{'s' * (mappings != 1)}: this takes a while (Ctrl-C stops it)",
                      FabscopeWarning, stacklevel=2)


def _predict(args: argparse.Namespace, graph, target, results, rows) -> dict:
    """Each mapping's predicted time per iteration, into ``rows``; the lines saying how, and the same as JSON."""
    from fabscope.mapping.apprun import read_app_run
    from fabscope.measure.apps import is_app_run
    from fabscope.mapping.predict import TIE, app_program, order_text, predict_iteration
    from fabscope.names import plain

    run = read_app_run(args.comm) if is_app_run(args.comm) else None
    its = min(args.model_iterations, run.iterations) if run is not None else min(args.model_iterations,
                                                                                args.iterations)
    if args.trace:
        from fabscope.mapping.predict import trace_program

        prog = trace_program(args.trace, graph.n, args.iterations)
        how = f"the trace {args.trace} replayed ({args.iterations} iteration{'s' * (args.iterations != 1)})"
    else:
        prog, how = app_program(run, graph, iterations=its, graph_iterations=args.iterations)
    engine = ""
    for (mm, _), row in zip(results, rows):
        p = predict_iteration(target.fabric, mm.host, prog)
        row["predicted_iteration"], row["predicted_mean"] = p.median, p.mean
        engine = p.engine
    order = sorted(range(len(rows)), key=lambda i: rows[i]["predicted_iteration"])
    warm = int(prog.params["warmup"])
    info = {"program": how, "iterations": int(prog.params["iterations"]), "warmup": warm, "engine": engine,
            "messages": prog.n_messages, "order": [rows[i]["algorithm"] for i in order]}
    what = ("the replayed trace's time / its iterations" if args.trace else
            f"median of {info['iterations']} timed iterations{f' after {warm} warm-up' if warm else ''}")
    lines = [plain(f"# iter ms: predicted time per iteration ({what}), {how}, run in time ({engine} engine, "
                   f"{prog.n_messages:,} messages)"),
             "# predicted order: " + order_text({r["algorithm"]: r["predicted_iteration"] for r in rows})]
    chosen, best = rows[-1], rows[order[0]]
    if best["predicted_iteration"] * (1 + TIE) < chosen["predicted_iteration"]:
        # the mapping's objective sees the bytes, not the program's phases: say when a compared one wins in time
        lines.append(f"# note: {best['algorithm']} is predicted faster than the chosen {chosen['algorithm']} "
                     f"({best['predicted_iteration'] * 1e3:.4g} ms against {chosen['predicted_iteration'] * 1e3:.4g} ms "
                     "an iteration)")
        info["faster_than_chosen"] = best["algorithm"]
    return {"lines": lines, "info": info}


def run_place(args: argparse.Namespace) -> int:
    from fabscope.mapping.report import placement_report
    from fabscope.units import parse_size

    require_positive(args, "ppn")
    check_outputs({"--json": args.json})
    from fabscope.resolver import resolve_fabric

    fabric = resolve_fabric(args.fabric)
    target = _target(args, fabric, None)
    rep = placement_report(fabric, target.nodes, size=parse_size(args.size))
    print("\n".join(rep.lines()))
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(rep.as_dict(), fh, indent=1)
    return 0
