"""Probe plans: which measurements make every cable identifiable, within a time budget.

fabscope-bench cannot be handed an explicit list of pairs; what it can run
are rounds of its tests.  Its ``random-pairs`` rounds are, however, fully
determined by ``--seed`` and the round number: every rank shuffles the ranks
with SplitMix64 (seed ``seed * 1000003 + round``, Fisher-Yates from the last
element down) and pairs neighbours of the shuffle.  :func:`bench_random_pairs`
does the same here, so a plan knows, before anything runs, exactly which
host pairs each round will measure on a job of one rank per host in host
file order, and which cables they cross under the fabric's routing.

:func:`make_plan` adds rounds until every cable is crossed by at least
``min_cover`` measured pairs and no two cables are crossed by exactly the
same pairs (so the tomography can tell every cable from every other), or
until the time budget is spent; it reports what stays uncovered or tied.

>>> src, dst, rnd = bench_random_pairs(4, seed=1, rounds=3)   # the pairs fabscope-bench runs on 4 ranks
>>> sorted(zip(src.tolist(), dst.tolist(), rnd.tolist()))
[(0, 1, 1), (0, 3, 0), (0, 3, 2), (1, 2, 0), (1, 2, 2), (2, 3, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fabscope.errors import FabscopeError
from fabscope.names import shell_word
from fabscope.fabric.model import Fabric
from fabscope.diagnose.pairmodel import PairModel
from fabscope.traffic.draws import shuffle

def bench_shuffle(n: int, seed: int) -> np.ndarray:
    """The permutation ``fb_shuffle`` (csrc/draws.c) makes of 0..n-1 with this seed."""
    return shuffle(n, seed)


def bench_random_pairs(n_ranks: int, seed: int, rounds: int, first_round: int = 0
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks fabscope-bench's ``random-pairs --seed S --rounds R`` pairs: (src, dst, round) with src < dst."""
    src, dst, rnd = [], [], []
    m = n_ranks // 2
    for r in range(first_round, first_round + rounds):
        with np.errstate(over="ignore"):
            s = (np.uint64(seed) * np.uint64(1000003) + np.uint64(r)).item()
        p = bench_shuffle(n_ranks, s)
        a, b = p[0:2 * m:2], p[1:2 * m:2]
        src.append(np.minimum(a, b))
        dst.append(np.maximum(a, b))
        rnd.append(np.full(m, r))
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst), np.concatenate(rnd)


@dataclass(frozen=True)
class Job:
    """One ``fabscope measure`` job: random pairs over ``hosts`` (one rank each, in this order)."""

    name: str
    hosts: np.ndarray
    seed: int
    rounds: int

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, d, r = bench_random_pairs(len(self.hosts), self.seed, self.rounds)
        return self.hosts[s], self.hosts[d], r


@dataclass
class ProbePlan:
    fabric: Fabric
    jobs: list[Job]
    size: int
    iterations: int
    seconds: float                # estimated run time (launches included; local jobs run side by side)
    budget: float
    min_cover: int
    routing: str = ""
    uncovered: list[str] = field(default_factory=list)
    unsaturated: list[str] = field(default_factory=list)
    n_unsaturated: int = 0
    ties: list[list[str]] = field(default_factory=list)
    cover_min: int = 0
    unrouted: int = 0
    #: switch cables whose two directions the planned pairs cannot tell apart (the same pairs cross
    #: both, or one is crossed by fewer than ``min_cover``): a one-way fault there is named as the cable
    one_way_blind: list[str] = field(default_factory=list)
    n_one_way_blind: int = 0
    #: switch directions that hold back fewer than ``min_cover`` planned pairs (:func:`limited_pairs`):
    #: a fault there slows too few pairs to stand out of the jitter
    held_back_few: list[str] = field(default_factory=list)
    n_held_back_few: int = 0

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(source host, destination host, concurrent set) of every pair the plan measures."""
        out, off = [], 0
        for j in self.jobs:
            s, d, r = j.pairs()
            out.append((s, d, r + off))
            off += j.rounds
        return tuple(np.concatenate([o[i] for o in out]) for i in range(3))  # type: ignore[return-value]

    def script(self, fabric_spec: str, prefix: str = "plan", *, testbed: str | None = None,
               launcher: str | None = None, sbatch: bool = False) -> str:
        """A POSIX shell script that writes the host files, runs every job and diagnoses the outputs.

        It runs unchanged where the fabric is: on testbed ``testbed`` (``measure --testbed``), or on a
        cluster through ``launcher`` (``mpiexec``, ``srun``, ...; default: the MPI's own) with the host
        files it writes.  It ends with ``fabscope diagnose`` against ``fabric_spec``, which should name the
        fabric as built (for a testbed: its plain name, not ``NAME:now``).  Every word taken from the
        fabric or the caller goes through :func:`sh_quote`; nothing else is pasted into the script.
        ``$FABSCOPE`` (default ``fabscope``) is the command run.

        With ``sbatch``: a Slurm batch script (a health check): ``#SBATCH`` asks for one node per host
        of the fabric, every job is launched by ``srun`` inside the allocation (on testbed ``testbed``
        too), and the diagnosis is stored as ``PREFIX-diagnosis.json`` with ``--exit-status``: the job
        exits 3 when a suspect is found, 0 when none, 1 on an error.
        """
        if sbatch:
            launcher = "srun"
        q = sh_quote
        where = f"testbed {testbed}" if testbed else f"launcher {launcher or 'auto'}"
        head = [f"#SBATCH --nodes={self.fabric.n_hosts} --ntasks-per-node=1 --job-name=fabscope-health",
                f"#SBATCH --time={int(self.seconds * 2 // 60) + 5}"] if sbatch else []
        lines = ["#!/bin/sh", *head,
                 _comment(f"fabscope diagnose --plan for {self.fabric.name}: {len(self.jobs)} jobs, "
                          f"about {self.seconds:.0f} s (budget {self.budget:.0f} s), on {where}"),
                 "# fabscope-bench cannot run an explicit pair list: each job runs random-pairs rounds whose",
                 "# pairs follow from --seed and the host file order (one rank per host), as planned.",
                 "set -e", 'FABSCOPE="${FABSCOPE:-fabscope}"']
        local = [j for j in self.jobs if j.name != "all"]
        for j in self.jobs:
            lines.append(f"printf '%s\\n' {' '.join(q(self.fabric.host_names[h]) for h in j.hosts)} "
                         f"> {q(f'{prefix}-{j.name}.hosts')}")
        if local:
            lines.append("# hosts of each leaf among themselves, all leaves at once: every host cable at line rate")
            lines.append("pids=")
        for j in self.jobs:
            cmd = "$FABSCOPE " + self.command(j, prefix, testbed=testbed, launcher=launcher, sbatch=sbatch)
            if j.name != "all":
                lines.append(f'{cmd} & pids="$pids $!"')
                if j is local[-1]:
                    lines.append('for p in $pids; do wait "$p"; done')
            else:
                lines.append(cmd)
        store = ["-o", f"{prefix}-diagnosis.json", "--exit-status"] if sbatch else []
        lines.append("$FABSCOPE " + " ".join(q(w) for w in ["diagnose", *[f"{prefix}-{j.name}.jsonl" for j in self.jobs],
                                                              "--fabric", fabric_spec, *store]))
        return "\n".join(lines) + "\n"

    def command(self, job: Job, prefix: str = "plan", *, testbed: str | None = None,
                launcher: str | None = None, sbatch: bool = False) -> str:
        """The ``measure`` arguments of one job (quoted), without the command itself."""
        if sbatch:  # srun inside the allocation, on a testbed's Slurm too
            where = ["--launcher", "srun", *(["--testbed", testbed] if testbed else [])]
        else:
            where = ["--testbed", testbed] if testbed else (["--launcher", launcher] if launcher else [])
        words = ["measure", *where, "--np", str(len(job.hosts)), "--ppn", "1", "--hostfile",
                 f"{prefix}-{job.name}.hosts", "random-pairs", "--size", str(self.size),
                 "--iterations", str(self.iterations), "--rounds", str(job.rounds),
                 "--seed", str(job.seed), "--out", f"{prefix}-{job.name}.jsonl"]
        return " ".join(sh_quote(w) for w in words)

    def summary(self) -> dict[str, Any]:
        return {"fabric": self.fabric.name, "routing": self.routing, "jobs": len(self.jobs),
                "rounds": int(sum(j.rounds for j in self.jobs)), "pairs": int(len(self.pairs[0])),
                "size": self.size, "iterations": self.iterations, "estimated_seconds": round(self.seconds, 1),
                "budget_seconds": self.budget, "min_cover": self.min_cover, "cover_min": self.cover_min,
                "unrouted_cables": self.unrouted, "uncovered": self.uncovered,
                "never_at_line_rate": self.n_unsaturated, "unidentifiable": self.ties,
                "directions_not_told_apart": self.n_one_way_blind, "directions_not_told_apart_cables": self.one_way_blind,
                "directions_holding_back_few_pairs": self.n_held_back_few,
                "directions_holding_back_few_pairs_links": self.held_back_few}


#: seconds to start a job (the binary is cached); a guess, on the safe side
LAUNCH_SECONDS = 10.0
#: seconds of barrier, gather and output per round, per 1,000 ranks
ROUND_OVERHEAD = 0.01
#: a cable counts as tested at line rate in a round where its load reaches this share of its capacity
SATURATED = 0.9


def _round_costs(pm: PairModel, rounds: int, size: int, iterations: int, warmup: int, n: int) -> np.ndarray:
    bw = pm.bandwidth()
    per = np.zeros(rounds)
    np.maximum.at(per, pm.scenario, (iterations + warmup) * 2.0 * size / bw)
    return per + ROUND_OVERHEAD * max(1.0, n / 1000)


def _saturated(pm: PairModel, n_c: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cable: rounds in which one of its directions is (nearly) full; per directed link: pairs it
    holds back (:func:`limited_pairs`)."""
    f = pm.fabric
    rate = pm.flow_rates()
    fin = np.where(np.isfinite(rate), rate, 0.0)
    load = pm.A @ fin
    kind = pm.res_kind
    is_link = kind < f.n_links
    full = is_link & (load >= SATURATED * np.r_[f.link_capacity, f.host_memory_bw][kind])
    out = np.zeros(n_c, dtype=np.int64)
    np.add.at(out, kind[full] // 2, 1)
    return out, limited_pairs(pm, rate)


def limited_pairs(pm: PairModel, rate: np.ndarray) -> np.ndarray:
    """Per directed link: the pairs it holds back, a flow of theirs crossing it in a round where it is
    full and among its fastest flows there (:meth:`.pairmodel.PairModel.binding`, within
    :data:`SATURATED`).  Only those pairs slow down when the link loses capacity: a pair held back
    elsewhere crosses a link cut to x unharmed while its rate there stays below x of the capacity, so
    a fault is seen by the pairs it limits, not by all that cross it.  ``rate``: per flow.

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2)                        # 4 hosts, 2 leaves, 2 spines
    >>> pm = PairModel(f, np.array([0, 1]), np.array([2, 2]), routing="dmodk")   # two ping-pongs with host 2
    >>> n = limited_pairs(pm, pm.flow_rates())
    >>> [int(n[x]) for x in np.flatnonzero((f.link_src == 2) | (f.link_dst == 2))]    # host 2's cable, both ways
    [2, 2]
    """
    f = pm.fabric
    flows, res = pm.binding(rate, within=1.0 - SATURATED)
    link = res < f.n_links
    key = np.unique(pm.flow_pair[flows[link]].astype(np.int64) * f.n_links + res[link])
    return np.bincount(key % f.n_links, minlength=f.n_links)


def make_plan(fabric: Fabric, routing: Any = None, *, budget: float = 600.0, size: int = 1 << 20,
              iterations: int = 20, warmup: int = 2, seed: int = 1, min_cover: int = 4, local_rounds: int = 4,
              hosts: Sequence[int] | None = None, max_rounds: int = 2000, batch: int = 4,
              directions: bool = True, held: bool = True) -> ProbePlan:
    """Jobs of random pairs (one rank per host) that cover, load and separate every cable within ``budget`` s.

    First, where the fabric has leaves, ``local_rounds`` rounds among the
    hosts of each leaf, all leaves side by side: each host's cable at line
    rate with several partners.  Then rounds over all hosts until every cable
    some route crosses is crossed by ``min_cover`` pairs, has been full in a
    round, and is crossed by a set of pairs no other cable shares, and (``directions``) each direction
    of a switch cable that some route crosses is crossed by ``min_cover`` pairs, and (``held``) holds
    back ``min_cover`` pairs (:func:`limited_pairs`: only those see it lose capacity); or until no
    progress in 100 rounds, or the budget.
    """
    from fabscope.routing import make_routing

    h = np.arange(fabric.n_hosts) if hosts is None else np.asarray(hosts, dtype=np.int64)
    if len(h) < 2:
        raise FabscopeError(f"a plan needs at least 2 hosts, got {len(h)}")
    if budget <= 2 * LAUNCH_SECONDS:
        raise FabscopeError(f"a budget of {budget:g} s leaves no time to run anything (a job takes about "
                            f"{LAUNCH_SECONDS:g} s to start)")
    router = routing if routing is not None and not isinstance(routing, str) else make_routing(fabric, routing)
    n_c = fabric.n_links // 2
    cover = np.zeros(n_c, dtype=np.int64)
    full = np.zeros(n_c, dtype=np.int64)
    sig = np.zeros((n_c, 2))
    dcover = np.zeros(fabric.n_links, dtype=np.int64)     # the same per direction
    dsig = np.zeros((fabric.n_links, 2))
    dheld = np.zeros(fabric.n_links, dtype=np.int64)     # pairs each direction holds back
    rng = np.random.default_rng(seed)
    routed = routed_links(fabric, router, h)
    usable = routed[0::2] | routed[1::2]
    switch = usable & (fabric.link_src[0::2] >= fabric.n_hosts) & (fabric.link_dst[0::2] >= fabric.n_hosts)
    dwant = np.repeat(switch, 2) & routed          # a direction no route crosses cannot be covered
    jobs: list[Job] = []
    spent = 0.0

    def account(pm: PairModel, take: int, r: np.ndarray) -> None:
        pl = pm.pair_links.tocoo()
        keep = r[pl.row] < take
        rows, cab = pl.row[keep], pl.col[keep] // 2
        pc = np.unique(rows.astype(np.int64) * n_c + cab)
        rows, cab = pc // n_c, pc % n_c
        draw = rng.random((pm.n_pairs, 2))
        np.add.at(cover, cab, 1)
        np.add.at(sig, cab, draw[rows])
        np.add.at(dcover, pl.col[keep], 1)
        np.add.at(dsig, pl.col[keep], draw[pl.row[keep]])

    # 1. each leaf's hosts among themselves, all leaves at once
    if fabric.levels and local_rounds > 0:
        g = fabric.groups[fabric.levels[0].key][h]
        local = [h[g == x] for x in np.unique(g)]
        local = [x for x in local if len(x) >= 3]
        if local:
            ss, dd, rr, owner = [], [], [], []
            for i, lh in enumerate(local):
                s, d, r = bench_random_pairs(len(lh), seed, local_rounds)
                ss.append(lh[s]), dd.append(lh[d]), rr.append(r + i * local_rounds), owner.append(np.full(len(s), i))
                jobs.append(Job(f"leaf{i:03d}", lh, seed, local_rounds))
            pm = PairModel(fabric, np.concatenate(ss), np.concatenate(dd), np.concatenate(rr), routing=router,
                           bytes=np.full(sum(len(x) for x in ss), float(size)))
            per = _round_costs(pm, len(local) * local_rounds, size, iterations, warmup, 16)
            cost = float(per.reshape(len(local), local_rounds).sum(axis=1).max())
            account(pm, len(local) * local_rounds, pm.scenario)
            sat, lim = _saturated(pm, n_c)
            full += sat
            dheld += lim
            spent += LAUNCH_SECONDS + cost
            if spent > budget / 2:     # leave the larger part of the budget to the fabric-wide rounds
                jobs, spent = [], 0.0
                cover[:], full[:], sig[:], dcover[:], dsig[:], dheld[:] = 0, 0, 0.0, 0, 0.0, 0
    # 2. all hosts together
    spent += LAUNCH_SECONDS
    rounds, stale, best = 0, 0, None
    while rounds < max_rounds:
        s, d, r = bench_random_pairs(len(h), seed, batch, first_round=rounds)
        pm = PairModel(fabric, h[s], h[d], r - rounds, routing=router, bytes=np.full(len(s), float(size)))
        cost = _round_costs(pm, batch, size, iterations, warmup, len(h))
        fits = np.cumsum(cost) <= budget - spent
        take = batch if fits.all() else int(fits.sum())
        if take == 0:
            break
        account(pm, take, r - rounds)
        sat, lim = _saturated(pm, n_c) if take == batch else _saturated(
            PairModel(fabric, h[s][r - rounds < take], h[d][r - rounds < take], (r - rounds)[r - rounds < take],
                      routing=router), n_c)
        full += sat
        dheld += lim
        spent += float(cost[:take].sum())
        rounds += take
        if take < batch:
            break
        low = int(np.sum(cover[usable] < min_cover)) + int(np.sum(full[usable] == 0))
        if directions:
            # each direction of a switch cable that routes cross, crossed by min_cover pairs: a lane down
            # one way slows only the pairs crossing it that way (under DOR on a torus a ping-pong's way
            # back takes other cables, so a cable's cover can sit all on one direction)
            low += int(np.sum(dcover[dwant] < min_cover))
            if held:
                # and holds back min_cover of them: a direction whose pairs are all held back upstream
                # (a core-to-aggregation link of a 3-level tree, most rounds) hides a fault at x0.5
                low += int(np.sum(dheld[dwant] < min_cover))
        tied = _n_tied(sig[usable], cover[usable])
        if low == 0 and tied == 0:
            break
        state = (low, tied)
        if best is None or state < best:
            best, stale = state, 0
            kept = (rounds, spent, [a.copy() for a in (cover, full, sig, dcover, dsig, dheld)])
        else:
            stale += 1
        if stale * batch >= 100:
            # 100 rounds without progress: what is left stays, and those rounds are not planned
            rounds, spent, saved = kept
            for a, b in zip((cover, full, sig, dcover, dsig, dheld), saved):
                a[...] = b
            break
    if rounds:
        jobs.append(Job("all", h, seed, rounds))
    if not jobs:
        raise FabscopeError(f"a budget of {budget:g} s leaves no time for one round")
    ties = _tied_groups(np.where(usable[:, None], sig, 0.0), np.where(usable, cover, 0))
    unsat = np.flatnonzero(usable & (full == 0))
    blind = np.flatnonzero(switch & ((np.minimum(dcover[0::2], dcover[1::2]) < min_cover)
                                     | np.all(np.abs(dsig[0::2] - dsig[1::2]) < 1e-9, axis=1)))
    weak = np.flatnonzero(dwant & (dheld < min_cover))
    return ProbePlan(fabric, jobs, size, iterations, spent, budget, min_cover, routing=router.name,
                     uncovered=[_cable(fabric, c) for c in np.flatnonzero((cover == 0) & usable)[:50]],
                     unsaturated=[_cable(fabric, c) for c in unsat[:50]], n_unsaturated=int(len(unsat)),
                     ties=[[_cable(fabric, c) for c in g] for g in ties[:50]],
                     cover_min=int(cover[usable].min()) if usable.any() else 0, unrouted=int(np.sum(~usable)),
                     one_way_blind=[_cable(fabric, c) for c in blind[:50]], n_one_way_blind=int(len(blind)),
                     held_back_few=[fabric.link_name(int(x)) for x in weak[:50]], n_held_back_few=int(len(weak)))


def sh_quote(word: object) -> str:
    """The one way a plan's script writes a word: :func:`fabscope.names.shell_word` (POSIX quoting).

    >>> print(sh_quote("node001"), sh_quote("EOF||touch${IFS}/tmp/x"))
    node001 'EOF||touch${IFS}/tmp/x'
    """
    return shell_word(str(word))


def _comment(text: str) -> str:
    """A comment line: anything but printable ASCII (a newline would end the comment) becomes '?'."""
    return "# " + "".join(c if " " <= c <= "~" else "?" for c in text)


def _cable(f: Fabric, c: int) -> str:
    from fabscope.diagnose.tomography import cable_name

    return cable_name(f, int(c))


def _tied_groups(sig: np.ndarray, cover: np.ndarray) -> list[list[int]]:
    groups: dict[tuple[float, float, int], list[int]] = {}
    for c in np.flatnonzero(cover > 0).tolist():
        groups.setdefault((round(sig[c, 0], 9), round(sig[c, 1], 9), int(cover[c])), []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def _n_tied(sig: np.ndarray, cover: np.ndarray) -> int:
    key = np.round(sig, 9)
    _, counts = np.unique(np.c_[key, cover], axis=0, return_counts=True)
    return int(np.sum(counts[counts > 1]))


def routed_links(fabric: Fabric, routing: Any, hosts: np.ndarray, chunk: int = 400_000) -> np.ndarray:
    """Directed links some route between two of ``hosts`` crosses (the others no measurement can see)."""
    from fabscope.routing import make_routing

    router = routing if routing is not None and not isinstance(routing, str) else make_routing(fabric, routing)
    used = np.zeros(fabric.n_links, bool)
    n = len(hosts)
    per = max(1, chunk // n)
    for a in range(0, n, per):
        src = np.repeat(hosts[a:a + per], n)
        dst = np.tile(hosts, len(hosts[a:a + per]))
        keep = src != dst
        used[router.routes(src[keep], dst[keep]).link] = True
    return used


def routed_cables(fabric: Fabric, routing: Any, hosts: np.ndarray, chunk: int = 400_000) -> np.ndarray:
    """Cables some route between two of ``hosts`` crosses, either way."""
    used = routed_links(fabric, routing, hosts, chunk)
    return used[0::2] | used[1::2]
