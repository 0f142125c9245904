"""Re-measure before accusing: the follow-up run that confirms or clears each suspect.

As NetBouncer does in production, a cable is named only once new pairs that
cross it are slow too, while pairs beside it (same hosts, another path) are
not.  Jitter strikes a pair in one run and not the next; a degraded cable
slows every pair that crosses it, in every run.  :func:`confirm_pairs`
chooses, for each suspect of a diagnosis (and each cable tied with it):

* ``cross``: up to ``per_suspect`` host pairs whose route crosses the cable
  in the suspect's direction (either way of the ping-pong; any direction for
  a suspect both ways), new ones first (pairs the first run did not
  measure) and among them those whose whole traffic crosses it (a routing
  that spreads a flow over several paths puts only a share on the cable,
  which a cut may not slow), each in a round of its own as far as the cable
  goes, so that it meets the cable at line rate;
* ``repeat``: the slowest implicating pair again;
* ``control``: up to ``controls`` pairs from one of the suspect's hosts along
  a route that avoids the cable both ways (a slow host is slow there too; a
  bad cable is not).

The round is sized from the run it confirms (:func:`run_size`: its message
size and timed iterations), not a fixed 1 MiB x 20: on a slow fabric each job
takes what the first run's rounds took.

fabscope-bench cannot be handed pairs, but it pairs the ranks of each
``random-pairs`` round in an order fixed by ``--seed`` (:mod:`.plan`); a job
whose host file lists the hosts in the right order runs exactly the chosen
pairs in its first round.  :func:`confirm_plan` packs the pairs into rounds
(each host once per round), one such job per round, run one after another;
its script then diagnoses the first diagnosis's pairs and the new ones
together (``fabscope diagnose RESULT confirm-*.jsonl``), where a suspect
that the new pairs do not bear out loses its evidence.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=4, levels=2)
>>> j = job_for_pairs(f, "r0", [(0, 5), (2, 9), (12, 3)], seed=1)
>>> s, d, _ = j.pairs()
>>> sorted(tuple(sorted(x)) for x in zip(s.tolist(), d.tolist()))   # what fabscope-bench will run
[(0, 5), (2, 9), (3, 12)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.errors import FabscopeError
from fabscope.fabric.model import Fabric
from fabscope.result import Result
from fabscope.diagnose.plan import Job, _comment, bench_shuffle, sh_quote


def job_for_pairs(fabric: Fabric, name: str, pairs: list[tuple[int, int]], seed: int = 1) -> Job:
    """A one-round ``random-pairs`` job over the pairs' hosts, ordered so that its round 0 runs exactly
    ``pairs`` (host indices; each host at most once)."""
    hosts = [h for p in pairs for h in p]
    if len(set(hosts)) != len(hosts):
        raise FabscopeError("a round of confirmation pairs names a host twice")
    n = len(hosts)
    with np.errstate(over="ignore"):
        s = (np.uint64(seed) * np.uint64(1000003)).item()
    perm = bench_shuffle(n, s)
    order = np.empty(n, dtype=np.int64)
    for i, (a, b) in enumerate(pairs):
        order[perm[2 * i]], order[perm[2 * i + 1]] = a, b
    return Job(name, order, seed, 1)


@dataclass
class ConfirmPlan:
    fabric: Fabric
    jobs: list[Job]
    size: int
    iterations: int
    #: per chosen pair: (host a, host b, role, suspect cable name)
    pairs: list[tuple[int, int, str, str]] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)

    def command(self, job: Job, prefix: str, *, testbed: str | None = None, launcher: str | None = None) -> str:
        """The ``measure`` arguments of one job (quoted), without the command itself."""
        where = ["--testbed", testbed] if testbed else (["--launcher", launcher] if launcher else [])
        words = ["measure", *where, "--np", str(len(job.hosts)), "--ppn", "1", "--hostfile",
                 f"{prefix}-{job.name}.hosts", "random-pairs", "--size", str(self.size),
                 "--iterations", str(self.iterations), "--rounds", "1", "--seed", str(job.seed),
                 "--out", f"{prefix}-{job.name}.jsonl"]
        return " ".join(sh_quote(w) for w in words)

    def script(self, result_path: str, fabric_spec: str, prefix: str = "confirm", *, testbed: str | None = None,
               launcher: str | None = None) -> str:
        """Host files, the jobs one after another (their pairs must not overlap in time), then the joint
        diagnosis of the first result and the new runs against ``fabric_spec`` (the fabric as built).
        Runs where the fabric is, as :meth:`.plan.Plan.script` does: every word through
        :func:`.plan.sh_quote`, host files by ``printf``, ``$FABSCOPE`` the command."""
        q = sh_quote
        lines = ["#!/bin/sh", _comment(f"fabscope diagnose --plan --confirm for {self.fabric.name}: "
                                       f"{len(self.suspects)} suspects, {len(self.pairs)} pairs in "
                                       f"{len(self.jobs)} rounds"),
                 "# each job's host file is ordered so that fabscope-bench's first random-pairs round",
                 "# runs exactly the chosen pairs; the jobs run one after another.",
                 "set -e", 'FABSCOPE="${FABSCOPE:-fabscope}"']
        for j in self.jobs:
            lines.append(f"printf '%s\\n' {' '.join(q(self.fabric.host_names[h]) for h in j.hosts)} "
                         f"> {q(prefix + '-' + j.name + '.hosts')}")
        for a, b, role, sus in self.pairs:
            lines.append(_comment(f"{role}: {self.fabric.host_names[a]} <-> {self.fabric.host_names[b]} ({sus})"))
        lines += ["$FABSCOPE " + self.command(j, prefix, testbed=testbed, launcher=launcher) for j in self.jobs]
        lines.append("$FABSCOPE " + " ".join(q(w) for w in ["diagnose", result_path,
                                                              *[f"{prefix}-{j.name}.jsonl" for j in self.jobs],
                                                              "--fabric", fabric_spec]))
        return "\n".join(lines) + "\n"

    def summary(self) -> dict[str, Any]:
        names = self.fabric.host_names
        return {"fabric": self.fabric.name, "suspects": self.suspects, "jobs": len(self.jobs),
                "pairs": [{"src": names[a], "dst": names[b], "role": r, "suspect": s} for a, b, r, s in self.pairs],
                "size": self.size, "iterations": self.iterations}


def _crosses(router: Any, n_links: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs x directed links: the share of each pair's traffic, either of its ways, that crosses each
    link (1 on a single path; less where a routing spreads a flow over several)."""
    fw, bw = router.routes(a, b), router.routes(b, a)
    hit = np.zeros((len(a), n_links))
    np.maximum.at(hit, (fw.flow, fw.link), fw.weight)
    np.maximum.at(hit, (bw.flow, bw.link), bw.weight)
    return hit


def confirm_pairs(fabric: Fabric, suspects: list[dict[str, Any]], measured: set[tuple[int, int]],
                  routing: Any = None, *, per_suspect: int = 4, controls: int = 2, seed: int = 0,
                  tries: int = 2048) -> list[tuple[int, int, str, str]]:
    """(host a, host b, role, cable name) for every suspect and cable tied with it (module docstring).

    ``suspects``: the ``extra["suspects"]`` of a diagnosis; ``measured``: host pairs (a < b) already
    measured, which new ``cross`` pairs avoid while they can."""
    from fabscope.routing import make_routing
    from fabscope.diagnose.tomography import cable_name

    router = routing if routing is not None and not isinstance(routing, str) else make_routing(fabric, routing)
    n_c = fabric.n_links // 2
    by_name = {cable_name(fabric, c): c for c in range(n_c)}
    idx = fabric.host_index
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int, str, str]] = []
    for s in suspects:
        group = [s["cable"]] + list(s.get("tied", []))
        ends = {idx[h] for p in s.get("pairs", []) for h in p if h in idx}
        if s.get("host"):
            ends.add(idx[s["host"]])
        ends_a = np.array(sorted(ends) or [0], dtype=np.int64)
        # candidates: the implicating pairs' hosts with every other host, then random pairs
        a = np.r_[rng.choice(ends_a, tries // 2), rng.integers(0, fabric.n_hosts, tries // 2)]
        b = rng.integers(0, fabric.n_hosts, tries)
        keep = a != b
        a, b = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
        uniq = np.unique(a * fabric.n_hosts + b)
        a, b = uniq // fabric.n_hosts, uniq % fabric.n_hosts
        hit = _crosses(router, fabric.n_links, a, b)
        for name in group:
            c = by_name.get(name)
            if c is None:
                raise FabscopeError(f"the diagnosis names cable {name!r}, which fabric {fabric.name!r} lacks")
            # the suspect's own directions (one, where it names one), both ways for a cable tied with it
            links = [x for x in s.get("links") or [] if x // 2 == c] if name == s["cable"] else []
            links = links or [2 * c, 2 * c + 1]
            share = hit[:, links].max(axis=1)
            cross = np.flatnonzero(share > 0)
            new = np.array([i for i in cross if (int(a[i]), int(b[i])) not in measured], dtype=np.int64)
            old = np.setdiff1d(cross, new)
            # new pairs first, and among them those whose whole traffic crosses it (a pair a routing
            # spreads over several paths puts only a share on it, which a cut may not slow)
            order = np.r_[rng.permutation(new), rng.permutation(old)].astype(np.int64)
            order = order[np.argsort(-np.round(share[order], 6), kind="stable")]
            pick = np.r_[[i for i in order if i in set(new.tolist()) and share[i] >= 0.999],
                         [i for i in order if not (i in set(new.tolist()) and share[i] >= 0.999)]]
            pick = pick[:per_suspect].astype(np.int64)
            out += [(int(a[i]), int(b[i]), "cross", name) for i in pick]
            if s.get("pairs") and name == s["cable"]:
                x, y = s["pairs"][0]
                if x in idx and y in idx:
                    out.append((idx[x], idx[y], "repeat", name))
            # controls: from a host of this cable's pairs, along routes that avoid it
            if len(cross):
                near = set(a[cross].tolist()) | set(b[cross].tolist())
                ctrl = np.flatnonzero((hit[:, [2 * c, 2 * c + 1]].max(axis=1) == 0)
                                      & (np.isin(a, list(near)) | np.isin(b, list(near))))
                out += [(int(a[i]), int(b[i]), "control", name) for i in rng.permutation(ctrl)[:controls]]
    return out


def pack_rounds(pairs: list[tuple[int, int, str, str]]) -> list[list[int]]:
    """Indices of ``pairs`` per round: each host once per round, and one ``cross`` pair per cable per
    round (it meets the cable alone).

    >>> pack_rounds([(0, 1, "cross", "c"), (2, 3, "cross", "c"), (0, 2, "control", "c"), (4, 5, "cross", "d")])
    [[0, 3], [1], [2]]
    """
    rounds: list[tuple[list[int], set[int], set[str]]] = []
    for i, (a, b, role, name) in enumerate(pairs):
        for idx, hosts, cables in rounds:
            if a in hosts or b in hosts or (role == "cross" and name in cables):
                continue
            idx.append(i)
            hosts.update((a, b))
            if role == "cross":
                cables.add(name)
            break
        else:
            rounds.append(([i], {a, b}, {name} if role == "cross" else set()))
    return [r[0] for r in rounds]


def run_size(result: Result) -> tuple[int, int]:
    """(message size, timed iterations) of the run a diagnosis read: the median pair's bytes and
    iterations (its ``iters`` column, else the iterations measured as its model read them: not the fewer
    a model within its budget of events ran), 1 MiB and 20 where unknown.

    >>> run_size(Result(meta={"kind": "diagnose"}, class_labels=(), pairs={"bytes": np.array([65536.0] * 3),
    ...                                                                    "iters": np.array([5, 5, 7])}))
    (65536, 5)
    >>> run_size(Result(meta={"kind": "diagnose", "model_info": {"iterations": [4], "iterations_measured": [100]}},
    ...                 class_labels=(), pairs={"bytes": np.array([65536.0])}))
    (65536, 100)
    """
    p, info = result.pairs, result.meta.get("model_info") or {}
    b = np.asarray(p.get("bytes", []), dtype=float)
    b = b[np.isfinite(b) & (b > 0)]
    size = int(np.median(b)) if len(b) else 1 << 20
    it = np.asarray(p.get("iters", []), dtype=float)
    it = it[np.isfinite(it) & (it > 0)]
    its = [i for i in (info.get("iterations_measured") or info.get("iterations") or []) if isinstance(i, int) and i > 0]
    iterations = int(np.median(it)) if len(it) else (max(its) if its else 20)
    return size, iterations


def confirm_plan(result: Result, fabric: Fabric, routing: Any = None, *, size: int | None = None,
                 iterations: int | None = None, seed: int = 1, per_suspect: int = 4,
                 controls: int = 2) -> ConfirmPlan:
    """The follow-up of a diagnose result (kind ``diagnose``): pairs, rounds, jobs; ``size`` and
    ``iterations`` default to the diagnosed run's (:func:`run_size`)."""
    if result.meta.get("kind") != "diagnose":
        raise FabscopeError(f"--confirm reads a diagnose result (fabscope diagnose -o); this one is of kind "
                            f"{result.meta.get('kind')!r}")
    if result.meta.get("fabric") and result.meta["fabric"] != fabric.name:
        raise FabscopeError(f"the diagnosis was of fabric {result.meta['fabric']!r}, not {fabric.name!r}")
    suspects = list(result.extra.get("suspects") or [])
    idx = fabric.host_index
    p = result.pairs
    measured = set()
    for x, y in zip(p.get("src_host", []), p.get("dst_host", [])):
        if x in idx and y in idx:
            a, b = idx[x], idx[y]
            measured.add((min(a, b), max(a, b)))
    pairs = confirm_pairs(fabric, suspects, measured, routing or result.meta.get("routing"),
                          per_suspect=per_suspect, controls=controls, seed=seed)
    jobs = [job_for_pairs(fabric, f"r{k:03d}", [pairs[i][:2] for i in r], seed)
            for k, r in enumerate(pack_rounds(pairs))]
    run = run_size(result)
    return ConfirmPlan(fabric, jobs, run[0] if size is None else size, run[1] if iterations is None else iterations,
                       pairs, [s["name"] for s in suspects])
