"""``fabscope fabric critical``: every cable cut (or degraded) in turn, ranked by the bandwidth lost."""

from __future__ import annotations

import argparse
import contextlib

from fabscope.cli.files import reads, writes
from fabscope.cli.options import add_fabric, add_job, add_pattern, add_routing, add_seed, add_size, examples
from fabscope.names import plain


def add_parser(fs: argparse._SubParsersAction) -> None:
    c = fs.add_parser("critical", help="cut or degrade every cable in turn; rank by bandwidth lost",
                      description="Cut (or degrade) each cable in turn, reroute as the fabric's routing would, "
                                  "rerun the flow model of a pattern and rank the cables by the aggregate "
                                  "bandwidth the pattern loses.  Runs on a local Dask cluster (one worker per "
                                  "core) or, with --scheduler, on a dask-jobqueue cluster (Slurm, PBS, ...).",
                      epilog=examples("fabscope fabric critical --fabric fat-tree:k=4,levels=2 --workers 0",
                                      "fabscope fabric critical --fabric fat-tree:k=4,levels=3 --pattern shift:k=4 "
                                      "--degrade 0.5 --cables 8 --workers 0 --top 5"))
    add_fabric(c, required=True)
    add_pattern(c)
    add_routing(c)
    add_job(c)
    add_size(c)
    add_seed(c)
    c.add_argument("--degrade", type=float, metavar="FACTOR",
                   help="degrade each cable to FACTOR of its capacity (routes unchanged) instead of cutting it")
    c.add_argument("--cables", type=int, metavar="N", help="only the first N cables (a quick look)")
    c.add_argument("--workers", type=int, help="local Dask workers (default: one per core; 0: no Dask, serial)")
    reads(c.add_argument("--scheduler", metavar="FILE", help="YAML of a dask-jobqueue cluster (jobqueue: slurm, ...)"))
    c.add_argument("--job-script", action="store_true",
                   help="with --scheduler: print the batch job script the cluster would submit, and stop")
    c.add_argument("--top", type=int, default=20, help="cables to list (default 20)")
    writes(c.add_argument("-o", "--output", help="write the ranking (fabscope.result JSON, kind critical)"))
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabscope.cli.compare import check_outputs
    from fabscope.resolver import resolve_fabric
    from fabscope.diagnose.critical import check_workers, critical_lines, criticality, jobqueue_cluster
    from fabscope.errors import FabscopeError
    from fabscope.fabric.placement import Placement
    from fabscope.traffic.spec import make_traffic
    from fabscope.units import parse_size

    check_outputs(args.output)
    if args.job_script and not args.scheduler:
        raise FabscopeError("--job-script needs --scheduler FILE")
    if args.workers is not None and args.workers < 0:
        raise FabscopeError(f"--workers must be 0 or more, got {args.workers}")
    from fabscope.cli.options import job_shape, require_positive

    require_positive(args, "ranks", "ppn")
    if not args.scheduler:
        check_workers(args.workers)                  # before the fabric is built
    fabric = resolve_fabric(args.fabric)
    placement = Placement.block(fabric, *job_shape(args, fabric))
    traffic = make_traffic(args.pattern, fabric, placement, parse_size(args.size), seed=args.seed)
    cables = None
    if args.cables is not None:
        if args.cables < 1:
            raise FabscopeError(f"--cables must be positive, got {args.cables}")
        cables = list(range(min(args.cables, fabric.n_links // 2)))
    cluster, jobs = (None, 1)
    if args.scheduler:
        cluster, jobs = jobqueue_cluster(args.scheduler)
        if args.job_script:
            try:
                print(cluster.job_script())
            finally:
                cluster.close()
            return 0
    try:
        res = criticality(fabric, placement, traffic, args.routing,
                          mode="degrade" if args.degrade is not None else "cut",
                          factor=args.degrade if args.degrade is not None else 0.5, cables=cables,
                          workers=args.workers, cluster=cluster, jobs=jobs)
    finally:
        if cluster is not None:
            from fabscope.diagnose.critical import job_failures

            # a job the batch system refused is a worker Dask cannot close (an AssertionError inside
            # it): the line already said what happened; closing must not replace it with a traceback
            with job_failures(), contextlib.suppress(Exception):
                cluster.close()
    print("\n".join(plain(ln) for ln in critical_lines(res, args.top)))
    if args.output:
        res.write_json(args.output)
    return 0
