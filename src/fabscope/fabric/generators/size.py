"""How big a generated fabric will be, checked before anything is allocated.

Every generator has an estimator beside it (``torus_size`` next to
``torus``...) that counts hosts, switches and directed links from the
parameters alone, with Python integers (so ``hypercube:d=60`` is counted,
not built).  :func:`check_size` turns the count into bytes and seconds and
refuses a fabric that would not fit in memory, with the estimate in the one
line it raises.

The memory limit is :func:`fabscope.limits.memory_limit`: ``FABSCOPE_MAX_MEMORY``
(bytes, or with a unit: ``8G``, ``500MB``) when set, else the machine's
available memory.

>>> s = Size(hosts=10 ** 15, switches=10 ** 15, links=8 * 10 ** 15, bytes_per_link=380)
>>> human_bytes(s.bytes)
'3.0 EB'
>>> check_size("torus:100000x100000x100000", s, limit=(16 * 10 ** 9, "FABSCOPE_MAX_MEMORY"))
Traceback (most recent call last):
...
fabscope.errors.FabricError: torus:100000x100000x100000: 1e+15 hosts, 1e+15 switches, 8e+15 links: about 3.0 EB of fabric; the limit is 16.0 GB (FABSCOPE_MAX_MEMORY)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from fabscope.errors import FabricError, FabscopeWarning
from fabscope.limits import human_bytes, human_seconds, memory_limit, parse_memory

__all__ = ["Size", "check_size", "describe", "human_bytes", "human_seconds", "memory_limit", "parse_memory"]

# Calibration (peak RSS growth of load_fabric over a fresh interpreter, and wall time, on this 2-core
# machine; script: for each spec, resource.getrusage before and after load_fabric(spec)):
#   torus:64x64x16          131,072 nodes   524,288 links   186 MB   1.35 s
#   torus:64x64x64          524,288 nodes 2,097,152 links   740 MB  11.9 s
#   hypercube:d=17          262,144 nodes 2,490,368 links   893 MB  14.2 s
#   director:radix=1024     262,912 nodes 1,048,576 links   243 MB   0.60 s
#   dragonfly:a=16,p=8,h=8,g=129  18,576 nodes 80,496 links  18 MB   0.07 s
#   fat-tree:k=64,levels=3  274,432 nodes 1,572,864 links   187 MB   0.26 s
#   xgft:m=64x64x16,w=1x16x16 67,072 nodes  172,032 links    28 MB   0.04 s
# Generators that add cables one at a time (FabricBuilder: torus, mesh, hypercube, dragonfly, director,
# itasca) cost about 360 B and up to 6 us per directed link, their nodes little beside; the vectorised
# XGFT about 200 B per node and 90 B per link, 0.2 us per link.  The constants below round up.
BUILDER_BYTES_PER_LINK = 380.0
BUILDER_SECONDS_PER_LINK = 6e-6
XGFT_BYTES_PER_NODE = 200.0
XGFT_BYTES_PER_LINK = 90.0
XGFT_SECONDS_PER_LINK = 2e-7

#: nodes and links are numbered with 32-bit integers
MAX_INDEX = (1 << 31) - 1
#: a build estimated to take longer than this many seconds is announced with a warning first
SLOW_SECONDS = 10.0


@dataclass(frozen=True)
class Size:
    """What a generator will make: counts (exact integers) and the cost of making them."""

    hosts: int
    switches: int
    links: int                       # directed: two per cable
    bytes_per_link: float = BUILDER_BYTES_PER_LINK
    bytes_per_node: float = 0.0
    seconds_per_link: float = BUILDER_SECONDS_PER_LINK

    @property
    def bytes(self) -> float:
        return self.bytes_per_node * (self.hosts + self.switches) + self.bytes_per_link * self.links

    @property
    def seconds(self) -> float:
        return self.seconds_per_link * self.links


def _count(n: int) -> str:
    return f"{n:,}" if n < 10 ** 12 else f"{float(n):.0e}".replace("e+0", "e+")


def describe(size: Size) -> str:
    """``1,000 hosts, 10 switches, 2,020 links: about 768.0 kB of fabric``"""
    return (f"{_count(size.hosts)} hosts, {_count(size.switches)} switches, {_count(size.links)} links: "
            f"about {human_bytes(size.bytes)} of fabric")


def check_size(what: str, size: Size, limit: tuple[int, str] | None = None) -> None:
    """Refuse a fabric that would not fit (memory, 32-bit indices); warn of a slow build."""
    if size.hosts < 1:
        raise FabricError(f"{what}: a fabric without hosts")
    lim, source = limit if limit is not None else memory_limit()
    if size.bytes > lim:
        raise FabricError(f"{what}: {describe(size)}; the limit is {human_bytes(lim)} ({source})")
    if size.hosts + size.switches > MAX_INDEX or size.links > MAX_INDEX:
        raise FabricError(f"{what}: {describe(size)}; fabscope numbers nodes and links with 32-bit integers "
                          f"(at most {MAX_INDEX:,} of each)")
    if size.seconds > SLOW_SECONDS:
        warnings.warn(f"{what}: {describe(size)}; building it takes about {human_seconds(size.seconds)}",
                      FabscopeWarning, stacklevel=2)
