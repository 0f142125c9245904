"""Read ``ibnetdiscover`` output, default and ``-p`` (one line per port) forms.

The result is a :class:`Topology`: InfiniBand nodes keyed by GUID and the
cables between their ports, with each cable's width and speed, every
port's LID and LMC, and the line of the file each came from, so that a
fault is reported by its line.  :func:`fabscope.fabric.importers.build_fabric`
turns it into a :class:`~fabscope.fabric.model.Fabric`.

>>> text = '''
... Switch	8 "S-0000000000200000"		# "L0" base port 0 lid 2 lmc 0
... [1]	"H-0000000000100000"[1](100001) 		# "H-0-0" lid 1 4xQDR
...
... Ca	1 "H-0000000000100000"		# "H-0-0"
... [1](100001) 	"S-0000000000200000"[1]		# lid 1 lmc 0 "L0" lid 2 4xQDR
... '''
>>> t = parse_ibnetdiscover(text)
>>> sorted((n.kind, n.desc, n.lid) for n in t.nodes.values())
[('CA', 'H-0-0', 1), ('SW', 'L0', 2)]
>>> [(l.a_port, l.b_port, l.width, l.speed) for l in t.links]
[(1, 1, 4, 'QDR')]
>>> round(link_rate(4, "QDR") / 1e6)        # bytes/s: QDR's 4 GB/s at seed 000's 3071 MB/s
3071
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabscope.errors import FabricError

#: data rate of one lane, Gb/s, after line coding
LANE_GBPS = {"SDR": 2.0, "DDR": 4.0, "QDR": 8.0, "FDR10": 10.0, "FDR": 13.64, "EDR": 25.0,
             "HDR": 50.0, "NDR": 100.0, "XDR": 200.0}
#: share of the data rate MPI reaches: seed 000's QDR link gave 3071 MB/s of 4 GB/s
MPI_EFFICIENCY = 3071e6 / 4e9


def link_rate(width: int, speed: str) -> float:
    """Bytes/s an MPI ping-pong reaches over a ``width``x ``speed`` link."""
    if speed not in LANE_GBPS:
        raise FabricError(f"unknown InfiniBand speed {speed!r}; known: {', '.join(LANE_GBPS)}")
    return width * LANE_GBPS[speed] * 1e9 / 8 * MPI_EFFICIENCY


@dataclass
class IbNode:
    guid: int
    kind: str                      # "SW" or "CA"
    desc: str
    n_ports: int
    line: int
    lid: int = 0                   # switch: port 0; CA: its first port with a LID
    lmc: int = 0
    port_lid: dict[int, int] = field(default_factory=dict)
    port_guid: dict[int, int] = field(default_factory=dict)


@dataclass
class IbLink:
    a: int
    a_port: int
    b: int
    b_port: int
    width: int
    speed: str
    line: int


@dataclass
class Topology:
    nodes: dict[int, IbNode]
    links: list[IbLink]
    source: str = "ibnetdiscover"

    def where(self, line: int) -> str:
        return f"{self.source} line {line}"


_KIND = {"switch": "SW", "ca": "CA", "sw": "SW", "rt": "RT", "router": "RT"}
_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*(?:#\s*"(.*)"(.*))?$')
_SW_PORT = re.compile(r'^\[(\d+)\](?:\(\w+\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\((\w+)\))?\s*'
                      r'#\s*"(.*)"\s+lid\s+(\d+)\s+(\d+)x\s*([A-Z0-9]+)')
_CA_PORT = re.compile(r'^\[(\d+)\](?:\((\w+)\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\(\w+\))?\s*'
                      r'#\s*lid\s+(\d+)\s+lmc\s+(\d+)\s+"(.*)"\s+lid\s+(\d+)\s+(\d+)x\s*([A-Z0-9]+)')
_P_LINE = re.compile(r"^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+(\d+)x\s*([A-Z0-9]+)\s+-\s+"
                     r"(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)\s*$")
_P_DOWN = re.compile(r"^(CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_SKIP = ("vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=", "#")


def parse_ibnetdiscover(text: str, source: str = "ibnetdiscover") -> Topology:
    """Parse either form of ``ibnetdiscover`` output (the form is detected)."""
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            if _P_LINE.match(s) or _P_DOWN.match(s):
                return _parse_p(text, source)
            break
    return _parse_default(text, source)


def read_ibnetdiscover(path: str) -> Topology:
    return parse_ibnetdiscover(_read(path), path)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as err:
        raise FabricError(f"cannot read {path}: {err.strerror}") from None


def _parse_default(text: str, source: str) -> Topology:
    nodes: dict[int, IbNode] = {}
    ends: dict[tuple[int, int], tuple[int, int, int, str, int]] = {}
    cur: IbNode | None = None
    topo = Topology(nodes, [], source)
    for n, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith(_SKIP):
            if not s:
                cur = None
            continue
        m = _HEADER.match(s)
        if m:
            kind = _KIND[m.group(1).lower()]
            if kind == "RT":
                raise FabricError(f"{topo.where(n)}: routers are not supported ({s[:60]!r})")
            guid = int(m.group(4), 16)
            if guid in nodes:
                raise FabricError(f"{topo.where(n)}: node {m.group(3)}-{m.group(4)} is described twice "
                                  f"(first at line {nodes[guid].line})")
            cur = IbNode(guid, kind, m.group(5) if m.group(5) is not None else m.group(3) + "-" + m.group(4),
                         int(m.group(2)), n)
            rest = m.group(6) or ""
            lm = re.search(r"\blid\s+(\d+)\s+lmc\s+(\d+)", rest)
            if lm:
                cur.lid, cur.lmc = int(lm.group(1)), int(lm.group(2))
            nodes[guid] = cur
            continue
        if cur is None:
            raise FabricError(f"{topo.where(n)}: garbled ibnetdiscover output: {s[:60]!r} is outside any node")
        m = _SW_PORT.match(s) if cur.kind == "SW" else _CA_PORT.match(s)
        if not m:
            raise FabricError(f"{topo.where(n)}: garbled ibnetdiscover port line {s[:60]!r}")
        if cur.kind == "SW":
            port, rguid, rport = int(m.group(1)), int(m.group(3), 16), int(m.group(4))
            width, speed = int(m.group(8)), m.group(9)
        else:
            port, rguid, rport = int(m.group(1)), int(m.group(4), 16), int(m.group(5))
            cur.port_lid[port] = int(m.group(6))
            if m.group(2):
                cur.port_guid[port] = int(m.group(2), 16)
            cur.lmc = max(cur.lmc, int(m.group(7)))
            if not cur.lid:
                cur.lid = int(m.group(6))
            width, speed = int(m.group(10)), m.group(11)
        if not 1 <= port <= max(cur.n_ports, 1):
            raise FabricError(f"{topo.where(n)}: port {port} of {cur.desc!r}, which has {cur.n_ports} ports")
        ends[(cur.guid, port)] = (rguid, rport, width, speed, n)
    _pair_ends(topo, ends)
    return topo


def _pair_ends(topo: Topology, ends: dict[tuple[int, int], tuple[int, int, int, str, int]]) -> None:
    """Each cable is listed from both ends: check they agree, keep it once."""
    for (g, p), (rg, rp, w, sp, n) in ends.items():
        if rg not in topo.nodes:
            raise FabricError(f"{topo.where(n)}: port {p} of {topo.nodes[g].desc!r} leads to node {rg:#018x}, "
                              "which the file never describes (truncated output?)")
        back = ends.get((rg, rp))
        if back is not None and back[:2] != (g, p):
            raise FabricError(f"{topo.where(n)}: {topo.nodes[g].desc!r}[{p}] -> {topo.nodes[rg].desc!r}[{rp}], "
                              f"but line {back[4]} says that port leads elsewhere")
        if back is None:
            raise FabricError(f"{topo.where(n)}: {topo.nodes[g].desc!r}[{p}] -> {topo.nodes[rg].desc!r}[{rp}], "
                              "but the far end does not list this cable (truncated output?)")
        if (g, p) < (rg, rp) or back is None:
            topo.links.append(IbLink(g, p, rg, rp, w, sp, n))


def _parse_p(text: str, source: str) -> Topology:
    nodes: dict[int, IbNode] = {}
    ends: dict[tuple[int, int], tuple[int, int, int, str, int]] = {}
    topo = Topology(nodes, [], source)

    def node(kind: str, lid: int, port: int, guid: int, desc: str, n: int) -> None:
        if kind == "RT":
            raise FabricError(f"{topo.where(n)}: routers are not supported")
        nd = nodes.get(guid)
        if nd is None:
            nd = nodes[guid] = IbNode(guid, kind, desc, 0, n)
        nd.n_ports = max(nd.n_ports, port)
        if kind == "CA":
            nd.port_lid[port] = lid
            nd.port_guid[port] = guid
            nd.lid = nd.lid or lid
        else:
            nd.lid = lid

    for n, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = _P_LINE.match(s)
        if not m:
            if _P_DOWN.match(s) and " - " not in s:
                continue            # a port with nothing attached
            raise FabricError(f"{topo.where(n)}: garbled ibnetdiscover -p line {s[:60]!r}")
        ka, la, pa, ga = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4), 16)
        kb, lb, pb, gb = m.group(7), int(m.group(8)), int(m.group(9)), int(m.group(10), 16)
        node(ka, la, pa, ga, m.group(11), n)
        node(kb, lb, pb, gb, m.group(12), n)
        ends[(ga, pa)] = (gb, pb, int(m.group(5)), m.group(6), n)
    _pair_ends(topo, ends)
    return topo
