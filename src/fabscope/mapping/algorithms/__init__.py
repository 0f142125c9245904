"""Mapping algorithms: baselines, hierarchical partitioning, torus folds, refinement, Scotch."""
