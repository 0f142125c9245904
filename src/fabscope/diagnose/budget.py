"""How much of the measured program the model in time runs at most (no imports: the command line's
help reads it).  :func:`fabscope.diagnose.nominal.budget_iterations` applies it.

The program in time costs engine events in proportion to pairs x iterations: 85 million for fabscope-bench's
100 timed iterations on 109,800 pairs, about a minute of CPU (docs/diagnose.md, *Speed at a real machine's
size*).  Beyond :data:`MODEL_EVENTS` the model runs fewer timed iterations, so that the nightly diagnosis of a
machine of 2,000 hosts stays within seconds; what that costs in accuracy is measured there too.

>>> MODEL_EVENTS // (EVENTS_PER_PAIR_ITERATION * 109_800) - 2      # timed iterations at 109,800 pairs
4
"""

#: engine events the nominal model in time may take before it models fewer timed iterations than measured
#: (2.5-3.0 CPU s of the compiled engine on the 3-level tree's 109,800 pairs here, 5.6-7.7 on a torus's,
#: whose paths are twice as long: ``bench/nightly_in_time.py --parts``)
MODEL_EVENTS = 6_000_000
#: engine events per pair and iteration (warm-up included) of a lock-step ping-pong set run whole: two
#: messages, each with a few events (its start, its latency, its data's end); 8.00 measured on the 3-level
#: tree, a torus, a dragonfly and Itasca (the components' shortcut, which reuses shapes, 6.7-7.9)
EVENTS_PER_PAIR_ITERATION = 8
#: the fewest timed iterations a budget leaves: below it a pair's figure is the lock-step start's
MIN_BUDGET_ITERATIONS = 3
#: under the budget, the mildest factor a suspect may have: a cable or host estimated milder is left a candidate.
#: 4 modeled iterations move a pair's figure by 0.075 rms |log ratio| from the measured 100 on the 3-level tree's
#: 109,800 pairs, and the error is shared by the pairs one cable holds back: on a 13x13x13 torus's night the
#: pairs crossing each of 14 cables ran 3-4% faster in the 4 iterations than in the 100, and a handful of each
#: cable's read as a fault at x0.84-0.90 that the whole model does not see (docs/diagnose.md, *Which model*;
#: ``bench/budget_error.py``).  x0.8 is exp(-3 x 0.075); at the budget's noise the ``detectable`` line already
#: sees x0.9 on no cable.  ``--model-events 0`` or ``--model-from`` names milder ones.
MILDEST_UNDER_BUDGET = 0.8


def too_mild(factor: float, mildest: float) -> bool:
    """A unit estimated at ``factor`` is milder than a diagnosis whose suspects go down to ``mildest`` may
    name (never where ``mildest`` is 1: no rule).

    >>> too_mild(0.85, MILDEST_UNDER_BUDGET), too_mild(0.75, MILDEST_UNDER_BUDGET), too_mild(0.99, 1.0)
    (True, False, False)
    """
    return mildest < 1.0 and factor > mildest
