"""What a new user does: build a wheel, install it in a fresh venv, and from a
directory outside the checkout run doctor, a 2-rank measure, simulate, map and a fabric
import of the samples that ship with the package.

The wheel is built as a site builds it (``pip wheel``, isolated build), from a copy of the
checkout so that no ``build/`` folder is left in it, and checked for
setuptools' licence deprecation warning.  To stay quick, the fresh venv takes fabscope
and the ``mpich`` wheel as real installs, and numpy, scipy and the other dependencies
from this test environment's site-packages (a ``.pth`` line, as ``--system-site-packages``
would give them); the test checks that fabscope itself and its C sources come from the
fresh install, never from the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, argv))}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    if not (Path(sys.prefix) / "bin" / "mpicc").exists() and not shutil.which("mpicc"):
        pytest.skip("no mpich wheel in this environment to install beside fabscope")
    tmp = tmp_path_factory.mktemp("newcomer")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    # built from a copy: setuptools leaves build/ and *.egg-info where it builds, and a build/ in the
    # checkout makes a later 'python -m build' there fail
    tree = tmp / "checkout"
    had_build = (ROOT / "build").exists()
    shutil.copytree(ROOT, tree, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "out", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
    built = _run([*pip, "wheel", "-v", "--no-deps", "-w", str(tmp / "dist"), str(tree)])
    out = built.stdout + built.stderr
    assert had_build or not (ROOT / "build").exists(), "building the wheel left build/ in the checkout"
    assert "project.license` as a TOML table is deprecated" not in out, "setuptools' licence warning is back"
    wheel = next((tmp / "dist").glob("fabscope-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    _run([*pip, "--python", str(py), "install", "-q", "--no-deps", str(wheel), "mpich>=4.2"])
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "zz-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp / "work"
    work.mkdir()
    # a user's environment: no checkout on any path, no MPI but the one just installed, an empty cache
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not os.path.exists(os.path.join(p, "mpicc")))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FABSCOPE_", "MPI", "PYTHON", "VIRTUAL_ENV")) and k != "MPICC"}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{path}", XDG_CACHE_HOME=str(tmp / "cache"), HOME=str(tmp))
    return venv, work, env, Path(site)


def fabscope(fresh, *args: str) -> subprocess.CompletedProcess:
    venv, work, env, _ = fresh
    return _run([str(venv / "bin" / "fabscope"), *args], cwd=work, env=env, stdin=subprocess.DEVNULL)


def test_installed_wheel_is_used_not_the_checkout(fresh):
    venv, work, env, site = fresh
    where = _run([str(venv / "bin" / "python"), "-c", "import fabscope; print(fabscope.__file__)"],
                 cwd=work, env=env).stdout.strip()
    assert where.startswith(str(site)) and not where.startswith(str(ROOT))
    assert (site / "fabscope" / "csrc" / "main.c").is_file()
    assert (site / "fabscope" / "data" / "samples" / "ibnetdiscover.small.txt").is_file()
    assert (site / "fabscope" / "csrc" / "pmpi" / "fabscope_pmpi.h").is_file()          # the profiler builds
    assert (site / "fabscope" / "dynamic" / "flowsim.c").is_file()                      # the compiled engine
    assert (site / "fabscope" / "dynamic" / "ugal_choice.c").is_file()                  # ... with UGAL's choice
    assert (site / "fabscope" / "dynamic" / "flowsim.h").is_file()
    assert (site / "fabscope" / "mapping" / "algorithms" / "anneal.c").is_file()         # the mapper's annealing
    assert (site / "fabscope" / "report" / "templates").is_dir()
    built = _run([str(venv / "bin" / "python"), "-c", "from fabscope.dynamic import fast; print(fast.available(), "
                  "fast.why_not())"], cwd=work, env=env).stdout.strip()
    assert built == "True", built                                                        # the wheel builds it


def test_doctor_and_a_two_rank_measure_from_the_wheel(fresh):
    venv, work, env, site = fresh
    doc = fabscope(fresh, "doctor").stdout
    assert "2-rank job   ok" in doc
    assert f"sources {site / 'fabscope' / 'csrc'}" in doc
    assert f"picked       {venv / 'bin' / 'mpicc'}" in doc
    assert str(Path(env["XDG_CACHE_HOME"]) / "fabscope") in doc  # the build lives in the user's cache
    p = fabscope(fresh, "measure", "--np", "2", "pingpong", "--max-size", "64", "--iterations", "50",
                 "--out", "pp.jsonl", "-o", "pp.json")
    assert p.stderr.startswith("MPI: mpich") and "complete" in p.stdout
    meta = json.loads((work / "pp.json").read_text())["meta"]
    assert meta["mpi"]["mpicc"] == str(venv / "bin" / "mpicc") and len(meta["mpi"]["wait"]) == 2


def test_simulate_map_and_import_the_shipped_samples(fresh):
    venv, work, env, site = fresh
    fabscope(fresh, "simulate", "--fabric", "fat-tree:k=4,levels=2", "--pattern", "random-pairs",
             "--ranks", "16", "--ppn", "1", "--size", "1MiB", "-o", "sim.json")
    assert json.loads((work / "sim.json").read_text())["schema"] == "fabscope.result"
    m = fabscope(fresh, "map", "--fabric", "fat-tree:k=4,levels=2", "--comm", "ring:8",
                 "--ppn", "2", "-o", "hosts")
    assert (work / "hosts").read_text().strip() and "Traceback" not in m.stderr
    samples = site / "fabscope" / "data" / "samples"
    fabscope(fresh, "fabric", "import", "--ibnetdiscover", str(samples / "ibnetdiscover.small.txt"),
             "--lfts", str(samples / "opensm-lfts.small.minhop"), "-o", "fabric.json")
    assert json.loads((work / "fabric.json").read_text())["schema"].startswith("fabscope.fabric")
