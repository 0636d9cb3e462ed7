"""Exact evaluation: oracle-labelled states and the metrics of the papers.

- ``evaluation.exact``: built-in ground truth (enumeration, F-Game values, Chomp tables)
  and the value metrics used during training;
- ``evaluation.datasets`` (+ ``connect4_data``): the fixed, seeded Parquet datasets and
  ``load_dataset(name)``; ``python -m evaluation build --game NAME``;
- ``evaluation.oracles``: Connect Four, Chomp and F-Game oracles behind one interface;
- ``evaluation.policies``: policies ``choose(states) -> actions`` (greedy value, policy
  head, MCTS, minimax) and the network wrapper that counts inference compute;
- ``evaluation.metrics``: value MAE, regret, trace metrics, Student-t intervals;
- ``evaluation.play``: games against the oracle, self-play traces, head-to-head;
- ``evaluation.runner``: ``Evaluator``, ``evaluate_checkpoint``, ``evaluate_main``;
- ``evaluation.report``: ``write_report`` (plots, summary table), ``report_main``.
"""
