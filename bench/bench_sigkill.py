"""How long a job outlives a SIGKILL of ``fabscope measure``: the supervisor's clean-up time.

    python bench/bench_sigkill.py [--np 2] [--repeat 3]

Starts ``fabscope measure --np N random-pairs`` (a long run), waits for its
first pairs, kills fabscope with SIGKILL and prints the seconds until no
process of the job (launcher, proxies, ranks, supervisor) is left, each
found by a marker in its environment.  The test
(``tests/measure/test_robust.py::test_sigkill_of_fabscope_leaves_no_process_of_the_job``)
asserts under 5 s; this prints the figure.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

NAMES = {"fabscope-bench", "hydra_pmi_proxy", "mpiexec", "mpiexec.hydra", "mpirun", "python", "python3"}


def job_processes(marker: str) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                st = fh.read()
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if st[st.rindex(")") + 2] != "Z" and f"FABSCOPE_BENCH_MARK={marker}".encode() in env:
            out.append(int(name))
    return out


def once(np: int, folder: str) -> float:
    marker = uuid.uuid4().hex
    out = os.path.join(folder, f"run-{marker}.jsonl")
    env = {**os.environ, "FABSCOPE_BENCH_MARK": marker}
    p = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "measure", "--np", str(np), "random-pairs",
                          "--size", "65536", "--iterations", "50", "--rounds", "1000000", "--out", out],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        parts = glob.glob(os.path.join(folder, f".run-{marker}.jsonl.*.part"))
        if parts and open(parts[0]).read().count('"type":"pair"') >= 5:
            break
        time.sleep(0.05)
    else:
        p.kill()
        raise SystemExit("the job wrote no pairs in 120 s")
    p.send_signal(signal.SIGKILL)
    p.wait()
    t0 = time.monotonic()
    while job_processes(marker) and time.monotonic() - t0 < 30:
        time.sleep(0.01)
    left = job_processes(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    if left:
        raise SystemExit(f"{len(left)} processes of the job still ran 30 s after SIGKILL")
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        times = [once(a.np, d) for _ in range(a.repeat)]
    print(f"fabscope measure --np {a.np} random-pairs, SIGKILL mid-run: the last process of the job gone after "
          + ", ".join(f"{t:.2f}" for t in times) + " s")


if __name__ == "__main__":
    main()
