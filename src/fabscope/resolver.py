"""What every command's ``--fabric`` names: a fabric spec, a fabric JSON file, or a testbed.

One resolver, :func:`resolve_fabric`, for ``simulate``, ``map``, ``fabric
export``, ``fabric whatif``/``critical``, ``compare``, ``diagnose`` and the
rest.  A testbed (``fabscope testbed up --name tb1``) is named two ways:

``tb1`` (or ``tb1:built``)
    the fabric **as built**: every cable at its nominal rate, the forwarding
    tables its switches got at ``up``.  A fault is found against this one
    (``diagnose``, ``diagnose --plan``), and it is the default everywhere.
``tb1:now``
    the fabric **as it runs now**: degraded cables at their rate, cut cables
    gone, the tables rewritten after a cut.  ``compare --fabric tb1:now``
    checks that the model follows the faults.

A fabric spec or file wins over a testbed of the same name: ``itasca`` is the
Itasca fabric even if a testbed was called so (name testbeds otherwise).
The fabric returned says which it is in its name (``testbed tb1 as built
(...)``), which ``compare`` and ``diagnose`` print first.

>>> resolve_fabric("fat-tree:k=2,levels=2").n_hosts
4
>>> named_testbed("tb1"), named_testbed("tb1:now"), named_testbed("fat-tree:k=2"), named_testbed("torus:now")
(('tb1', False), ('tb1', True), None, None)
"""

from __future__ import annotations

import os
import re

from fabscope.errors import FabricError
from fabscope.fabric.io import GENERATORS, PRESETS, load_fabric
from fabscope.fabric.model import Fabric

#: a testbed name (1-8 lower-case letters and digits) and which view of it
_REF = re.compile(r"([a-z][a-z0-9]{0,7})(?::(now|built))?")


def named_testbed(text: str) -> tuple[str, bool] | None:
    """``(testbed name, now)`` if ``text`` names a testbed rather than a fabric spec or file, else None."""
    m = _REF.fullmatch(text.strip())
    if not m or m.group(1) in GENERATORS or m.group(1) in PRESETS or os.path.exists(text):
        return None
    return m.group(1), m.group(2) == "now"


def resolve_fabric(text: str) -> Fabric:
    """The fabric ``--fabric TEXT`` names; FabricError (one line) if it names none."""
    ref = named_testbed(text)
    if ref is None:
        return load_fabric(text)
    name, now = ref
    try:
        from fabscope.testbed.state import load_fabric as testbed_fabric
    except ImportError:  # a build without the testbed package
        return load_fabric(text)
    from fabscope.testbed.names import TestbedError

    try:
        return testbed_fabric(name, now=now)
    except TestbedError as err:
        why = str(err)
    try:
        return load_fabric(text)  # not a testbed: say what is wrong with it as a fabric, and as a testbed
    except FabricError as err:
        raise FabricError(f"{err}; and {why}") from None
