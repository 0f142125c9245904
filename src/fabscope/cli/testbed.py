"""``fabscope testbed``: an emulated fabric on this machine (up, down, status, degrade, cut, restore, run)."""

from __future__ import annotations

import argparse

from fabscope.cli.files import existing, not_a_file, reads
from fabscope.cli.options import examples
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("testbed", help="an emulated fabric on this machine: namespaces, shaped veths, routes",
                       description="Network namespaces as hosts and switches, veth cables shaped by tc, the "
                                   "fabric's routing as static routes.  Needs root.  See docs/testbed.md.",
                       epilog=examples("sudo fabscope testbed up --fabric fat-tree:k=4,levels=2 --name tb1",
                                       "sudo fabscope testbed status",
                                       "sudo fabscope testbed down tb1"))
    tsub = p.add_subparsers(dest="action", metavar="ACTION")
    tsub.required = True
    u = tsub.add_parser("up", help="make a testbed (idempotent per name)",
                        description="Make the fabric's hosts and switches as network namespaces, its cables as "
                                    "veth pairs shaped by tc to --rate (scaled), and its routes as static routes. "
                                    "Running it again with the same name keeps what exists.",
                        epilog=examples("sudo fabscope testbed up --fabric fat-tree:k=4,levels=2 --name tb1",
                                        "sudo fabscope testbed up --fabric fabric.json --rate 200Mbit --name real1"))
    reads(u.add_argument("--fabric", required=True, help="fabric spec or JSON file (e.g. fat-tree:k=4,levels=2)"),
          existing)
    not_a_file(u.add_argument("--rate", default="100Mbit",
                   help="rate of the fabric's fastest link here; every link is scaled by the same factor "
                        "(default: 100Mbit); 'auto': the highest this machine forwards now, up to 100Mbit "
                        "(auto:40Mbit: up to 40Mbit)"))
    u.add_argument("--no-calibrate", action="store_true",
                   help="do not measure what this machine forwards now (a second) to check --rate against it")
    not_a_file(u.add_argument("--routing", help="routing engine (default: the fabric's own; tables for imported ones)"))
    u.add_argument("--name", default="tb1", help="testbed name, 1-8 letters/digits (default: tb1)")
    u.add_argument("--slurm", action="store_true",
                   help="also run Slurm over the hosts: munged, slurmctld, one slurmd per host, partition "
                        "'fabscope', topology.conf from the fabric; clients need SLURM_CONF (printed)")
    u.set_defaults(func=_up)
    d = tsub.add_parser("down", help="remove everything a testbed made (also after a crash)",
                        description="Remove a testbed's namespaces, links and state, also what a crashed 'up' "
                                    "left behind.",
                        epilog=examples("sudo fabscope testbed down tb1", "sudo fabscope testbed down real1"))
    d.add_argument("name", help="testbed name, as given to 'testbed up --name' (see 'fabscope testbed status')")
    d.set_defaults(func=_down)
    s = tsub.add_parser("status", help="list testbeds and what of them exists",
                        description="List the testbeds on this machine: fabric, rate, routing, faults, and whether "
                                    "every namespace still exists.",
                        epilog=examples("sudo fabscope testbed status", "sudo fabscope testbed status tb1 --json"))
    s.add_argument("name", nargs="?", help="only this testbed (default: all)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=_status)
    g = tsub.add_parser("degrade", help="set one cable's rate (both directions)",
                        description="Set one cable's rate in both directions (tc), routes unchanged: a cable that "
                                    "trained at a lower speed.",
                        epilog=examples("sudo fabscope testbed degrade tb1 \"s1-0001[3]\" --rate 50Mbit",
                                        "sudo fabscope testbed degrade tb1 \"s1-0000[1]\" --rate 10Mbit"))
    g.add_argument("name", help="testbed name, as given to 'testbed up --name' (see 'fabscope testbed status')")
    g.add_argument("link", help="node[port], e.g. s1-0001[3]")
    g.add_argument("--rate", required=True, help="new rate, e.g. 50Mbit (as --rate of up: before scaling "
                                                 "to payload)")
    g.set_defaults(func=_degrade)
    c = tsub.add_parser("cut", help="take one cable down; routes are recomputed as the fabric's routing would",
                        description="Take one cable down and recompute the static routes as the fabric's routing "
                                    "would after the failure.",
                        epilog=examples("sudo fabscope testbed cut tb1 \"s1-0001[3]\"",
                                        "sudo fabscope testbed cut real1 \"s1-0000[1]\""))
    c.add_argument("name", help="testbed name, as given to 'testbed up --name' (see 'fabscope testbed status')")
    c.add_argument("link", help="node[port]")
    c.set_defaults(func=_cut)
    r = tsub.add_parser("restore", help="undo degrade and cut (one link, or all)",
                        description="Undo 'degrade' and 'cut' on one cable, or on every cable of the testbed.",
                        epilog=examples("sudo fabscope testbed restore tb1 \"s1-0001[3]\"",
                                        "sudo fabscope testbed restore tb1"))
    r.add_argument("name", help="testbed name, as given to 'testbed up --name' (see 'fabscope testbed status')")
    r.add_argument("link", nargs="?", help="node[port] (default: every fault)")
    r.set_defaults(func=_restore)
    x = tsub.add_parser("run", help="run any MPI program across a testbed's hosts",
                        description="Start an MPI program on the testbed's hosts as its MPI launches (read from "
                                    "its ELF dependencies, or --mpi): MPICH by Hydra, Open MPI by its own mpirun, "
                                    "into the hosts' namespaces, ranks over the fabric only (OFI, UCX or Open MPI's "
                                    "TCP on fab0); a program of an MPI fabscope does not know is refused before "
                                    "anything starts.  Its output passed through, its exit status returned (a rank "
                                    "killed by signal N: 128+N).  Ctrl-C, SIGTERM and --timeout (exit 124) stop "
                                    "every rank.",
                        epilog=examples("sudo fabscope testbed run tb1 -- ./a.out",
                                        "sudo fabscope testbed run tb1 --placement ranks.txt --timeout 600 -- "
                                        "./halo --size 1MiB",
                                        "sudo fabscope testbed run tb1 --hostfile hosts.txt --ppn 2 -- ./a.out"))
    x.add_argument("name", help="testbed name, as given to 'testbed up --name' (see 'fabscope testbed status')")
    _run_options(x)
    not_a_file(x.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]"))
    x.set_defaults(func=_run)


def _run_options(x: argparse.ArgumentParser, default: object = None) -> None:
    where = x.add_mutually_exclusive_group()
    reads(where.add_argument("--hostfile", default=default,
                             help="hosts in this order (host, host:N, 'host slots=N'), named as on the testbed or as "
                                  "in the fabric it was built from"))
    reads(where.add_argument("--placement", default=default,
                             help="a placement as 'fabscope map -o' writes it (hostfile, rankfile, machinefile, slurm "
                                  "or map format): each rank's host"))
    x.add_argument("--ppn", type=int, default=default, help="ranks per host (default: the host file's counts, else 1)")
    x.add_argument("--np", type=int, default=default, help="ranks (default: every slot of the hosts or placement)")
    x.add_argument("--timeout", type=float, default=default,
                   help="stop every rank after this many seconds (exit 124)")
    x.add_argument("--mpi", default=default, choices=("openmpi", "mpich", "mpich-ofi", "mpich-ucx", "none"),
                   help="the program's MPI, where its ELF dependencies do not say (a script, a static build); "
                        "none: independent copies")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


def _up(args: argparse.Namespace) -> int:
    from fabscope.testbed.lifecycle import up
    from fabscope.testbed.names import parse_rate

    from fabscope.testbed.lifecycle import AUTO_MAX_RATE

    text = args.rate.strip().lower()
    auto = text == "auto" or text.startswith("auto:")
    rate = None if auto else parse_rate(args.rate)
    cap = parse_rate(text[5:]) if text.startswith("auto:") else AUTO_MAX_RATE
    st = up(args.name, args.fabric, rate, args.routing, say=_say, calibrate=not args.no_calibrate, max_rate=cap,
            slurm=args.slurm)
    print(st.name)
    return 0


def _down(args: argparse.Namespace) -> int:
    from fabscope.testbed.lifecycle import down

    down(args.name, say=_say)
    return 0


def _status(args: argparse.Namespace) -> int:
    from fabscope.testbed import system
    from fabscope.testbed.lifecycle import status

    system.require()
    rows = status(args.name)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if args.name and not rows:
        from fabscope.testbed.names import TestbedError
        raise TestbedError(f"no testbed {args.name!r} on this machine")
    if not rows:
        print("no testbeds")
    for r in rows:
        if "spec" in r:
            faults = f", {r['degraded']} degraded, {len(r['cut'])} cut" if r["degraded"] or r["cut"] else ""
            cal = r.get("calibration") or {}
            fwd = f"; forwarded {cal['forwarding'] / 1e6:.0f} MB/s x hop at up" if cal.get("forwarding") else ""
            print(f"{r['name']}: {r['spec']} at {r['rate'] * 8 / 1e6:g}Mbit, routing {r['routing']}: "
                  f"{r['hosts']} hosts, {r['switches']} switches, {r['cables']} cables{faults}; "
                  f"{r['netns']} namespaces{'' if r['whole'] else ' (INCOMPLETE)'}{fwd}")
            sl = r.get("slurm")
            if sl:
                nodes = ", ".join(f"{n} {s}" for s, n in sorted(sl["nodes"].items())) or "no answer from sinfo"
                print(f"{r['name']}: Slurm up: {sl['daemons']} daemons, nodes: {nodes}; SLURM_CONF={sl['conf']}")
            else:
                print(f"{r['name']}: no Slurm")
        else:
            print(f"{r['name']}: leftovers without state: {r['netns']} namespaces, {r['links']} links "
                  f"(remove with 'fabscope testbed down {r['name']}')")
    return 0


def _degrade(args: argparse.Namespace) -> int:
    from fabscope.testbed.faults import degrade
    from fabscope.testbed.names import parse_rate

    degrade(args.name, args.link, parse_rate(args.rate), say=_say)
    return 0


def _cut(args: argparse.Namespace) -> int:
    from fabscope.testbed.faults import cut

    cut(args.name, args.link, say=_say)
    return 0


def _run(args: argparse.Namespace) -> int:
    """Options given after NAME (argparse hands everything after NAME to the program) are read up to ``--``."""
    from fabscope.testbed.run import run

    rest = list(args.program)   # argparse drops a '--' right after NAME, not one after options
    if rest and rest[0].startswith("-") and rest[0] != "--" and "--" in rest:
        cut = rest.index("--")
        again = argparse.ArgumentParser(prog=f"fabscope testbed run {args.name}", add_help=False, allow_abbrev=False)
        _run_options(again, default=argparse.SUPPRESS)
        for k, v in vars(again.parse_args(rest[:cut])).items():
            setattr(args, k, v)
        rest = rest[cut:]
    args.program = rest[1:] if rest[:1] == ["--"] else rest

    return run(args.name, args.program, hostfile=args.hostfile, placement=args.placement, ppn=args.ppn,
               np=args.np, timeout=args.timeout, mpi=args.mpi, say=_say)


def _restore(args: argparse.Namespace) -> int:
    from fabscope.testbed.faults import restore

    restore(args.name, args.link, say=_say)
    return 0
