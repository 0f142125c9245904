"""Link rates by name: InfiniBand generations (SDR to XDR) and Ethernet speeds, as MPI sees them.

A cable's capacity in fabscope is what one MPI ping-pong reaches over it,
in bytes/s: the link's data rate (after line coding) times the share of it
that MPI reaches on hosts of that generation.  Every spec's ``capacity=``
(and ``rate=``, ``global_capacity=``) and the ``ibnetdiscover`` importer
read rates through :func:`named_rate` and :func:`link_rate`, so a name
means the same bytes/s everywhere.

======== ================ ========== =====================================================
speed    data Gb/s a lane MPI share  where the share comes from
======== ================ ========== =====================================================
SDR      2                0.768      seed 000's QDR share (no seed measures SDR)
DDR      4                0.768      seed 000's QDR share (seed 001's DDR hosts, same era)
QDR      8                0.768      seed 000: 3071 MB/s of 4x QDR's 4 GB/s
FDR10    10               0.768      seed 000's share (PCIe gen2/gen3 hosts of its time)
FDR      13.64            0.92       ConnectX-3 FDR osu_bw about 6.3 GB/s of 6.8 (vendor)
EDR      25               0.97       ConnectX-4/5 EDR osu_bw about 12.1 GB/s of 12.5 (vendor)
HDR      50               0.97       ConnectX-6 HDR osu_bw about 24.3 GB/s of 25 (vendor)
NDR      100              0.96       ConnectX-7 NDR osu_bw about 48 GB/s of 50 (vendor)
XDR      200              0.96       no published MPI figure: NDR's share assumed
======== ================ ========== =====================================================

Ethernet (``10GbE`` to ``800GbE``) uses 0.92 of the line rate, the share
RDMA over Converged Ethernet reaches for large messages; MPI over plain TCP
reaches less.  Where a machine's own ``osu_bw`` figure is known,
``capacity=`` takes it as a number and wins over any name.

>>> round(named_rate("QDR") / 1e6)                 # 4x is the default width
3071
>>> round(named_rate("4xNDR") / 1e9, 1), round(named_rate("NDR200") / 1e9, 1), round(named_rate("hdr100") / 1e9, 2)
(48.0, 24.0, 12.12)
>>> round(named_rate("400GbE") / 1e9)
46
>>> named_rate("QDR") == link_rate(4, "QDR")
True
"""

from __future__ import annotations

import re

from fabscope.errors import FabricError

#: data rate of one InfiniBand lane, Gb/s, after line coding (8b/10b to SDR-QDR, 64b/66b from FDR)
LANE_GBPS = {"SDR": 2.0, "DDR": 4.0, "QDR": 8.0, "FDR10": 10.0, "FDR": 13.64, "EDR": 25.0,
             "HDR": 50.0, "NDR": 100.0, "XDR": 200.0}

#: seed 000's QDR link gave 3071 MB/s of its 4 GB/s
SEED000_SHARE = 3071e6 / 4e9

#: share of the data rate an MPI ping-pong reaches, per speed (the module's table says where each is from)
MPI_SHARE = {"SDR": SEED000_SHARE, "DDR": SEED000_SHARE, "QDR": SEED000_SHARE, "FDR10": SEED000_SHARE,
             "FDR": 0.92, "EDR": 0.97, "HDR": 0.97, "NDR": 0.96, "XDR": 0.96}

#: Ethernet speeds by name, Gb/s, and the share of them MPI reaches (RoCE, large messages)
ETHERNET_GBPS = {"1GbE": 1, "10GbE": 10, "25GbE": 25, "40GbE": 40, "50GbE": 50, "100GbE": 100,
                 "200GbE": 200, "400GbE": 400, "800GbE": 800}
ETHERNET_SHARE = 0.92

#: InfiniBand port widths, lanes
WIDTHS = (1, 2, 4, 8, 12)

_IB = re.compile(r"(?:(\d{1,2})x\s*)?([a-z]+\d*?)(\d{3})?", re.IGNORECASE)


def link_rate(width: int, speed: str) -> float:
    """Bytes/s an MPI ping-pong reaches over a ``width``x ``speed`` InfiniBand link.

    >>> round(link_rate(4, "QDR") / 1e6), round(link_rate(1, "EDR") / 1e9, 2)
    (3071, 3.03)
    """
    if speed not in LANE_GBPS:
        raise FabricError(f"unknown InfiniBand speed {speed[:20]!r}; known: {', '.join(LANE_GBPS)}")
    return width * LANE_GBPS[speed] * 1e9 / 8 * MPI_SHARE[speed]


def rate_names() -> str:
    """The names :func:`named_rate` takes, for an error message."""
    return f"{', '.join(LANE_GBPS)} (4x unless written: 1xHDR, 2xNDR, HDR100, NDR200), {', '.join(ETHERNET_GBPS)}"


def named_rate(text: str) -> float:
    """Bytes/s of a link named ``text``: ``NDR``, ``4xHDR``, ``HDR100`` (2x HDR), ``NDR200``, ``100GbE``.

    A name that is none of these raises :class:`FabricError` listing the names.
    """
    t = text.strip()
    for name, gbps in ETHERNET_GBPS.items():
        if t.lower() == name.lower():
            return gbps * 1e9 / 8 * ETHERNET_SHARE
    m = _IB.fullmatch(t)
    if m:
        speed = m.group(2).upper()
        if speed in LANE_GBPS:
            width = int(m.group(1)) if m.group(1) else 4
            if m.group(3):                       # HDR100, NDR200, NDR400: the port's Gb/s names its width
                if m.group(1):
                    width = 0
                else:
                    lanes = int(m.group(3)) / LANE_GBPS[speed]
                    width = int(lanes) if lanes == int(lanes) else 0
            if width in WIDTHS:
                return link_rate(width, speed)
    raise FabricError(f"link rate {text.strip()[:30]!r} is neither a number of bytes/s nor a rate name; "
                      f"names: {rate_names()}")
