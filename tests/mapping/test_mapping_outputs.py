"""File formats read back by parsers of each launcher's own syntax."""

import re

import numpy as np
import pytest

from fabscope.fabric.generators import itasca, torus
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commgraph import stencil
from fabscope.mapping.outputs import render, write
from fabscope.mapping.targets import Target


def openmpi_seq(text):
    """Open MPI's sequential mapper (rmaps seq): line i of the host file is rank i's host;
    blank lines and '#' comments are skipped; 'slots=' is ignored by seq."""
    hosts = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            hosts.append(line.split()[0])
    return hosts


def openmpi_rankfile(text):
    """Open MPI rankfile: 'rank N=<host> slot=<socket:core|core>' (one rank per line)."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"\s*rank\s+(\d+)\s*=\s*(\S+)\s+slot=(\d+(?::\d+)?(?:-\d+)?)\s*", line)
        assert m, f"not rankfile syntax: {line!r}"
        r = int(m.group(1))
        assert r not in out, "a rank listed twice"
        out[r] = (m.group(2), int(m.group(3).split(":")[-1]))
    return [out[r] for r in range(len(out))]


def hydra_machinefile(text):
    """MPICH Hydra: 'host[:count]' lines; ranks fill each line's count in order (then wrap)."""
    hosts = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        host, _, count = line.partition(":")
        hosts += [host] * (int(count) if count else 1)
    return hosts


def slurm_hostfile(text):
    """SLURM_HOSTFILE with --distribution=arbitrary: one host per task, in task order."""
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def mapped():
    f = itasca()
    g = stencil((4, 4, 8), halo=1)
    return map_ranks(g, Target.whole(f, 128, ppn=8), "topo")


def test_hostfile(mapped):
    assert openmpi_seq(render(mapped, "hostfile")) == mapped.host_names


def test_rankfile(mapped):
    got = openmpi_rankfile(render(mapped, "rankfile"))
    assert [h for h, _ in got] == mapped.host_names
    assert [c for _, c in got] == mapped.core.tolist()
    assert len(set(got)) == mapped.n_ranks             # no two ranks on one core


def test_machinefile(mapped):
    assert hydra_machinefile(render(mapped, "machinefile")) == mapped.host_names


def test_slurm(mapped):
    assert slurm_hostfile(render(mapped, "slurm")) == mapped.host_names


def test_map_with_coordinates():
    f = torus((4, 4), cores=1)
    m = map_ranks(stencil((4, 4)), Target.whole(f, 16), "fold")
    rows = [ln.split() for ln in render(m, "map").splitlines() if not ln.startswith("#")]
    assert [int(r[0]) for r in rows] == list(range(16))
    assert [tuple(map(int, r[3:])) for r in rows] == [tuple(c) for c in f.coords[m.host].tolist()]


def test_write_is_atomic(tmp_path, mapped):
    p = tmp_path / "hosts"
    p.write_text("old\n")
    with pytest.raises(Exception):
        write(mapped, "nosuch", str(p))
    assert p.read_text() == "old\n"
    assert [x.name for x in tmp_path.iterdir()] == ["hosts"]
    write(mapped, "hostfile", str(p))
    assert openmpi_seq(p.read_text()) == mapped.host_names
