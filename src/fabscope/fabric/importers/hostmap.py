"""Host maps: for sites whose node descriptions are not their host names.

One entry a line, ``key host`` or ``key,host`` (an optional third column
gives the host's cores); ``#`` starts a comment.  A key is a node or port
GUID (``0x...``), a whole node description, or its first word.

>>> m = parse_hostmap("# guid or description, host\\n0x0008f104039a1b2c,node0001\\nMT25408 ConnectX,node0002,8\\n")
>>> m.lookup(0x8f104039a1b2c, 0, "whatever"), m.lookup(1, 0, "MT25408 ConnectX"), m.cores["node0002"]
('node0001', 'node0002', 8)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from fabscope.errors import FabricError
from fabscope.fabric.model import MAX_CORES
from fabscope.names import check_host_name
from fabscope.textio import read_lines, text_lines

__all__ = ["MAX_CORES", "HostMap", "parse_hostmap", "read_hostmap"]


@dataclass
class HostMap:
    by_guid: dict[int, str] = field(default_factory=dict)
    by_desc: dict[str, str] = field(default_factory=dict)
    cores: dict[str, int] = field(default_factory=dict)
    source: str = "hostmap"

    def lookup(self, node_guid: int, port_guid: int, desc: str) -> str | None:
        for g in (node_guid, port_guid):
            if g in self.by_guid:
                return self.by_guid[g]
        if desc in self.by_desc:
            return self.by_desc[desc]
        first = desc.split()[0] if desc.split() else desc
        return self.by_desc.get(first)


def parse_hostmap(text: str | Iterable[tuple[int, str]], source: str = "hostmap") -> HostMap:
    """A host map from its text, or from ``(line number, line)`` pairs (:func:`fabscope.textio.read_lines`)."""
    hm = HostMap(source=source)
    seen: dict[str, int] = {}
    lines = text_lines(text, source, "host map", FabricError) if isinstance(text, str) else text
    for n, raw in lines:
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        if "," in s:
            parts = [p.strip() for p in s.split(",")]
        else:
            tok = s.split()
            k = 2 if len(tok) >= 3 and tok[-1].isdecimal() else 1   # trailing cores column
            parts = [" ".join(tok[:-k])] + tok[-k:] if len(tok) > 1 else tok
        if len(parts) < 2 or not parts[0] or not parts[1] or len(parts) > 3:
            raise FabricError(f"{source} line {n}: expected 'guid-or-description host [cores]', got {s[:60]!r}")
        key, host = parts[0], check_host_name(parts[1], f"{source} line {n}")
        if key in seen:
            raise FabricError(f"{source} line {n}: {key!r} is mapped twice (first at line {seen[key]})")
        seen[key] = n
        if len(parts) == 3:
            if not parts[2].isdecimal() or not 1 <= int(parts[2]) <= MAX_CORES:
                raise FabricError(f"{source} line {n}: cores {parts[2][:20]!r} is not an integer 1..{MAX_CORES}")
            hm.cores[host] = int(parts[2])
        if re.fullmatch(r"0x[0-9a-fA-F]+", key):
            hm.by_guid[int(key, 16)] = host
        else:
            hm.by_desc[key] = host
    if not seen:
        raise FabricError(f"{source}: the host map is empty")
    return hm


def read_hostmap(path: str) -> HostMap:
    return parse_hostmap(read_lines(path, "host map", FabricError), path)
