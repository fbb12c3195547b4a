"""The learner's default settings, in a module that imports nothing (the CLI shows them
in ``--help`` without loading scikit-learn). Chosen on every data set measured by
``benchmarks/defaults.py`` (docs/benchmarks/defaults.md)."""

DEFAULT_LAM = 1e-4
"""Ridge penalty on beta (Eq. 2 (eq:objective)), in the units of ``DEFAULT_LAM_SCALE``."""

DEFAULT_LAM_SCALE = "none"
"""``"gram"``: ``lam`` relative to the similarity scale; ``"none"``: absolute."""

DEFAULT_N_INIT = 1
"""Starts of the learner; with more than one, the fit of lowest training Eq. 2 is kept."""
