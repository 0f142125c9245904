"""The dynamic results' host columns: each row's host names, as strings, equal to the fabric's."""

import numpy as np

from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import Program
from fabscope.dynamic.results import message_result, pingpong_result
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree


def test_host_columns_name_each_rows_hosts():
    f = fat_tree(k=4, levels=3)
    place = Placement.cyclic(f, 32, 2)
    names = f.host_names
    prog = Program.from_arrays("perm", 32, np.arange(32), np.roll(np.arange(32), 5), np.full(32, 1e6),
                               np.zeros(32, dtype=np.int64))
    r = message_result(f, run_program_on(f, place, prog), {})
    assert r.pairs["src_host"].dtype.kind == "U" and r.pairs["dst_host"].dtype.kind == "U"
    assert r.pairs["src_host"].tolist() == [names[h] for h in place.host[prog.src]]
    assert r.pairs["dst_host"].tolist() == [names[h] for h in place.host[prog.dst]]
    pp = pg.pingpong([0, 3, 9], [30, 4, 17], 1e6, iterations=2, warmup=1, n_ranks=32)
    r = pingpong_result(f, run_program_on(f, place, pp), {})
    assert r.pairs["src_host"].tolist() == [names[h] for h in place.host[[0, 3, 9]]]
    assert r.pairs["dst_host"].tolist() == [names[h] for h in place.host[[30, 4, 17]]]
