"""An application kernel's run, for predicting its time: the file's one kernel run, and its grid.

fabscope-bench's kernels write an ``app`` line (time per iteration) and an ``app-traffic`` line
(bytes per rank pair), read and checked by :mod:`fabscope.measure.apps`; :func:`read_app_run`
takes the one kernel run of a file (:func:`fabscope.traffic.commfiles.one_app_run`) and refuses,
in one line, a file that holds none.

>>> import json, os, tempfile
>>> lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2},
...          {"type": "ranks", "host": ["a", "b"]},
...          {"type": "app", "test": "halo2d", "ranks": 2, "iterations": 2, "warmup": 1, "size": 8,
...           "params": {"dims": [2, 1], "periodic": [False, False]}, "t_iter": [1e-3, 2e-3],
...           "t_iter_median": 1.5e-3, "t_iter_mean": 1.5e-3, "t_iter_min": 1e-3, "t_iter_max": 2e-3},
...          {"type": "app-traffic", "test": "halo2d", "ranks": 2, "iterations_counted": 3,
...           "sent": [[0, 1, 24], [1, 0, 24]]}]
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> _ = open(path, "w").write("".join(json.dumps(x) + "\\n" for x in lines))
>>> run = read_app_run(path)
>>> run.test, run.hosts, run.t_iter_median
('halo2d', ['a', 'b'], 0.0015)
>>> halo_dims(run), halo_periodic(run, 2)
([2, 1], [False, False])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabscope.errors import SchemaError

if TYPE_CHECKING:
    from fabscope.measure.apps import AppRun

__all__ = ["HALO_KERNELS", "halo_dims", "halo_periodic", "read_app_run"]

HALO_KERNELS = {"halo2d": 2, "halo3d": 3}


def halo_dims(run: AppRun) -> list[int]:
    """The run's grid: ``params.dims`` where given (checked against its ranks by the reader), else
    MPI_Dims_create's."""
    from fabscope.dynamic.apps import dims_create

    dims = run.params.get("dims")
    return [int(d) for d in dims] if dims else dims_create(run.ranks, HALO_KERNELS.get(run.test, 2))


def halo_periodic(run: AppRun, nd: int) -> list[bool]:
    """``params.periodic`` (one flag per dimension, checked by the reader), else periodic (the kernels'
    default)."""
    p = run.params.get("periodic", True)
    return [bool(p)] * nd if isinstance(p, bool) else [bool(x) for x in p]


def read_app_run(path: str) -> AppRun:
    """The application kernel run of a fabscope-bench output (its app and app-traffic lines, with
    each rank's host); a file with none, or with several kernels, is refused in one line."""
    from fabscope.traffic.commfiles import one_app_run

    run = one_app_run(path, error=SchemaError)
    if not run.hosts or set(run.hosts) == {"?"}:
        raise SchemaError(f"{path}: no 'ranks' line naming each rank's host")
    return run
