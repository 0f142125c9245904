"""How fast and in how much memory a wrong file is refused: 200 MB of random bytes as ibnetdiscover output.

    python bench/bench_junk_input.py [--mb 200]

Prints, for the streaming readers of ibnetdiscover output and of forwarding
tables, the seconds to refuse the file and the peak Python memory while doing
so (tracemalloc), beside reading the whole file into memory once (what the
readers did before, and the least any reader that does not stream must pay).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc

from fabscope.errors import FabscopeError
from fabscope.fabric.importers import read_ibnetdiscover, read_lfts


def measure(fn, path: str) -> tuple[float, int, str]:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn(path)
        msg = "accepted?!"
    except FabscopeError as err:
        msg = str(err).replace(path, "FILE")
    took = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return took, peak, msg


def read_whole(path: str) -> None:
    with open(path, encoding="utf-8", errors="replace") as fh:
        fh.read().splitlines()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "random.bin")
        with open(path, "wb") as fh:
            for _ in range(a.mb):
                fh.write(os.urandom(1 << 20))
        print(f"{a.mb} MB of random bytes:")
        print(f"  {'reader':<34} {'seconds':>8} {'peak MB':>8}  message")
        for name, fn in (("read_ibnetdiscover (streams)", read_ibnetdiscover), ("read_lfts (streams)", read_lfts),
                         ("whole file read and split (peer)", read_whole)):
            took, peak, msg = measure(fn, path)
            print(f"  {name:<34} {took:8.3f} {peak / 1e6:8.1f}  {msg if fn is not read_whole else '-'}")


if __name__ == "__main__":
    main()
