"""Read forwarding tables: OpenSM's ``opensm-lfts.dump``, ``dump_fts`` and ``ibroute``.

All three list, per switch, each destination LID and the output port::

    Unicast lids [0-22] of switch Lid 2 guid 0x0000000000200000 ('L0'):    # opensm-lfts.dump
    0x0001 001 # Channel Adapter portguid 0x0000000000100001: 'H-0-0'
    22 lids dumped

    Unicast lids [0x0-0x16] of switch Lid 2 guid 0x0000000000200000 (L0):  # dump_fts, ibroute
      Lid  Out   Destination
           Port     Info
    0x0001 001 : (Channel Adapter portguid 0x0000000000100001: 'H-0-0')
    22 valid lids dumped

:func:`tables_to_lft` turns them into fabscope's ``lft[switch, host]`` (link
ids, a plain array: :class:`fabscope.routing.tables.TableRouting` routes by
it) and :func:`check_lft` follows every switch's route to every host, so a
loop, a LID no port has or a port with no cable is reported by its line.
(``dump_fts`` omits entries whose port is 128 or more; the other two are
complete.)

>>> t = parse_lfts("Unicast lids [0-1] of switch Lid 2 guid 0x0000000000200000 ('L0'):\\n"
...                "0x0001 001 # Channel Adapter portguid 0x0000000000100001: 'H-0-0'\\n1 lids dumped\\n")
>>> sw = t.switches[0x200000]
>>> sw.lids.tolist(), sw.ports.tolist(), sw.desc
([1], [1], 'L0')
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.importers.lines import bounded_lines
from fabscope.fabric.model import Fabric

_HEAD = re.compile(r"^Unicast lids \[(\S+)-(\S+)\] of switch .*?guid (0x[0-9a-fA-F]+)\s*(?:\('(.*)'\)|\((.*)\))?:?\s*$")
_FOOT = re.compile(r"^(\d+) (?:valid )?lids dumped", re.ASCII)
#: a port number that means "no route"
NO_PORT = 255
#: no line of these tables is this long
MAX_LINE = 4096


@dataclass
class SwitchTable:
    guid: int
    desc: str
    line: int
    lids: np.ndarray
    ports: np.ndarray
    lines: np.ndarray


@dataclass
class Tables:
    switches: dict[int, SwitchTable] = field(default_factory=dict)
    source: str = "lfts"


def parse_lfts(text: str | Iterable[str], source: str = "lfts") -> Tables:
    """Parse any of the three forms (the text, or its lines) into per-switch (LID, port) arrays."""
    out = Tables(source=source)
    cur: tuple[int, str, int] | None = None
    lids: list[int] = []
    ports: list[int] = []
    lines: list[int] = []

    def close(n: int, count: int | None) -> None:
        assert cur is not None
        # opensm counts the LID range, dump_fts the valid entries: never fewer than listed
        if count is not None and count < len(lids):
            raise FabricError(f"{source} line {n}: the table of switch {cur[1]!r} says {count} lids, "
                              f"but {len(lids)} were listed (garbled)")
        if cur[0] in out.switches:
            raise FabricError(f"{source} line {cur[2]}: switch {cur[1]!r} ({cur[0]:#018x}) has two tables")
        out.switches[cur[0]] = SwitchTable(cur[0], cur[1], cur[2], np.array(lids, np.int64),
                                           np.array(ports, np.int64), np.array(lines, np.int64))

    n = 0
    for n, raw in enumerate(io.StringIO(text) if isinstance(text, str) else text, start=1):
        if len(raw) > MAX_LINE:
            raise FabricError(f"{source} line {n}: longer than {MAX_LINE} characters; not a forwarding table")
        if "\x00" in raw or "\ufffd" in raw:
            raise FabricError(f"{source} line {n}: binary data, not a forwarding table")
        s = raw.strip()
        if s.startswith("0x"):
            parts = s.split(None, 2)
            if cur is None or len(parts) < 2 or not parts[1].isdecimal():
                raise FabricError(f"{source} line {n}: garbled forwarding-table entry {s[:60]!r}"
                                  + ("" if cur else " (before any 'Unicast lids' header)"))
            try:
                lid = int(parts[0], 16)
            except ValueError:
                raise FabricError(f"{source} line {n}: {parts[0]!r} is not a LID") from None
            if not 0 <= lid <= 0xFFFF or not parts[1].isascii() or int(parts[1]) > NO_PORT:
                raise FabricError(f"{source} line {n}: LID {parts[0]} port {parts[1]}: LIDs are 16 bits "
                                  f"and ports 0..{NO_PORT}")
            lids.append(lid)
            ports.append(int(parts[1]))
            lines.append(n)
            continue
        if not s or s.startswith(("Lid", "Port", "#", "ibwarn")):
            continue
        m = _HEAD.match(s)
        if m:
            if cur is not None:
                raise FabricError(f"{source} line {n}: the table of switch {cur[1]!r} (line {cur[2]}) "
                                  "has no 'lids dumped' line (truncated?)")
            cur = (int(m.group(3), 16), (m.group(4) or m.group(5) or '').strip(), n)
            lids, ports, lines = [], [], []
            continue
        m = _FOOT.match(s)
        if m and cur is not None:
            close(n, int(m.group(1)))
            cur = None
            continue
        raise FabricError(f"{source} line {n}: not a forwarding-table line: {s[:60]!r}")
    if cur is not None:
        raise FabricError(f"{source} line {n}: the table of switch {cur[1]!r} (line {cur[2]}) "
                          "ends without its 'lids dumped' line (truncated?)")
    if not out.switches:
        raise FabricError(f"{source}: no forwarding tables found")
    return out


def read_lfts(path: str) -> Tables:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return parse_lfts(bounded_lines(fh, path, MAX_LINE, "a forwarding table"), path)
    except OSError as err:
        raise FabricError(f"cannot read {path}: {err.strerror}") from None


def tables_to_lft(fabric: Fabric, tables: Tables, switch_of_guid: dict[int, int]) -> np.ndarray:
    """``lft[switch, terminal]`` (link ids, -1 none) from parsed tables: one column per host port,
    found by the port's base LID.

    ``switch_of_guid`` maps a switch GUID to its switch number in ``fabric``,
    whose ``terminal_lid``, ``switch_lid`` and ``lmc`` say which LID is whose.
    """
    if fabric.terminal_lid is None or fabric.switch_lid is None:
        raise FabricError(f"fabric {fabric.name!r} has no LIDs; import the topology with ibnetdiscover")
    nh, ns = fabric.n_hosts, fabric.n_switches
    tlid = fabric.terminal_lid
    span = 1 << fabric.lmc
    top = int(max(tlid.max(initial=0) + span, fabric.switch_lid.max(initial=0) + span, 1))
    owner = np.full(top, -1, np.int64)               # terminal (host port), or -2 - switch, or -1 none
    for k in range(span):
        owner[tlid[tlid > 0] + k] = np.flatnonzero(tlid > 0)
    # a switch's port 0 has one LID whatever the CAs' LMC (ibnetdiscover: "lmc 0"), and OpenSM packs
    # switch LIDs right after a CA's block: spreading them by the LMC took the next CA's base LID
    owner[fabric.switch_lid[fabric.switch_lid > 0]] = -2 - np.flatnonzero(fabric.switch_lid > 0)
    base = np.zeros(top, bool)
    base[tlid[tlid > 0]] = True
    # out-link of each (switch, port)
    sl = np.flatnonzero(fabric.link_src >= nh)
    max_port = int(fabric.link_src_port.max(initial=0)) + 1
    out_link = np.full((ns, max(max_port, 256)), -1, np.int64)
    out_link[fabric.link_src[sl] - nh, fabric.link_src_port[sl]] = sl
    lft = np.full((ns, fabric.n_terminals), -1, np.int32)
    src = tables.source
    for guid, t in tables.switches.items():
        if guid not in switch_of_guid:
            raise FabricError(f"{src} line {t.line}: switch {t.desc!r} ({guid:#018x}) is not in the topology")
        s = switch_of_guid[guid]
        name = fabric.node_names[nh + s]
        bad = np.flatnonzero((t.lids >= top) | (t.lids <= 0))
        if not len(bad):
            bad = np.flatnonzero(owner[t.lids] == -1)
        if len(bad):
            i = int(bad[0])
            raise FabricError(f"{src} line {t.lines[i]}: switch {name!r} has an entry for LID {int(t.lids[i])}, "
                              "which no port in the topology has")
        who = owner[t.lids]
        host = (who >= 0) & base[t.lids] & (t.ports != NO_PORT)
        lid, port, line, h = t.lids[host], t.ports[host], t.lines[host], who[host]
        if np.any(port == 0):
            i = int(np.flatnonzero(port == 0)[0])
            raise FabricError(f"{src} line {line[i]}: switch {name!r} sends host LID {int(lid[i])} to its own port 0")
        over = port >= out_link.shape[1]
        link = np.where(over, -1, out_link[s, np.minimum(port, out_link.shape[1] - 1)])
        if np.any(link < 0):
            i = int(np.flatnonzero(link < 0)[0])
            raise FabricError(f"{src} line {line[i]}: switch {name!r} sends LID {int(lid[i])} out of port "
                              f"{int(port[i])}, which has no cable")
        lft[s, h] = link
    return lft


def check_lft(fabric: Fabric, lft: np.ndarray, source: str = "tables") -> int:
    """Follow every switch's route to every host port; return how many (switch, port) have no route.

    Raises FabricError on a loop or a route that ends at the wrong host or port, naming the LID.
    """
    return int((~reachable(fabric, lft, source)).sum())


def reachable(fabric: Fabric, lft: np.ndarray, source: str = "tables") -> np.ndarray:
    """``ok[switch, terminal]``: the tables lead from the switch to the host port (loops raise FabricError)."""
    nh, ns, nt = fabric.n_hosts, fabric.n_switches, fabric.n_terminals
    idx = np.arange(ns * nt, dtype=np.int64)
    sw, h = np.divmod(idx, nt)
    cur = sw + nh
    ok = np.zeros(ns * nt, bool)
    lid = fabric.terminal_lid if fabric.terminal_lid is not None else np.arange(nt)

    def who(i: int) -> str:
        return f"LID {int(lid[h[i]])} ({fabric.terminal_label(h[i])})"

    for _ in range(ns + 1):
        nxt = lft[cur - nh, h]
        keep = nxt >= 0
        last = nxt[keep]
        cur, h, sw, idx = fabric.link_dst[last].astype(np.int64), h[keep], sw[keep], idx[keep]
        at_host = cur < nh
        wrong = np.flatnonzero(at_host & ((cur != fabric.terminal_host[h]) | (last != fabric.terminal_downlink[h])))
        if len(wrong):
            i = int(wrong[0])
            into = np.flatnonzero(fabric.terminal_downlink == last[i])
            end = fabric.terminal_label(int(into[0])) if len(into) else fabric.node_names[cur[i]]
            raise FabricError(f"{source}: the route to {who(i)} from switch {fabric.node_names[nh + sw[i]]!r} "
                              f"ends at host {end!r}")
        ok[idx[at_host]] = True
        cur, h, sw, idx = cur[~at_host], h[~at_host], sw[~at_host], idx[~at_host]
        if not len(cur):
            return ok.reshape(ns, nt)
    i = 0
    path, c = [], int(sw[i]) + nh
    for _ in range(min(ns, 6) + 1):
        path.append(fabric.node_names[c])
        c = int(fabric.link_dst[lft[c - nh, h[i]]])
    raise FabricError(f"{source}: a loop in the forwarding tables: {who(i)} goes {' -> '.join(path)} ...")


def unroutable(fabric: Fabric, lft: np.ndarray, src: np.ndarray, dst: np.ndarray, *,
               terminals: bool = False) -> np.ndarray:
    """True for each host pair (``terminals``: host port pair) the tables do not route (the source
    port's switch does not reach the destination port); host pairs take the ports
    :meth:`Fabric.host_pair_terminals` gives."""
    ok = reachable(fabric, lft)
    ts, td = (np.asarray(src, np.int64), np.asarray(dst, np.int64)) if terminals else fabric.host_pair_terminals(src, dst)
    th = fabric.terminal_host
    return (th[ts] != th[td]) & ~ok[fabric.terminal_switch[ts] - fabric.n_hosts, td]
