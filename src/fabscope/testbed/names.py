"""Names of everything a testbed makes, and the rates it shapes.

Every object carries the testbed's name, so that ``down`` finds it again
without a state file and never touches anything else on the machine:

============================  ==============================================
network namespace of a host   ``fstb-NAME-h<i>`` (also the host's UTS name)
network namespace of a switch ``fstb-NAME-s<j>``
management bridge             ``fbNAMEbr`` (root namespace)
management veth, root end     ``fbNAMEm<i>`` (root namespace)
============================  ==============================================

Interfaces inside a namespace need no global name: a host's fabric ports are
``fab0``, ``fab1``, ... in port order in every host (one MPI setting serves all),
its management port ``mgmt0``; a switch's ports are ``p<port>``.  Linux limits interface names
to 15 characters, hence testbed names of at most 8 letters and digits.

>>> ns_host("tb1", 3), ns_switch("tb1", 0), bridge("tb1"), mgmt_veth("tb1", 12)
('fstb-tb1-h3', 'fstb-tb1-s0', 'fbtb1br', 'fbtb1m12')
>>> owns_netns("tb1", "fstb-tb1-h3"), owns_netns("tb1", "fstb-tb10-h3")
(True, False)
>>> owns_link("tb1", "fbtb1m7"), owns_link("tb1", "fbtb1br"), owns_link("tb1", "fbtb1mm0")
(True, True, False)
>>> check_name("Tb 1")
Traceback (most recent call last):
...
fabscope.testbed.names.TestbedError: testbed name 'Tb 1': use 1 to 8 lower-case letters and digits, starting with a letter
"""

from __future__ import annotations

import re

from fabscope.errors import FabscopeError


class TestbedError(FabscopeError):
    """A testbed that cannot be made, found, changed or used."""

    __test__ = False  # not a test class for pytest


NETNS_PREFIX = "fstb-"
LINK_PREFIX = "fb"
HOST_IF = "fab0"
MGMT_IF = "mgmt0"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise TestbedError(f"testbed name {name!r}: use 1 to 8 lower-case letters and digits, starting with a letter")
    return name


def ns_host(name: str, i: int) -> str:
    return f"{NETNS_PREFIX}{name}-h{i}"


def ns_switch(name: str, j: int) -> str:
    return f"{NETNS_PREFIX}{name}-s{j}"


def host_if(port: int) -> str:
    """A host's fabric interface of port index ``port`` (0-based): ``fab0``, ``fab1``, ...

    >>> host_if(0) == HOST_IF, host_if(1)
    (True, 'fab1')
    """
    return f"fab{int(port)}"


def bridge(name: str) -> str:
    return f"{LINK_PREFIX}{name}br"


def mgmt_veth(name: str, i: int) -> str:
    return f"{LINK_PREFIX}{name}m{i}"


def owns_netns(name: str, ns: str) -> bool:
    """Whether namespace ``ns`` belongs to testbed ``name`` (exact pattern, not a bare prefix)."""
    return re.fullmatch(rf"{re.escape(NETNS_PREFIX + name)}-[hs]\d+", ns) is not None


def owns_link(name: str, link: str) -> bool:
    """Whether a root-namespace interface belongs to testbed ``name``."""
    return re.fullmatch(rf"{re.escape(LINK_PREFIX + name)}(br|m\d+)", link) is not None


def testbed_of_netns(ns: str) -> str | None:
    """The testbed a namespace belongs to, if it looks like one of ours.

    >>> testbed_of_netns("fstb-tb1-s4"), testbed_of_netns("other")
    ('tb1', None)
    """
    m = re.fullmatch(rf"{NETNS_PREFIX}([a-z][a-z0-9]{{0,7}})-[hs]\d+", ns)
    return m.group(1) if m else None


_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([a-zA-Z/]*)\s*$")
_UNITS = {  # -> bytes per second
    "": 1.0, "b/s": 1.0, "bps": 1.0, "B/s": 1.0,
    "bit": 1 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8,
    "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "kib/s": 1024.0, "mib/s": 1024.0 ** 2, "gib/s": 1024.0 ** 3,
}


def parse_rate(text: str | float) -> float:
    """A link rate in bytes per second; ``Mbit``/``Gbit`` as tc writes them, or ``MB/s``.

    >>> parse_rate("200Mbit"), parse_rate("25MB/s"), parse_rate(1e6)
    (25000000.0, 25000000.0, 1000000.0)
    >>> parse_rate("fast")
    Traceback (most recent call last):
    ...
    fabscope.testbed.names.TestbedError: cannot read rate 'fast': write e.g. 200Mbit, 1Gbit or 25MB/s
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _RATE.match(text)
        unit = m.group(2).lower() if m else None
        if unit in ("b/s",) and m and m.group(2) == "B/s":
            unit = "B/s"
        if not m or unit not in _UNITS:
            raise TestbedError(f"cannot read rate {text!r}: write e.g. 200Mbit, 1Gbit or 25MB/s")
        value = float(m.group(1)) * _UNITS[unit]
    if not value > 0:
        raise TestbedError(f"rate {text!r} must be positive")
    return value


def format_rate(bytes_per_s: float) -> str:
    """As tc reads it, in whole bits per second.

    >>> format_rate(25e6)
    '200000000bit'
    """
    return f"{int(round(bytes_per_s * 8))}bit"
