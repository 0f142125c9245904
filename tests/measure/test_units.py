"""Launchers, host lists, sizes, discovery order, build cache: no MPI job runs here."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fabscope.errors import FabscopeError, MeasureError
from fabscope.measure import build
from fabscope.measure.hostlists import expand_nodelist, job_hosts, parse_hostfile
from fabscope.measure.launchers import Job, get_launcher
from fabscope.measure.mpi import find_mpi
from fabscope.measure.runner import bench_args


def test_launcher_argv_without_mpi():
    job = Job(np=8, program=["bench", "pingpong"], hostfile="hosts", ppn=4, oversubscribe=True)
    assert get_launcher("mpiexec", "/opt/mpich/bin/mpiexec").command(job) == \
        ["/opt/mpich/bin/mpiexec", "-n", "8", "-f", "hosts", "-ppn", "4", "bench", "pingpong"]
    assert get_launcher("mpirun").command(job) == \
        ["mpirun", "-np", "8", "--hostfile", "hosts", "--map-by", "ppr:4:node", "--oversubscribe", "bench", "pingpong"]
    assert get_launcher("srun").command(Job(np=2, program=["b"])) == ["srun", "--ntasks", "2", "b"]
    with pytest.raises(MeasureError, match="unknown launcher 'aprun'"):
        get_launcher("aprun")


@pytest.mark.parametrize("text,hosts", [
    ("node[001-004,010]", ["node001", "node002", "node003", "node004", "node010"]),
    ("a1,b[8-10]", ["a1", "b8", "b9", "b10"]),
    ("x[1-2]y[3,5]", ["x1y3", "x1y5", "x2y3", "x2y5"]),
])
def test_slurm_nodelists(text, hosts):
    assert expand_nodelist(text) == hosts


@given(st.lists(st.integers(0, 999), min_size=1, max_size=20, unique=True))
def test_nodelist_round_trip(nums):
    text = "n[" + ",".join(f"{n:03d}" for n in nums) + "]"
    assert expand_nodelist(text) == [f"n{n:03d}" for n in nums]


def test_bad_nodelist_is_one_clear_error():
    with pytest.raises(MeasureError, match="unbalanced"):
        expand_nodelist("node[1-3")
    with pytest.raises(MeasureError, match="bad range"):
        expand_nodelist("node[5-3]")


def test_pbs_nodefile_counts_slots(tmp_path):
    f = tmp_path / "nodes"
    f.write_text("node1078\n" * 8 + "node1077\n" * 8)
    assert job_hosts({"PBS_NODEFILE": str(f)}) == ([("node1078", 8), ("node1077", 8)], "$PBS_NODEFILE")
    assert parse_hostfile(["h1 slots=2", "h2:3"]) == [("h1", 2), ("h2", 3)]
    assert job_hosts({}) is None


def test_sizes_are_parsed_once_in_python():
    assert bench_args(["pingpong", "--max-size", "4MiB", "--min-size=64KiB"]) == \
        ["pingpong", "--max-size", "4194304", "--min-size=65536"]
    with pytest.raises(FabscopeError, match="does not parse"):
        bench_args(["random-pairs", "--size", "1Q"])


def _fake(path: Path, text: str = "#!/bin/sh\necho 'HYDRA build details:'; echo '  Version: 9.9'\n") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_discovery_order(tmp_path):
    site, wheel, own = tmp_path / "site/bin", tmp_path / "venv/bin", tmp_path / "own/bin"
    for d in (site, wheel, own):
        _fake(d / "mpicc"); _fake(d / "mpiexec")
    path = f"{wheel}{os.pathsep}{site}"
    env = {"PATH": path}
    # the site's MPI on PATH comes before the wheel of this environment
    assert find_mpi(env, prefix=str(tmp_path / "venv")).source == "PATH"
    assert find_mpi(env, prefix=str(tmp_path / "venv")).mpicc == str(site / "mpicc")
    # without one on PATH, the wheel
    m = find_mpi({"PATH": str(wheel)}, prefix=str(tmp_path / "venv"))
    assert (m.source, m.vendor, m.mpiexec) == ("mpich wheel", "mpich", str(wheel / "mpiexec"))
    # $MPICC, then $FABSCOPE_MPICC override
    assert find_mpi({**env, "MPICC": str(own / "mpicc")}, prefix=str(tmp_path / "venv")).source == "MPICC"
    assert find_mpi({**env, "MPICC": str(site / "mpicc"), "FABSCOPE_MPICC": str(own / "mpicc")},
                    prefix=str(tmp_path / "venv")).mpicc == str(own / "mpicc")


def test_missing_mpi_is_one_clear_error(tmp_path):
    with pytest.raises(MeasureError, match="no MPI found"):
        find_mpi({"PATH": str(tmp_path)}, prefix=str(tmp_path))
    with pytest.raises(MeasureError, match=r"\$MPICC names"):
        find_mpi({"MPICC": str(tmp_path / "nope")}, prefix=str(tmp_path))


def test_build_key_follows_sources_and_mpi(tmp_path, monkeypatch):
    src = tmp_path / "csrc"
    src.mkdir()
    (src / "main.c").write_text("int main(void){return 0;}\n")
    from fabscope.measure.mpi import MPIInstall
    a = MPIInstall(_fake(tmp_path / "a/mpicc"), "x", "MPICC", "mpich", "MPICH 1")
    b = MPIInstall(_fake(tmp_path / "b/mpicc"), "x", "MPICC", "mpich", "MPICH 2")
    k = build.build_key(a, src)
    assert build.build_key(a, src) == k
    assert build.build_key(b, src) != k
    (src / "main.c").write_text("int main(void){return 1;}\n")
    assert build.build_key(a, src) != k


# ---- the latency model: quality, warnings, kinks that earn their place ----
SWEEP = 2.0 ** np.arange(0, 23)


def _noisy(t, sd, seed):
    return t * np.exp(np.random.default_rng(seed).normal(0, sd, len(t)))


def test_latency_fit_says_no_kink_and_warns_when_too_noisy():
    from fabscope.measure.analysis import POOR_FIT, fit_latency_model, format_model
    for seed in range(6):
        fit = fit_latency_model(SWEEP, _noisy(1e-6 + SWEEP / 4e9, 0.4, seed))
        text = format_model(fit)
        assert fit.rms_rel_error > POOR_FIT and fit.poor
        assert "warning: the timings scatter too much" in text and "(poor)" in text
        assert fit.kinks == [] and "no kink found" in text  # no spurious kinks from noise
    for seed in range(6):  # moderate noise on one straight line: no kink either, and no warning
        fit = fit_latency_model(SWEEP, _noisy(1e-6 + SWEEP / 4e9, 0.1, seed))
        assert fit.kinks == [] and not fit.poor and "fit quality: rms relative error" in format_model(fit)


def test_latency_fit_keeps_a_real_protocol_change_despite_a_stray_timing():
    from fabscope.measure.analysis import fit_latency_model, format_model
    t = np.where(SWEEP < 8192, 2e-7 + SWEEP / 2e10, 2e-6 + SWEEP / 1.1e10)
    t[-1] *= 30  # one load spike at 4 MiB
    for seed in range(4):
        fit = fit_latency_model(SWEEP, _noisy(t, 0.03, seed))
        assert fit.kinks == [8192] and fit.kink_kinds() == ["protocol change"]
        assert "kink at 8192 B: protocol change" in format_model(fit)


def test_a_bandwidth_drop_at_cache_size_is_not_called_a_protocol_change():
    from fabscope.measure.analysis import fit_latency_model, format_model
    t = np.where(SWEEP < 524288, 2e-6 + SWEEP / 8e9, SWEEP / 3e9)  # messages outgrow the cache
    fit = fit_latency_model(SWEEP, _noisy(t, 0.02, 1))
    assert fit.kinks == [524288] and fit.kink_kinds() == ["bandwidth drop"]
    assert "protocol change" not in format_model(fit)


def test_docs_do_not_tell_users_what_the_readme_never_sets_up():
    root = Path(__file__).resolve().parents[2]
    readme, doc = (root / "README.md").read_text(), (root / "docs" / "measure.md").read_text()
    for phrase in ("make setup", "make demo", "make test"):
        if phrase in doc:
            assert phrase in readme, f"docs/measure.md says '{phrase}', the README never does"


def test_srun_takes_pmi2_for_mpich_and_pmix_for_open_mpi():
    """Under srun, MPICH's ranks need Slurm's PMI-2 plugin (``--mpi=pmi2``); a --mpi the user gives wins;
    Open MPI and the other launchers get nothing added."""
    from fabscope.measure.mpi import MPIInstall
    from fabscope.measure.runner import Plan

    mpich = MPIInstall("/x/mpicc", "/x/mpiexec", "MPICC", "mpich", "MPICH 4")
    ompi = MPIInstall("/x/mpicc", "/x/mpirun", "MPICC", "openmpi", "Open MPI 4")
    hosts = [("n1", 1), ("n2", 1)]

    def argv(mpi, launcher, extra=()):
        return Plan(mpi, Path("/b"), 2, ["pingpong"], Path("o.jsonl"), launcher, hosts, launcher_args=list(extra)).argv()

    a = argv(mpich, "srun")
    assert a[0] == "srun" and a.index("--mpi=pmi2") < a.index("/b")  # a launcher option, before the program
    assert argv(mpich, "slurm").count("--mpi=pmi2") == 1
    assert "--mpi=pmi2" not in argv(mpich, "srun", ["--mpi=pmix"]) and "--mpi=pmix" in argv(mpich, "srun", ["--mpi=pmix"])
    # Debian's Open MPI 4.1 has no PMI-1/2 client (ompi_info: pmix ext3x, isolated, flux): without --mpi=pmix each
    # rank started by srun would initialise alone, a world of one
    assert [a for a in argv(ompi, "srun") if a.startswith("--mpi")] == ["--mpi=pmix"]
    assert [a for a in argv(ompi, "srun", ["--mpi=pmix_v4"]) if a.startswith("--mpi")] == ["--mpi=pmix_v4"]
    assert not any(a.startswith("--mpi") for a in argv(mpich, "auto"))
