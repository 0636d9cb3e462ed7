"""Experiments: the papers' protocols as named specs (``experiments/*.toml``), run as
Ray Tune trials (``python -m launch experiment``; ``launch/experiment.py``).

- ``spec``: a spec file read and checked, and its plan for one size (the trials, their
  configs, budgets and placement bundles).
- ``tune_run``: the plan's trials on Ray Tune, each one ordinary training run.
"""
