"""diagnose --plan's script: host names from a file are data, the launcher is the one given,
and the last line diagnoses against the nominal fabric."""

from __future__ import annotations

import os
import shlex
import subprocess
from importlib import resources

import pytest

from fabscope.cli import main

# names a shell would run are refused on import (tests/diagnose/test_plan_injection.py); these pass the
# import rule but would break a script that pasted them: a here-document's end, a command, an option
HOSTILE = {"H-3-0": "EOF", "H-3-1": "touch", "H-3-2": "rm", "H-3-3": "EOF.-rf"}


@pytest.fixture
def hostile_fabric(tmp_path):
    """The sample ibnetdiscover file with four host descriptions a shell would run, imported."""
    text = resources.files("fabscope.data.samples").joinpath("ibnetdiscover.small.txt").read_text()
    for old, new in HOSTILE.items():
        text = text.replace(f'"{old}"', f'"{new}"')
    (tmp_path / "topo.txt").write_text(text)
    out = tmp_path / "fabric.json"
    assert main(["fabric", "import", "--ibnetdiscover", str(tmp_path / "topo.txt"), "-o", str(out)]) == 0
    return out


def run_script(path, cwd):
    """Run the plan with $FABSCOPE a recorder of its argument lists (one line of words each)."""
    rec = cwd / "fabscope-calls"
    fake = cwd / "fake-fabscope"
    # one write per call (jobs run side by side): the words joined by tabs
    fake.write_text('#!/bin/sh\nline=\nfor a in "$@"; do line="$line$a$(printf \'\\t\')"; done\n'
                    'printf "%s\\n" "$line" >> "$REC"\n')
    fake.chmod(0o755)
    subprocess.run(["sh", str(path)], cwd=cwd, check=True, timeout=60,
                   env={**os.environ, "FABSCOPE": str(fake), "REC": str(rec)})
    return [ln.rstrip("\t").split("\t") for ln in rec.read_text().splitlines()]


def test_hostile_host_names_are_written_not_run(hostile_fabric, tmp_path):
    from fabscope.fabric.io import load_fabric

    script = tmp_path / "plan.sh"
    assert main(["diagnose", "--plan", "--fabric", str(hostile_fabric), "--budget", "5min",
                 "--launcher", "mpiexec", "-o", str(script)]) == 0
    text = script.read_text()
    assert "<<" not in text                       # no here-document a host called EOF could end
    calls = run_script(script, tmp_path)
    assert not list(tmp_path.glob("MARK*")), "a host name ran as shell"
    names = set(load_fabric(str(hostile_fabric)).host_names)
    assert set(HOSTILE.values()) <= names or {n.split()[0] for n in HOSTILE.values()} <= names, names
    written = set()
    for hf in tmp_path.glob("plan-*.hosts"):
        written |= set(hf.read_text().splitlines())
    assert written == names                       # every host, exactly as named
    measures = [c for c in calls if c[0] == "measure"]
    assert measures and all(c[1:3] == ["--launcher", "mpiexec"] for c in measures)
    assert calls[-1][0] == "diagnose" and calls[-1][-2:] == ["--fabric", str(hostile_fabric)]
    assert {c[-1] for c in measures} == set(calls[-1][1:-2])   # it diagnoses every output


def test_plan_on_a_testbed_name_measures_there_and_diagnoses_the_nominal_fabric(tmp_path, monkeypatch):
    """--fabric tb1:now plans on the testbed as built and ends with 'diagnose --fabric tb1' (state faked
    by a real testbed state file: the fabric as 'up' records it, no namespaces needed to plan)."""
    from fabscope.fabric.generators import fat_tree
    from fabscope.fabric.io import to_dict
    from fabscope.routing import make_routing
    from fabscope.testbed import state
    from fabscope.testbed.plan import forwarding, make_plan

    monkeypatch.setenv("FABSCOPE_TESTBED_DIR", str(tmp_path / "state"))
    p = make_plan("ci7", fat_tree(k=4, levels=2), 5e6)
    lft = forwarding(p.fabric, make_routing(p.fabric, "dmodk"))
    from dataclasses import replace
    st = state.State(name="ci7", spec="fat-tree:k=4,levels=2", routing="dmodk", rate=5e6, mgmt_subnet="10.233.9",
                     fabric=to_dict(p.fabric), scale=p.scale, efficiency=p.efficiency,
                     nominal=to_dict(replace(p.fabric, lft=lft)))
    st.degraded["20"] = 1e3                        # a fault: the plan must not plan around it
    state.save(st)
    script = tmp_path / "plan.sh"
    assert main(["diagnose", "--plan", "--fabric", "ci7:now", "--budget", "5min", "-o", str(script)]) == 0
    lines = script.read_text().splitlines()
    measures = [shlex.split(ln.split("&")[0])[1:] for ln in lines if ln.startswith("$FABSCOPE measure")]
    assert measures and all(m[1:3] == ["--testbed", "ci7"] for m in measures)
    assert shlex.split(lines[-1])[-2:] == ["--fabric", "ci7"]
    hosts = shlex.split([ln for ln in lines if ln.startswith("printf")][0])[2:-2]
    assert hosts and all(h.startswith("fstb-ci7-h") for h in hosts)


def test_sbatch_plan_is_a_batch_job_launched_by_srun(tmp_path):
    """--sbatch: #SBATCH asks for every host, each job is launched by srun, the diagnosis is stored
    and its exit status passed on (3: a suspect found); refused without --plan or with another launcher."""
    script = tmp_path / "health.sh"
    assert main(["diagnose", "--plan", "--sbatch", "--fabric", "fat-tree:k=4,levels=2", "--budget", "5min",
                 "-o", str(script)]) == 0
    text = script.read_text().splitlines()
    assert text[0] == "#!/bin/sh" and text[1].startswith("#SBATCH --nodes=16 --ntasks-per-node=1")
    calls = run_script(script, tmp_path)
    measures = [c for c in calls if c[0] == "measure"]
    assert measures and all(c[1:3] == ["--launcher", "srun"] for c in measures)
    assert calls[-1][0] == "diagnose" and calls[-1][-3:] == ["-o", "plan-diagnosis.json", "--exit-status"]
    assert main(["diagnose", "--sbatch", "--fabric", "fat-tree:k=4,levels=2"]) == 1
    assert main(["diagnose", "--plan", "--sbatch", "--launcher", "mpiexec", "--fabric", "fat-tree:k=4,levels=2"]) == 1
