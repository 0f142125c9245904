"""diagnose --plan's script and hostile host names from an ibnetdiscover file.

Node descriptions are set by whoever is root on a node.  ``EOF||touch${IFS}/tmp/x``
is refused on import (not a host name); ``EOF`` is a valid host name, and it ended
the script's here-document so that the next host names ran as commands.  The
script is run for real, in a temporary folder, with a fake ``fabscope`` and a
fake command named like the next host on PATH: nothing may run but fabscope.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fabscope.cli import main

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "fabric", "data")
TOPO = os.path.join(DATA, "ibnetdiscover.small.txt")


def _hostile_topology(tmp_path, names: dict[str, str]):
    text = open(TOPO).read()
    for old, new in names.items():
        assert f'# "{old}"' in text
        text = text.replace(f'# "{old}"', f'# "{new} HCA-1"')
    p = tmp_path / "topo.txt"
    p.write_text(text)
    return p


def test_shell_metacharacters_in_a_host_name_refused_on_import(tmp_path, capsys):
    p = _hostile_topology(tmp_path, {"H-3-3": "EOF||touch${IFS}/tmp/x"})
    assert main(["fabric", "import", "--ibnetdiscover", str(p), "-o", str(tmp_path / "f.json")]) == 1
    err = capsys.readouterr().err
    assert "host name 'EOF||touch${IFS}/tmp/x' has '|'" in err and err.count("\n") == 1


def test_plan_script_runs_no_host_name(tmp_path, capsys):
    p = _hostile_topology(tmp_path, {"H-3-3": "EOF", "H-3-2": "zzpwned", "H-3-1": "zzpwned2"})
    fabric = tmp_path / "f.json"
    assert main(["fabric", "import", "--ibnetdiscover", str(p), "-o", str(fabric)]) == 0
    script = tmp_path / "plan.sh"
    assert main(["diagnose", "--plan", "--fabric", str(fabric), "-o", str(script)]) == 0
    capsys.readouterr()
    assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode == 0
    fake = tmp_path / "bin"
    fake.mkdir()
    log, pwned = tmp_path / "fabscope.log", tmp_path / "PWNED"
    (fake / "fabscope").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n')
    for name in ("zzpwned", "zzpwned2", "H-3-0"):
        (fake / name).write_text(f"#!/bin/sh\ntouch {pwned}\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    run = tmp_path / "run"
    run.mkdir()
    env = {**os.environ, "PATH": f"{fake}:/usr/bin:/bin"}
    r = subprocess.run(["sh", str(script)], cwd=run, env=env, capture_output=True, text=True, timeout=60)
    assert not pwned.exists(), "a host name ran as a command"
    assert r.returncode == 0, r.stderr
    hosts = (run / "plan-leaf003.hosts").read_text().split()
    assert "EOF" in hosts and "zzpwned" in hosts
    assert log.read_text().count("measure") == 5


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
