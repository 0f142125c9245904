"""Compare and diagnose: measured pairs beside the model of the same pairs on
the same routes, tomography of link and host capacities, probe plans, and
criticality sweeps.

Modules: :mod:`.measured` (measured runs as pairs of fabric hosts with their
concurrent sets), :mod:`.pairmodel` (the flow model of those pairs, rerun
cheaply with other capacities), :mod:`.compare`, :mod:`.tomography`,
:mod:`.plan`, :mod:`.critical`.
"""
