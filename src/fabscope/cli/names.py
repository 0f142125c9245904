"""The names the parsers offer (patterns, routing engines, flow models, mapping formats, limits).

Copies of the library's lists, kept here so that building the parser, and so
``fabscope --help``, imports no library module that loads numpy, SciPy or
rich; tests/test_cli_startup.py checks each equals the library's own.
"""

#: fabscope.traffic.spec.PATTERNS, in order
PATTERNS = ("random-pairs", "leaf-offset", "leaf-pairs", "partner-hops", "bisection", "shift", "permutation",
            "all-to-all", "natural-ring", "random-ring", "bucket-brigade", "random-messaging", "stencil2d",
            "stencil3d")
#: the patterns only --dynamic runs (collectives and the readers of a file), not the static snapshot
PROGRAM_ONLY = ("allreduce", "alltoall", "bcast", "replay", "trace")
#: what --pattern takes with --dynamic only: fabscope.dynamic.programs.COLLECTIVES' algorithms and the
#: program-only readers of PROGRAM_ONLY
DYNAMIC_PATTERNS = ("allreduce:ring", "allreduce:recursive-doubling", "allreduce:rail", "allreduce:rail-tree",
                    "allreduce:sharp",
                    "alltoall:pairwise", "alltoall:bruck", "bcast:binomial", "replay:FILE", "trace:FILE")
#: fabscope.routing.ENGINES
ENGINES = ("dmodk", "minhop", "ftree", "updn", "tables", "dor", "minimal", "ecmp", "ecmp-random", "adaptive",
           "adaptive-local", "valiant", "ugal-l", "ugal-g")
#: fabscope.model.simulate.MODELS
MODELS = ("maxmin", "congestion")
#: fabscope.mapping.outputs.FORMATS
FORMATS = ("hostfile", "rankfile", "machinefile", "slurm", "map")
#: fabscope.measure.runner.OVERSUBSCRIBE_FACTOR
OVERSUBSCRIBE_FACTOR = 4
