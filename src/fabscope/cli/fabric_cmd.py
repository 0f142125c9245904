"""``fabscope fabric {discover,import,export,whatif,critical}``: real fabrics in and out."""

from __future__ import annotations

import argparse
import os
import sys

from fabscope.atomic import check_outputs
from fabscope.cli.files import in_folder, not_a_file, reads, writes
from fabscope.cli.options import (add_fabric, add_job, add_pattern, add_routing, add_seed, add_size, examples,
                                  job_shape, require_positive)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fabric", help="discover, import, export a fabric; what if a cable fails",
                       description="Read a real InfiniBand fabric and its forwarding tables, write fabrics "
                                   "for ibsim, Slurm and Graphviz, and model cable failures (docs/real-fabrics.md).",
                       epilog=examples("fabscope fabric example samples",
                                       "fabscope fabric import --ibnetdiscover samples/ibnetdiscover.txt --lfts "
                                       "samples/opensm-lfts.dump --hostmap samples/nodes.csv --cores 8 -o fabric.json",
                                       "fabscope fabric export --fabric fat-tree:k=4,levels=2 --format slurm"))
    fs = p.add_subparsers(dest="fabric_command", metavar="ACTION")
    fs.required = True
    d = fs.add_parser("discover", help="run ibnetdiscover and dump_fts (or read their saved outputs)",
                      description="Run ibnetdiscover and dump_fts on this machine's InfiniBand port (infiniband-"
                                  "diags), or read their outputs saved earlier (--from), and write the fabric with "
                                  "its forwarding tables as fabscope's JSON.",
                      epilog=examples("fabscope fabric discover --from raw/ --hostmap samples/nodes.csv -o fabric.json",
                                      "fabscope fabric discover --from raw/ --no-tables -o topo-only.json",
                                      "fabscope fabric discover --save raw/ -o fabric.json"))
    writes(d.add_argument("-o", "--output", required=True, help="fabric JSON to write"))
    reads(d.add_argument("--from", dest="from_dir", help="read ibnetdiscover.txt and dump_fts.txt from this folder"),
          in_folder(*RAW_FILES))
    writes(d.add_argument("--save", help="keep the tools' raw outputs in this folder"), in_folder(*RAW_FILES[:2]))
    reads(d.add_argument("--hostmap", help="map of node descriptions or GUIDs to host names"))
    d.add_argument("--no-tables", action="store_true", help="topology only, no forwarding tables")
    d.add_argument("--timeout", type=float, default=60, help="seconds each tool may take (default 60)")
    d.set_defaults(func=_discover)
    i = fs.add_parser("import", help="read saved ibnetdiscover output and forwarding tables",
                      description="Read an ibnetdiscover output (as the admins saved it) and, if given, the "
                                  "subnet manager's forwarding tables; write the fabric as fabscope's JSON.",
                      epilog=examples("fabscope fabric import --ibnetdiscover samples/ibnetdiscover.txt --lfts "
                                      "samples/opensm-lfts.dump --hostmap samples/nodes.csv --cores 8 -o fabric.json",
                                      "fabscope fabric import --ibnetdiscover samples/ibnetdiscover.txt -o topo.json"))
    reads(i.add_argument("--ibnetdiscover", required=True, help="ibnetdiscover output (default or -p form)"))
    reads(i.add_argument("--lfts", help="opensm-lfts.dump, dump_fts or ibroute output"))
    reads(i.add_argument("--hostmap", help="map of node descriptions or GUIDs to host names"))
    i.add_argument("--cores", type=int, default=1, help="cores per host (default 1)")
    not_a_file(i.add_argument("--name", help="fabric name"))
    writes(i.add_argument("-o", "--output", required=True, help="fabric JSON to write"))
    i.set_defaults(func=_import)
    x = fs.add_parser("example", help="write sample ibnetdiscover and OpenSM outputs to try 'fabric import' on",
                      description="Copy the sample files shipped with fabscope (ibnetdiscover.txt, "
                                  "opensm-lfts.dump, dump_fts.txt, a host map nodes.csv) into DIR.",
                      epilog=examples("fabscope fabric example samples",
                                      "fabscope fabric example /tmp/ib-samples"))
    writes(x.add_argument("folder", metavar="DIR", help="folder to write them to (made if missing)"), samples_written)
    x.set_defaults(func=_example)
    e = fs.add_parser("export", help="write a fabric as an ibsim net file, Slurm topology.conf, dot or JSON",
                      description="Write a fabric for other tools: ibsim's net file (an emulated subnet to run "
                                  "OpenSM on), Slurm's topology.conf, Graphviz dot (draw it with 'dot -Tsvg', "
                                  "which needs Graphviz installed: apt-get install graphviz), or fabscope's JSON.",
                      epilog=examples("fabscope fabric export --fabric fat-tree:k=4,levels=2 --format slurm",
                                      "fabscope fabric export --fabric itasca --format json -o itasca.json",
                                      "fabscope fabric export --fabric fat-tree:k=4,levels=2 --format dot | "
                                      "dot -Tsvg > fabric.svg"))
    add_fabric(e, required=True)
    e.add_argument("--format", required=True, choices=("ibsim", "slurm", "dot", "json"),
                   help="ibsim: net file; slurm: topology.conf; dot: Graphviz graph; json: fabscope's fabric file")
    writes(e.add_argument("-o", "--output", default="-", help="file to write (default: standard output)"))
    e.set_defaults(func=_export)
    w = fs.add_parser("whatif", help="which pairs lose bandwidth when cables fail",
                      description="Cut cables (or whole switches), reroute as the fabric's routing (or the subnet "
                                  "manager, for imported tables) would, and list the pairs of a pattern that lose "
                                  "most bandwidth in the flow model.",
                      epilog=examples("fabscope fabric whatif --fabric itasca --fail \"leaf12[17]\" --ppn 1",
                                      "fabscope fabric whatif --fabric fat-tree:k=4,levels=3 --fail \"s1-0000[5]\" "
                                      "--pattern shift:k=4 --routing ftree --top 5"))
    add_fabric(w, required=True)
    w.add_argument("--fail", action="append", required=True,
                   help="cable to cut: node[port] (e.g. 'L12[17]'), or a switch name; repeat or comma-separate")
    add_pattern(w)
    add_routing(w)
    w.add_argument("--reroute", help="engine the subnet manager reroutes imported tables with "
                                     "(default: the fabscope engine that reproduces them)")
    add_job(w)
    add_size(w)
    add_seed(w)
    w.add_argument("--top", type=int, default=15, help="pairs to list (default 15)")
    w.set_defaults(func=_whatif)
    from fabscope.cli.critical import add_parser as add_critical

    add_critical(fs)


#: the tools' outputs ``discover --save`` keeps and ``--from`` reads
RAW_FILES = ("ibnetdiscover.txt", "dump_fts.txt", "opensm-lfts.dump")


def samples_written(folder: str, args: argparse.Namespace) -> list[str]:
    """The files ``fabric example DIR`` writes."""
    from fabscope.fabric.importers.samples import SAMPLES

    return [os.path.join(folder, n) for n in SAMPLES]


def _write(fabric, path: str) -> None:
    from fabscope.fabric.io import write_json

    write_json(fabric, path)
    tables = "with" if fabric.lft is not None else "without"
    print(f"{path}: {fabric.n_hosts} hosts, {fabric.n_switches} switches, {fabric.n_links // 2} cables, "
          f"{tables} forwarding tables", file=sys.stderr)
    if fabric.params.get("warning"):                 # names a switch: text from the fabric, escaped
        from fabscope.names import plain

        print(f"warning: {plain(fabric.params['warning'])}", file=sys.stderr)


def _discover(args: argparse.Namespace) -> int:
    from fabscope.fabric.ibtools import discover, dump_fts_warning
    from fabscope.fabric.importers import import_fabric

    check_outputs({"-o/--output": args.output})
    if args.from_dir:
        topo = os.path.join(args.from_dir, "ibnetdiscover.txt")
        lfts = next((os.path.join(args.from_dir, n) for n in ("dump_fts.txt", "opensm-lfts.dump")
                     if os.path.exists(os.path.join(args.from_dir, n))), None)
        fabric = import_fabric(topo, None if args.no_tables else lfts, args.hostmap)
        warning = dump_fts_warning(fabric) if lfts and lfts.endswith("dump_fts.txt") and not args.no_tables else None
        if warning:
            fabric = fabric.with_params(warning=warning)
    else:
        fabric = discover(args.timeout, args.hostmap, args.save, not args.no_tables)
    _write(fabric, args.output)
    return 0


def _import(args: argparse.Namespace) -> int:
    from fabscope.fabric.importers import import_fabric

    require_positive(args, "cores")
    check_outputs({"-o/--output": args.output})
    _write(import_fabric(args.ibnetdiscover, args.lfts, args.hostmap, args.name, args.cores), args.output)
    return 0


def _example(args: argparse.Namespace) -> int:
    from fabscope.fabric.importers.samples import write_samples

    paths = write_samples(args.folder)
    print(f"wrote {', '.join(paths)}", file=sys.stderr)
    print(f"try: fabscope fabric import --ibnetdiscover {paths[0]} --lfts {paths[1]} --hostmap {paths[3]} "
          f"--cores 8 -o fabric.json", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from fabscope.fabric.exporters import export_fabric
    from fabscope.resolver import resolve_fabric

    check_outputs({"-o/--output": args.output})
    export_fabric(resolve_fabric(args.fabric), args.format, args.output)
    return 0


def _whatif(args: argparse.Namespace) -> int:
    from fabscope.resolver import resolve_fabric
    from fabscope.fabric.placement import Placement
    from fabscope.whatif import whatif
    from fabscope.traffic.spec import make_traffic
    from fabscope.units import parse_size

    require_positive(args, "ppn", "ranks", "top")
    fabric = resolve_fabric(args.fabric)
    placement = Placement.block(fabric, *job_shape(args, fabric))
    traffic = make_traffic(args.pattern, fabric, placement, parse_size(args.size), seed=args.seed)
    cuts = [c.strip() for spec in args.fail for c in spec.split(",") if c.strip()]
    w = whatif(fabric, cuts, placement, traffic, args.routing, reroute_with=args.reroute)
    print("\n".join(w.lines(args.top)))
    return 0
