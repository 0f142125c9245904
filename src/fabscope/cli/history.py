"""``fabscope history``: every run kept in a database; what changed, and since when."""

from __future__ import annotations

import argparse
import json
import os

from fabscope.cli.files import database_file, existing, not_a_file, reads, reads_and_writes, writes
from fabscope.cli.options import examples

DEFAULT_DB = "fabscope-history.db"


def _db_option(p: argparse.ArgumentParser) -> None:
    reads_and_writes(p.add_argument("--db", default=os.environ.get("FABSCOPE_HISTORY", DEFAULT_DB),
                                    help=f"history: an SQLite file (default $FABSCOPE_HISTORY or {DEFAULT_DB}), "
                                         "duckdb:PATH, or postgresql://user@host/dbname"), database_file)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="keep every run in a database; flag what regressed tonight",
                       description="A history of one fabric's runs (measured, modeled, compared, diagnosed) in "
                                   "SQLite (default), or PostgreSQL: add runs, list them, show a class, pair, "
                                   "host or cable over time, check tonight against the nights before, prune.",
                       epilog=examples("fabscope history example nights",
                                       "fabscope history add --db nightly.db --fabric fat-tree:k=4,levels=2 "
                                       "$(ls nights/*.json)",
                                       "fabscope history check --db nightly.db --run 8 || echo regressed"))
    hs = p.add_subparsers(dest="history_command", metavar="ACTION")
    hs.required = True

    a = hs.add_parser("add", help="add results (fabscope.result JSON) or fabscope-bench runs (.jsonl)",
                      description="Add runs to the history: their metadata, every pair, the per-class summary and, "
                                  "for measured runs, each pair's ratio to the model and every cable's estimated "
                                  "capacity (the tomography).  A run of another fabric, or one already there, is "
                                  "refused and nothing is written.",
                      epilog=examples("fabscope history add --db extra.db --fabric fat-tree:k=4,levels=2 "
                                      "nights/night01.json nights/night02.json",
                                      "fabscope history add --db extra.db nights/night03.json --label 'after maintenance'"))
    _db_option(a)
    reads(a.add_argument("files", nargs="+", metavar="RESULT",
                         help="fabscope.result JSON files (measure, simulate, compare, diagnose) or fabscope-bench "
                              ".jsonl"))
    reads(a.add_argument("--fabric", help="the history's fabric (spec or JSON; needed once, checked after)"), existing)
    not_a_file(a.add_argument("--time", help="when the run ran (ISO time; default: the run's own, else the file's mtime)"))
    a.add_argument("--label", help="a label for these runs, e.g. 'after maintenance'")
    not_a_file(a.add_argument("--job-id", help="batch job id (default: the result's, $SLURM_JOB_ID, $PBS_JOBID)"))
    not_a_file(a.add_argument("--routing", help="routing engine of the tomography (default: the run's, else the fabric's)"))
    a.add_argument("--no-diagnose", action="store_true",
                   help="keep the pairs only: no model ratios or cable estimates (faster)")
    a.set_defaults(func=run_add)

    ls = hs.add_parser("list", help="the runs, oldest first",
                       description="List the history's runs, oldest first: id, time, kind, test, pairs, hosts, job.",
                       epilog=examples("fabscope history list --db nightly.db",
                                       "fabscope history list --db nightly.db --json"))
    _db_option(ls)
    not_a_file(ls.add_argument("--since", help="runs from this time on"))
    ls.add_argument("--json", action="store_true", help="print JSON lines")
    ls.set_defaults(func=run_list)

    sh = hs.add_parser("show", help="one class, pair, host or cable over time",
                       description="One class, pair, host or cable run by run: bandwidth, ratio to the model, and "
                                   "for a cable its estimated capacity, so you see when it became slow.",
                       epilog=examples("fabscope history show --db nightly.db --cable 's1-0000[5]'",
                                       "fabscope history show --db nightly.db --class 'Diff Leafs'"))
    _db_option(sh)
    what = sh.add_mutually_exclusive_group(required=True)
    what.add_argument("--class", dest="cls", metavar="CLASS", help="a pair class, e.g. 'Far Leafs' or Overall")
    what.add_argument("--pair", nargs=2, metavar=("HOST", "HOST"), help="a host pair (either way)")
    what.add_argument("--host", help="the pairs that touch one host")
    what.add_argument("--cable", help="a cable: number, name as diagnose prints it, part of it, or its host")
    sh.add_argument("--min-effect", type=float, default=0.10, help="slow: below 1 - this of capacity (default 0.10)")
    sh.set_defaults(func=run_show)

    ck = hs.add_parser("check", help="tonight against the nights before: exit 3 if something regressed",
                       description="Test one run against the runs of the same test before it, per class and per "
                                   "cable and host (one-sided Mann-Whitney, Hodges-Lehmann effect size): exit 3 "
                                   "and the suspects named when something newly regressed, 0 otherwise.",
                       epilog=examples("fabscope history check --db nightly.db --run 8 || echo regressed",
                                       "fabscope history check --db nightly.db --run 5 --all"))
    _db_option(ck)
    ck.add_argument("--run", type=int, help="the run to check (default: the newest)")
    ck.add_argument("--baseline", type=int, default=7, help="earlier runs of the same test to compare with (default 7)")
    ck.add_argument("--alpha", type=float, default=1e-3,
                    help="significance, shared by all the night's tests (Bonferroni; default 0.001)")
    ck.add_argument("--min-effect", type=float, default=0.10,
                    help="smallest slowdown that is an alarm: of a class's pairs (Hodges-Lehmann), of a "
                         "cable's estimate (default 0.10 = 10%%)")
    ck.add_argument("--persistent", action="store_true",
                    help="also alarm on regressions that were already there in the previous run")
    ck.add_argument("--all", action="store_true", help="print every class, cable and host tested")
    writes(ck.add_argument("-o", "--output", help="write the findings as JSON"))
    ck.set_defaults(func=run_check)

    pr = hs.add_parser("prune", help="delete old runs",
                       description="Delete runs (with their pairs and estimates) older than a time, or all but "
                                   "the newest N.",
                       epilog=examples("fabscope history prune --db extra.db --keep-last 2",
                                       "fabscope history prune --db extra.db --before 2026-11-02T00:00Z"))
    _db_option(pr)
    pr.add_argument("--keep-last", type=int, help="keep the N newest runs")
    pr.add_argument("--before", help="delete runs before this time (ISO)")
    pr.set_defaults(func=run_prune)

    rp = hs.add_parser("report", help="one HTML page: trends per class, a calendar of alarms, cables over time",
                       description="Write the history as one self-contained HTML page: trends per class, a "
                                   "calendar of alarms, the estimated capacity of the cables that were ever slow.",
                       epilog=examples("fabscope history report --db nightly.db -o history.html",
                                       "fabscope history report --db nightly.db -o history.html --title 'tb1 nights'"))
    _db_option(rp)
    writes(rp.add_argument("-o", "--output", required=True, help="the HTML file to write"))
    rp.add_argument("--baseline", type=int, default=7, help="earlier runs each run is checked against (default 7)")
    rp.add_argument("--min-effect", type=float, default=0.10, help="as for check (default 0.10)")
    rp.add_argument("--title", help="title of the page")
    rp.set_defaults(func=run_report)

    ex = hs.add_parser("example", help="write synthetic nights to try the workflow: the model x noise, a cable "
                                       "degraded from one night on",
                       description="Write synthetic nights (the flow model's pairs times lognormal noise, one cable "
                                   "slowed from one night on) to try the history workflow without a cluster.",
                       epilog=examples("fabscope history example nights2 --nights 5 --degrade-from 4",
                                       "fabscope history example nights3 --nights 4 --factor 0.25"))
    writes(ex.add_argument("folder", help="where to write night01.json, night02.json, ..."), nights_written)
    reads(ex.add_argument("--fabric", default="fat-tree:k=4,levels=2", help="fabric (default fat-tree:k=4,levels=2)"),
          existing)
    ex.add_argument("--nights", type=int, default=10, help="nights (default 10)")
    ex.add_argument("--degrade-from", type=int, default=8, help="first night of the slow cable (default 8)")
    ex.add_argument("--factor", type=float, default=0.5, help="the slow cable's capacity factor (default 0.5)")
    ex.add_argument("--noise", type=float, default=0.03, help="lognormal noise (default 0.03)")
    ex.add_argument("--start", default="2026-11-01T02:00Z", help="time of the first night (one a day after)")
    ex.set_defaults(func=run_example)

    mg = hs.add_parser("migrate", help="bring a history of an older schema up to date",
                       description="Migrate a history written by an older fabscope to this schema version (a "
                                   "newer one is refused); a history already up to date is left as it is.",
                       epilog=examples("fabscope history migrate --db nightly.db",
                                       "fabscope history migrate --db extra.db"))
    _db_option(mg)
    mg.set_defaults(func=run_migrate)


def nights_written(folder: str, args: argparse.Namespace) -> list[str]:
    """The files of ``folder`` that ``history example`` would replace (night01.json ... up to --nights)."""
    import re

    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in sorted(names)
            if (m := re.fullmatch(r"night(\d{2,})\.json", n)) and 1 <= int(m.group(1)) <= args.nights]


# ---- add --------------------------------------------------------------------------
def run_add(args: argparse.Namespace) -> int:
    fabric = None
    if args.fabric:
        from fabscope.cli.compare import resolve_fabric

        fabric = resolve_fabric(args.fabric)
    from fabscope.cli.history_db import add_files

    add_files(args.db, args.files, fabric, time=args.time, label=args.label, job_id=args.job_id,
              routing=args.routing, diagnose=not args.no_diagnose)
    return 0


# ---- list, show -------------------------------------------------------------------
def run_list(args: argparse.Namespace) -> int:
    from fabscope.history.store import History

    with History(args.db) as h:
        runs = h.runs(since=args.since)
        fab = h._meta("fabric_name")
    if args.json:
        for r in runs:
            print(json.dumps(r.__dict__))
        return 0
    print(f"{len(runs)} runs" + (f" of fabric {fab}" if fab else ""))
    print(f"{'run':>5}  {'time':<20}  {'kind':<8}  {'test':<14}  {'pairs':>7}  {'hosts':>5}  job / label")
    for r in runs:
        print(f"{r.id:>5}  {r.time:<20}  {r.kind:<8}  {(r.test or '-')[:14]:<14}  {r.n_pairs:>7}  {r.n_hosts:>5}  "
              f"{' / '.join(x for x in (r.job_id, r.label) if x)}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from fabscope.history import series
    from fabscope.history.store import History

    with History(args.db) as h:
        if args.cls:
            rows = series.class_series(h, args.cls)
            print(f"class {args.cls}: MB/s per run (ratio: median measured / modeled)")
            print(f"{'run':>5}  {'time':<20}  {'test':<14}  {'pairs':>6}  {'max':>8}  {'avg':>8}  {'min':>8}  "
                  f"{'median':>8}  {'ratio':>6}")
            for rid, t, test, n, mx, av, mn, md, ra in rows:
                print(f"{rid:>5}  {t:<20}  {(test or '-')[:14]:<14}  {n:>6}  {mx / 1e6:>8.1f}  {av / 1e6:>8.1f}  "
                      f"{mn / 1e6:>8.1f}  {md / 1e6:>8.1f}  {_f(ra, 6, 3)}")
        elif args.pair or args.host:
            rows = series.pair_series(h, *args.pair) if args.pair else series.host_series(h, args.host)
            print(f"{'pair ' + ' - '.join(args.pair) if args.pair else 'host ' + args.host}: median per run")
            print(f"{'run':>5}  {'time':<20}  {'pairs':>6}  {'MB/s':>8}  {'ratio':>6}")
            for rid, t, n, bw, ra in rows:
                print(f"{rid:>5}  {t:<20}  {n:>6}  {bw / 1e6:>8.1f}  {_f(ra, 6, 3)}")
        else:
            c, name = series.find_cable(h, args.cable)
            rows = series.cable_series(h, c)
            print(f"cable {c}: {name}: capacity estimated by the tomography of each run")
            print(f"{'run':>5}  {'time':<20}  {'pairs':>6}  {'GB/s':>6}  {'of cap.':>7}  suspect")
            for rid, t, n, cap, est, sus in rows:
                print(f"{rid:>5}  {t:<20}  {n:>6}  {est / 1e9:>6.2f}  {est / cap:>7.2f}  {'yes' if sus else ''}")
            slow = series.became_slow(rows, args.min_effect)
            print(f"slow since run {slow[0]} ({slow[1]})" if slow else "not slow in the last run")
    return 0


def _f(x: float | None, w: int, d: int) -> str:
    return f"{x:>{w}.{d}f}" if x is not None else f"{'-':>{w}}"


# ---- check, prune, migrate ----------------------------------------------------------
def run_check(args: argparse.Namespace) -> int:
    from fabscope.errors import FabscopeError
    from fabscope.history.check import check
    from fabscope.history.store import History

    if not 0 < args.min_effect < 1:
        raise FabscopeError(f"--min-effect must be between 0 and 1, got {args.min_effect:g}")
    if not 0 < args.alpha < 1:
        raise FabscopeError(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if args.output:
        from fabscope.cli.compare import check_outputs

        check_outputs(args.output)
    with History(args.db) as h:
        rep = check(h, args.run, baseline=args.baseline, alpha=args.alpha, min_effect=args.min_effect,
                    persistent=args.persistent)
    print("\n".join(rep.lines(verbose=args.all)))
    if args.output:
        from fabscope.atomic import atomic_open

        with atomic_open(args.output) as fh:
            json.dump(rep.to_dict(), fh, indent=1)
            fh.write("\n")
    return 3 if rep.alarms else 0


def run_prune(args: argparse.Namespace) -> int:
    from fabscope.errors import FabscopeError
    from fabscope.history.store import History

    if args.keep_last is None and args.before is None:
        raise FabscopeError("prune needs --keep-last N or --before TIME")
    if args.keep_last is not None and args.keep_last < 0:
        raise FabscopeError(f"--keep-last must be >= 0, got {args.keep_last}")
    with History(args.db) as h:
        ids = h.prune(args.keep_last, args.before)
    print(f"deleted {len(ids)} runs" + (f" ({', '.join(map(str, ids[:20]))}{' ...' if len(ids) > 20 else ''})"
                                          if ids else ""))
    return 0


def run_report(args: argparse.Namespace) -> int:
    from fabscope.cli.report import check_output
    from fabscope.history.store import History

    check_output(args.output)
    from fabscope.report import html
    from fabscope.report.history_view import history_sections

    with History(args.db) as h:
        sections = history_sections(h, baseline=args.baseline, min_effect=args.min_effect)
    from fabscope.history.db import describe

    name = describe(args.db)
    size = html.write(args.output, sections, [name], args.title or f"fabscope history: {name}")
    n_pics = sum(len(s.pictures) for s in sections)
    print(f"report: {args.output} ({size / 1e6:.1f} MB, {n_pics} pictures, "
          f"{len(sections[0].tables[0].rows)} alarms)")
    return 0


def run_example(args: argparse.Namespace) -> int:
    import datetime as dt

    from fabscope.errors import FabscopeError
    from fabscope.fabric.io import load_fabric

    if os.path.exists(args.folder) and not os.path.isdir(args.folder):
        raise FabscopeError(f"{args.folder} is a file; name a folder")
    if args.nights < 1 or not 0 < args.factor <= 1 or args.noise < 0:
        raise FabscopeError("--nights must be >= 1, --factor in (0, 1], --noise >= 0")
    f = load_fabric(args.fabric)
    _room_for_nights(args.folder, args.nights, 12 * (f.n_hosts // 2))
    import numpy as np      # the slower imports once the nights are known to fit

    from fabscope.diagnose.synthetic import as_result, synthetic
    from fabscope.diagnose.tomography import cable_name
    from fabscope.history.store import parse_time

    t0 = dt.datetime.fromisoformat(parse_time(args.start).replace("Z", "+00:00"))
    lv = np.r_[np.zeros(f.n_hosts), f.switch_level]
    a, b = f.link_src[0::2], f.link_dst[0::2]
    up = np.flatnonzero((a >= f.n_hosts) & (b >= f.n_hosts) & (np.minimum(lv[a], lv[b]) == 1))
    cable = int(up[0]) if len(up) else int(np.flatnonzero(a >= f.n_hosts)[0])
    from fabscope.atomic import all_or_none

    os.makedirs(args.folder, exist_ok=True)
    with all_or_none():
        for n in range(1, args.nights + 1):
            rng = np.random.default_rng(n)
            hs, hd, sc = [], [], []
            for r in range(12):
                p = rng.permutation(f.n_hosts)
                hs += p[0::2].tolist()
                hd += p[1::2].tolist()
                sc += [r] * (f.n_hosts // 2)
            faults = {cable: args.factor} if n >= args.degrade_from else {}
            m = synthetic(f, np.array(hs), np.array(hd), np.array(sc), faults, args.noise, seed=n)
            res = as_result(m)
            res.meta.update(time=(t0 + dt.timedelta(days=n - 1)).isoformat(), fabric=f.name,
                            source=f"fabscope history example, night {n}")
            res.write_json(os.path.join(args.folder, f"night{n:02d}.json"))
    print(f"wrote {args.nights} nights of random pairs on {f.name} to {args.folder}/night01.json ...; "
          f"cable {cable_name(f, cable)} at {args.factor:g} of its capacity from night {args.degrade_from}")
    return 0


#: bytes of one night's result file, about: a pair's row (ranks, hosts, bandwidth, ...) and the rest
NIGHT_BYTES_PER_PAIR, NIGHT_BYTES = 100, 4096


def _room_for_nights(folder: str, nights: int, pairs: int) -> None:
    """Refuse, before the first night is drawn, nights whose files the disk cannot hold (every file is
    kept aside until the last is written: all of them or none)."""
    from fabscope.errors import FabscopeError
    from fabscope.limits import human_bytes

    need = nights * (NIGHT_BYTES + NIGHT_BYTES_PER_PAIR * pairs)
    where = os.path.abspath(folder)
    while not os.path.exists(where):
        where = os.path.dirname(where)
    try:
        st = os.statvfs(where)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if need > free:
        raise FabscopeError(f"--nights {nights:,}: about {human_bytes(need)} of result files ({pairs:,} pairs a "
                            f"night); {where} has {human_bytes(free)} free")


def run_migrate(args: argparse.Namespace) -> int:
    from fabscope.history import schema
    from fabscope.history.db import connect

    from fabscope.history.db import describe

    name = describe(args.db)
    if "://" not in args.db and not os.path.exists(args.db.split(":", 1)[-1]):
        from fabscope.history.db import HistoryError

        raise HistoryError(f"no history at {args.db}")
    db = connect(args.db)
    try:
        before = schema.check_readable(db)
        if before is None:
            from fabscope.history.db import HistoryError

            raise HistoryError(f"{name} holds no history")
        after = schema.ensure(db)
    finally:
        db.close()
    print(f"{name}: schema version {before} -> {after}" if before != after else
          f"{name}: schema version {after}, up to date")
    return 0
