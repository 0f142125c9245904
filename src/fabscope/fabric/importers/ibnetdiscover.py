"""Read ``ibnetdiscover`` output, default and ``-p`` (one line per port) forms.

The result is a :class:`Topology`: InfiniBand nodes keyed by GUID and the
cables between their ports, with each cable's width and speed, every
port's LID and LMC, and the line of the file each came from, so that a
fault is reported by its line.  Every LID must be a unicast LID
(1..0xBFFF) and no two ports may share one.

Files are read a line at a time and refused at the first line that cannot
be ibnetdiscover output, so a wrong file (or random bytes) costs a line, not
the whole file, in time and memory.  :func:`fabscope.fabric.importers.build_fabric`
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
>>> from fabscope.fabric.rates import link_rate   # what a 4xQDR cable carries: seed 000's 3071 MB/s
>>> round(link_rate(4, "QDR") / 1e6)
3071
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from fabscope.errors import FabricError
from fabscope.fabric.importers.lines import bounded_lines

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
    lid_line: dict[int, int] = field(default_factory=dict)   # port (0: a switch's own) -> line of its LID


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
_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*(?:#\s*"(.*)"(.*))?$', re.ASCII)
_SW_PORT = re.compile(r'^\[(\d+)\](?:\(\w+\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\((\w+)\))?\s*'
                      r'#\s*"(.*)"\s+lid\s+(\d+)\s+(\d+)x\s*([A-Z0-9]+)', re.ASCII)
_CA_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\(\w+\))?\s*'
                      r'#\s*lid\s+(\d+)\s+lmc\s+(\d+)\s+"(.*)"\s+lid\s+(\d+)\s+(\d+)x\s*([A-Z0-9]+)', re.ASCII)
_P_LINE = re.compile(r"^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+(\d+)x\s*([A-Z0-9]+)\s+-\s+"
                     r"(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)\s*$", re.ASCII)
_P_DOWN = re.compile(r"^(CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s", re.ASCII)
_SKIP = ("vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=", "#")


#: unicast LIDs; 0 is "none" and 0xC000.. are multicast
MAX_UNICAST_LID = 0xBFFF
#: no line of ibnetdiscover output is this long (node descriptions hold 64 bytes)
MAX_LINE = 4096
#: InfiniBand port numbers: 1..254 (0 is a switch's management port)
MAX_PORT = 254


def _check_port(topo: "Topology", n: int, port: int, what: str = "port") -> None:
    if not 1 <= port <= MAX_PORT:
        raise FabricError(f"{topo.where(n)}: {what} {port}; InfiniBand ports are 1..{MAX_PORT}")


def parse_ibnetdiscover(text: str | Iterable[str], source: str = "ibnetdiscover") -> Topology:
    """Parse either form of ``ibnetdiscover`` output (the form is detected); ``text`` or its lines."""
    lines = _numbered(io.StringIO(text) if isinstance(text, str) else iter(text), source)
    head: list[tuple[int, str]] = []
    for n, s in lines:
        head.append((n, s))
        if s and not s.startswith("#"):
            break
    body = _chain(head, lines)
    if head and (_P_LINE.match(head[-1][1]) or _P_DOWN.match(head[-1][1])):
        topo = _parse_p(body, source)
    else:
        topo = _parse_default(body, source)
    _check_lids(topo)
    return topo


def read_ibnetdiscover(path: str) -> Topology:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return parse_ibnetdiscover(bounded_lines(fh, path, MAX_LINE, "ibnetdiscover output"), path)
    except OSError as err:
        raise FabricError(f"cannot read {path}: {err.strerror}") from None


def _numbered(lines: Iterable[str], source: str) -> Iterator[tuple[int, str]]:
    """(line number, stripped line); a line with NUL bytes or undecodable bytes is refused as binary."""
    for n, raw in enumerate(lines, start=1):
        if len(raw.rstrip("\r\n")) > MAX_LINE:
            raise FabricError(f"{source} line {n}: longer than {MAX_LINE} characters; not ibnetdiscover output")
        if "\x00" in raw or "\ufffd" in raw:
            raise FabricError(f"{source} line {n}: binary data, not ibnetdiscover output")
        yield n, raw.strip()


def _chain(head: list[tuple[int, str]], rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield from head
    yield from rest


def _check_lid(topo: "Topology", n: int, what: str, lid: int) -> None:
    """A LID must be unicast; LID 0 (not configured) is judged once the whole file is read."""
    if lid != 0 and not 1 <= lid <= MAX_UNICAST_LID:
        raise FabricError(f"{topo.where(n)}: {what} has LID {lid}; unicast LIDs are 1..0xBFFF (1..{MAX_UNICAST_LID})")


def _check_lmc(topo: "Topology", n: int, lmc: int) -> None:
    if not 0 <= lmc <= 7:
        raise FabricError(f"{topo.where(n)}: LMC {lmc}; the LID mask control is 0..7")


def _check_lids(topo: "Topology") -> None:
    """No LID 0, and no two ports share a LID (a CA port with LMC l owns 2**l LIDs from its base)."""
    owner: dict[int, tuple[str, int]] = {}
    if topo.nodes and all(nd.lid == 0 and not any(nd.port_lid.values()) for nd in topo.nodes.values()):
        raise FabricError(f"{topo.source}: no subnet manager has configured the fabric: every port has LID 0 "
                          "(start opensm)")
    for nd in sorted(topo.nodes.values(), key=lambda x: x.line):
        kind = "switch" if nd.kind == "SW" else "CA"
        ports = nd.port_lid.items() if nd.kind == "CA" else [(0, nd.lid)]
        for port, lid in ports:
            n = nd.lid_line.get(port, nd.line)
            who = f"{kind} {nd.desc!r}" + (f" port {port}" if nd.kind == "CA" else "")
            if lid == 0:
                raise FabricError(f"{topo.where(n)}: {who} has LID 0; unicast LIDs are 1..0xBFFF "
                                  "(port down, or not configured by the subnet manager?)")
            span = 1 << nd.lmc if nd.kind == "CA" else 1
            for x in range(lid, lid + span):
                if x in owner:
                    other, m = owner[x]
                    raise FabricError(f"{topo.where(n)}: {who} has LID {x}, which {other} (line {m}) has too")
                owner[x] = (who, n)


def _parse_default(lines: Iterable[tuple[int, str]], source: str) -> Topology:
    nodes: dict[int, IbNode] = {}
    ends: dict[tuple[int, int], tuple[int, int, int, str, int]] = {}
    cur: IbNode | None = None
    topo = Topology(nodes, [], source)
    for n, s in lines:
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
            if not 1 <= cur.n_ports <= MAX_PORT:
                raise FabricError(f"{topo.where(n)}: {cur.desc!r} has {cur.n_ports} ports; "
                                  f"InfiniBand nodes have 1..{MAX_PORT}")
            rest = m.group(6) or ""
            lm = re.search(r"\blid\s+(\d+)\s+lmc\s+(\d+)", rest, re.ASCII)
            if lm:
                cur.lid, cur.lmc = int(lm.group(1)), int(lm.group(2))
                _check_lmc(topo, n, cur.lmc)
                cur.lid_line[0] = n
            if kind == "SW":
                _check_lid(topo, n, f"switch {cur.desc!r}", cur.lid)
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
            _check_lid(topo, n, f"CA {cur.desc!r} port {port}", int(m.group(6)))
            cur.port_lid[port] = int(m.group(6))
            cur.lid_line[port] = n
            if m.group(2):
                cur.port_guid[port] = int(m.group(2), 16)
            _check_lmc(topo, n, int(m.group(7)))
            cur.lmc = max(cur.lmc, int(m.group(7)))
            if not cur.lid:
                cur.lid = int(m.group(6))
            width, speed = int(m.group(10)), m.group(11)
        if not 1 <= port <= max(cur.n_ports, 1):
            raise FabricError(f"{topo.where(n)}: port {port} of {cur.desc!r}, which has {cur.n_ports} ports")
        _check_port(topo, n, rport, "remote port")
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


def _parse_p(lines: Iterable[tuple[int, str]], source: str) -> Topology:
    nodes: dict[int, IbNode] = {}
    ends: dict[tuple[int, int], tuple[int, int, int, str, int]] = {}
    topo = Topology(nodes, [], source)

    def node(kind: str, lid: int, port: int, guid: int, desc: str, n: int) -> None:
        if kind == "RT":
            raise FabricError(f"{topo.where(n)}: routers are not supported")
        nd = nodes.get(guid)
        if nd is None:
            nd = nodes[guid] = IbNode(guid, kind, desc, 0, n)
        elif nd.kind != kind:
            raise FabricError(f"{topo.where(n)}: node {guid:#018x} is a {kind} here, a {nd.kind} at line {nd.line}")
        nd.n_ports = max(nd.n_ports, port)
        if kind == "CA":
            if port not in nd.port_lid:
                _check_lid(topo, n, f"CA {desc!r} port {port}", lid)
                nd.port_lid[port], nd.lid_line[port] = lid, n
            nd.port_guid[port] = guid
            nd.lid = nd.lid or lid
        elif 0 not in nd.lid_line:
            _check_lid(topo, n, f"switch {desc!r}", lid)
            nd.lid, nd.lid_line[0] = lid, n

    for n, s in lines:
        if not s or s.startswith("#"):
            continue
        m = _P_LINE.match(s)
        if not m:
            if _P_DOWN.match(s) and " - " not in s:
                continue            # a port with nothing attached
            raise FabricError(f"{topo.where(n)}: garbled ibnetdiscover -p line {s[:60]!r}")
        ka, la, pa, ga = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4), 16)
        kb, lb, pb, gb = m.group(7), int(m.group(8)), int(m.group(9)), int(m.group(10), 16)
        _check_port(topo, n, pa)
        _check_port(topo, n, pb, "remote port")
        node(ka, la, pa, ga, m.group(11), n)
        node(kb, lb, pb, gb, m.group(12), n)
        ends[(ga, pa)] = (gb, pb, int(m.group(5)), m.group(6), n)
    _pair_ends(topo, ends)
    return topo
