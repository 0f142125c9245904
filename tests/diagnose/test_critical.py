"""fabric critical: every cable cut in turn; serial and on a real local Dask cluster; jobqueue configs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.critical import criticality, jobqueue_cluster
from fabscope.errors import FabscopeError
from fabscope.fabric.io import load_fabric
from fabscope.fabric.placement import Placement
from fabscope.whatif import whatif
from fabscope.traffic.patterns import random_pairs

SPEC = "fat-tree:k=4,levels=2,up=2"


def test_cut_sweep_agrees_with_whatif_of_each_cable(tmp_path, capsys):
    out = tmp_path / "crit.json"
    assert main(["fabric", "critical", "--fabric", SPEC, "--workers", "0", "--routing", "minhop", "--ppn", "1",
                 "--size", "1MB", "-o", str(out)]) == 0
    assert "cables cut in turn (serial" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["meta"]["kind"] == "critical"
    rows = doc["extra"]["criticality"]
    f = load_fabric(SPEC)
    assert len(rows) == f.n_links // 2
    lost = [r["lost"] for r in rows]
    assert lost == sorted(lost, reverse=True) and lost[0] > 0
    # the top switch cable, checked against the what-if module run on its own
    pl = Placement.block(f, f.n_hosts, 1)
    tr = random_pairs(f.n_hosts, 1e6, seed=0)
    top = next(r for r in rows if not r["cable"].startswith("h"))
    w = whatif(f, [top["cable"].split(" -- ")[0]], pl, tr, "minhop")
    assert top["lost"] == pytest.approx(float(w.bw_before.sum() - w.bw_after.sum()), rel=1e-6)
    assert top["losing_pairs"] == w.n_losing


def test_local_dask_cluster_gives_the_serial_answer():
    pytest.importorskip("dask.distributed")
    f = load_fabric(SPEC)
    pl = Placement.block(f, f.n_hosts, 1)
    tr = random_pairs(f.n_hosts, 1e6, seed=1)
    cables = [0, 5, 11, 17, 20, 23]
    serial = criticality(f, pl, tr, "minhop", cables=cables, workers=0)
    dask = criticality(f, pl, tr, "minhop", cables=cables, workers=2)
    assert dask.meta["executor"] == "dask LocalCluster, 2 workers"
    assert [(r["cable"], round(r["lost"])) for r in dask.extra["criticality"]] == \
        [(r["cable"], round(r["lost"])) for r in serial.extra["criticality"]]
    deg = criticality(f, pl, tr, "minhop", cables=cables, workers=0, mode="degrade", factor=0.5)
    assert all(r["lost"] >= -1e-6 for r in deg.extra["criticality"])


def test_jobqueue_config_gives_a_slurm_job_script(tmp_path, capsys):
    pytest.importorskip("dask_jobqueue")
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text("jobqueue: slurm\njobs: 3\ncores: 8\nmemory: 16GB\nwalltime: '01:30:00'\nqueue: batch\n"
                   "account: proj42\n")
    cluster, jobs = jobqueue_cluster(str(cfg))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert jobs == 3
    for line in ("#SBATCH -p batch", "#SBATCH -A proj42", "#SBATCH -t 01:30:00", "#SBATCH -n 1",
                 "#SBATCH --cpus-per-task=8"):
        assert line in script, script
    assert main(["fabric", "critical", "--fabric", SPEC, "--scheduler", str(cfg), "--job-script"]) == 0
    assert "#SBATCH -A proj42" in capsys.readouterr().out
    pbs = tmp_path / "pbs.yaml"
    pbs.write_text("jobqueue:\n  pbs:\n    cores: 4\n    memory: 8GB\n    queue: workq\n")
    cluster, jobs = jobqueue_cluster(str(pbs))
    try:
        assert "#PBS -q workq" in cluster.job_script() and jobs == 1
    finally:
        cluster.close()


@pytest.mark.parametrize("text,msg", [
    ("cores: 8\n", "expected a mapping with 'jobqueue"),
    ("jobqueue: lsfx\ncores: 2\nmemory: 1GB\n", "unknown batch system"),
    ("jobqueue: [slurm\ncores: 2\n", "not valid YAML"),
    ("jobqueue: slurm\njobs: -1\ncores: 2\nmemory: 1GB\n", "'jobs' must be a positive integer"),
    ("jobqueue: slurm\ncores: 2\nmemory: 1GB\nbogus_option: 3\n", "refused the options"),
])
def test_bad_scheduler_files_are_one_line(tmp_path, capsys, text, msg):
    pytest.importorskip("dask_jobqueue")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    out = tmp_path / "o.json"
    assert main(["fabric", "critical", "--fabric", SPEC, "--scheduler", str(cfg), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0], err
    assert not out.exists()


def test_a_refused_batch_job_is_one_line_not_a_wait(tmp_path):
    """sbatch exits 1: one line naming its error, exit 1, no traceback, no wait for workers that never come."""
    import os
    import subprocess
    import sys

    pytest.importorskip("dask_jobqueue")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition "
                                 "name specified' >&2\nexit 1\n")
    (bin_ / "sbatch").chmod(0o755)
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text("jobqueue: slurm\njobs: 1\ncores: 1\nmemory: 1GB\nwalltime: '00:10:00'\n")
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-m", "fabscope.cli", "fabric", "critical", "--fabric", SPEC,
                        "--scheduler", str(cfg), "-o", str(tmp_path / "c.json")], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    err = r.stderr.strip()
    assert r.returncode == 1 and "\n" not in err and "Traceback" not in err, err
    assert "did not take the workers' job (sbatch: error: Batch job submission failed" in err, err
    assert not (tmp_path / "c.json").exists()
