"""fabscope.limits: the memory a process keeps for its next arrays."""

import os
import platform
import subprocess
import sys

import pytest

# in a process of its own: malloc's settings are the process's for its whole life
PROBE = r"""
import sys
import numpy as np
from fabscope.limits import keep_freed_memory

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

took = keep_freed_memory() if sys.argv[1] == "keep" else None
a = np.ones(24 << 17)                # 24 MiB, below the 32 MiB that keep_freed_memory leaves to mmap
before = rss()
del a
print(took, before - rss())
"""


@pytest.mark.skipif(platform.system() != "Linux" or not platform.libc_ver()[0] == "glibc",
                    reason="mallopt is glibc's")
def test_freed_arrays_stay_with_the_process_only_when_asked():
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "src")}
    out = {how: subprocess.run([sys.executable, "-c", PROBE, how], capture_output=True, text=True, env=env,
                               check=True).stdout.split() for how in ("keep", "default")}
    assert out["keep"][0] == "True"
    released_kept, released_default = int(out["keep"][1]), int(out["default"][1])
    assert released_default > 20 << 20          # by default a 24 MiB array goes back to the kernel when freed
    assert released_kept < 1 << 20              # asked, the process keeps it for its next arrays
