"""What a confirmation round may change in a diagnosis: clear, keep, never add.

The joint diagnosis of a first run and its confirmation round (:mod:`.confirm`) fits both from
scratch.  Left alone it could drop a suspect that the new pairs never crossed (in the suspect's
direction, no new evidence either way: the noise fitted to both runs together moved) and name a
cable the first diagnosis did not (the round was planned to test suspects, not to search).  So
:func:`settle` holds the joint answer to the round's purpose:

* a first suspect the joint diagnosis names again is ``confirmed``;
* a first suspect it drops is cleared only if new pairs crossed one of its links and ran at the
  model's rate (their median above the slow threshold); where none crossed it, it is kept as it
  was, marked ``kept: untested``; where they are slow too (the joint fit blamed a neighbour they
  share), ``kept: slow again``.  New pairs that cross a cable the joint diagnosis names in its
  place are that cable's evidence, not the suspect's: one of the others at the model's rate
  clears the suspect (a core-to-spine direction at fault slows every pair below it; a pair
  through the spine-to-leaf suspect from elsewhere runs at full rate);
* a suspect the joint diagnosis names that the first did not is not added: it goes among the
  candidates, marked ``new``, for a round of its own;
* a first suspect milder than the joint diagnosis may name (its model ran within a budget of engine
  events: ``mildest_factor``) is kept as it was, marked ``kept: too mild``: that model cannot test it.

Suspects are matched by cable (a direction and its cable both ways are the same suspect here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.diagnose.budget import too_mild
from fabscope.diagnose.tomography import Diagnosis


def new_pair_crossings(d: Diagnosis, first_input: int, links: list[int]) -> np.ndarray:
    """The pairs of inputs other than ``first_input`` that cross any of ``links`` (either way of a ping-pong)."""
    m = d.measured
    src = np.array([k[0] for k in m.scenario_key], dtype=np.int64)[m.scenario] if m.scenario_key else \
        np.zeros(m.n_pairs, np.int64)
    cols = [x for x in links if 0 <= x < d.measured.fabric.n_links]
    if not cols:
        return np.zeros(0, np.int64)
    hit = np.asarray(d.model.pair_links[:, cols].sum(axis=1)).ravel() > 0
    return np.flatnonzero(hit & (src != first_input))


def settle(d: Diagnosis, first: list[dict[str, Any]], first_input: int) -> dict[str, list[str]]:
    """Hold ``d`` (the joint diagnosis) to what a confirmation round may change (module docstring);
    ``first``: the suspects of the diagnosis confirmed, read from input ``first_input``.  Returns (and
    records in ``d.meta["confirmation"]``) the names confirmed, cleared, kept untested and not added."""
    first_cables = {s.get("cable") for s in first}
    joint = {s["cable"]: s for s in d.suspects}
    out: dict[str, list[str]] = {"confirmed": [], "cleared": [], "kept_untested": [], "kept_slow_again": [],
                                 "kept_too_mild": [], "not_added": []}
    mildest = d.meta.get("mildest_factor")
    suspects = []
    # the links of what the joint diagnosis names that the first did not
    named_instead = [int(x) for c, j in joint.items() if c not in first_cables
                     for x in (j.get("links") or [j["link"]]) if isinstance(x, (int, np.integer))]
    # the new pairs those cables' evidence came from (the same for every first suspect)
    by_instead = new_pair_crossings(d, first_input, named_instead) if named_instead else None
    for s in first:
        if s.get("cable") in joint:
            suspects.append({**joint[s["cable"]], "confirmed": True})
            out["confirmed"].append(str(s.get("name")))
            continue
        if mildest is not None and too_mild(float(s.get("factor", 0.0)), mildest):
            suspects.append({**s, "kept": "too mild", "confirmed": False})
            out["kept_too_mild"].append(str(s.get("name")))
            continue
        links = [int(x) for x in s.get("links") or [] if isinstance(x, (int, np.integer))]
        new = new_pair_crossings(d, first_input, links)
        # where the joint fit names another cable, the new pairs that avoid it
        apart = np.setdiff1d(new, by_instead) if by_instead is not None else new[:0]
        used = d.measured.bandwidth if d.used is None else d.used
        e = np.log(used[new] / d.modeled[new]) - np.log(d.efficiency)
        e_apart = np.log(used[apart] / d.modeled[apart]) - np.log(d.efficiency)
        if not len(new):
            suspects.append({**s, "kept": "untested", "confirmed": False})
            out["kept_untested"].append(str(s.get("name")))
        elif len(apart) and e_apart.max() >= -d.threshold:
            # a pair through the suspect and not through what the joint fit names instead ran at the
            # model's rate: a fault never speeds a pair that meets it alone, and jitter only slows
            out["cleared"].append(str(s.get("name")))
        elif np.median(e) < -d.threshold:
            # its new pairs are slow too: the joint fit put the blame on a neighbour they share (which is
            # not added); the suspect the round was to test stands
            suspects.append({**s, "kept": "slow again", "confirmed": True})
            out["kept_slow_again"].append(str(s.get("name")))
        else:
            out["cleared"].append(str(s.get("name")))
    added = [s for c, s in joint.items() if c not in first_cables]
    cands = list(d.meta.get("candidates") or [])
    for s in added:
        cands.insert(0, {"cable": s["cable"], "link": s["link"], "direction": s.get("direction", "both"),
                         "evidence": s["evidence"], "confidence": s["confidence"], "tied": s.get("tied", []),
                         "new": True})
        out["not_added"].append(str(s["name"]))
    d.suspects = suspects
    d.meta["candidates"] = cands
    d.meta["confirmation"] = out
    return out
