"""Testbed: an emulated fabric on one Linux machine, where the real benchmark runs.

Hosts and switches are network namespaces, cables are veth pairs shaped in
both directions by tc (each link shared round-robin among the hosts whose routes
cross it), switches forward by one route per destination host as
the fabric's routing says, and a management bridge carries the MPI
launcher's control traffic only.  See docs/testbed.md.

Modules: :mod:`~.names` (what everything is called), :mod:`~.plan` (the
testbed's fabric, addresses, forwarding tables), :mod:`~.commands` (the
``ip``/``tc`` lines), :mod:`~.system` (running them, rights), :mod:`~.lifecycle`
(up, down, status), :mod:`~.state` (the state file; :func:`~.state.load_fabric`),
:mod:`~.faults` (degrade, cut, restore), :mod:`~.launch` (MPI into the
namespaces), :mod:`~.counters` (tc counters: proof that data took the fabric),
:mod:`~.calibrate` (what this machine forwards now, checked at ``up``),
:mod:`~.linkbound` (whether a measurement was link-bound, recorded with it),
:mod:`~.shares` (how TCP flows that meet on one link share it, measured).
``--fabric NAME`` / ``NAME:now`` reach :func:`~.state.load_fabric` through
:mod:`fabscope.resolver`.
"""

from fabscope.testbed.names import TestbedError

__all__ = ["TestbedError"]
