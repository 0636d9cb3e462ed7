"""Exact evaluation: oracle-labelled states and the metrics of the papers.

- ``evaluation.labels``: the exact-labels record (``LabelledStates``), labels from V*,
  Chomp's V* from Grundy tables;
- ``evaluation.exact``: built-in ground truth (enumeration, F-Game values, Chomp tables)
  and the value metrics used during training;
- ``evaluation.datasets``: the fixed, seeded Parquet datasets' format and names, and
  ``load_dataset(name)``; ``evaluation.builders`` and ``evaluation.connect4_data``
  generate them (``python -m evaluation build --game NAME``);
- ``evaluation.oracles``: Connect Four, Chomp and F-Game oracles behind one interface;
- ``evaluation.policies``: policies ``choose(states) -> actions`` (greedy value, policy
  head, MCTS, Gumbel, minimax);
- ``evaluation.policy_registry``: the policies by name, each declared once with what it
  needs and reads (``names``, ``describe``, ``make``): evaluation, the board and GTP
  build their players here;
- ``evaluation.network``: the network wrapper that counts inference compute;
- ``evaluation.metrics``: value MAE, regret, trace metrics, Student-t intervals;
- ``evaluation.play``: games against the oracle, self-play traces, head-to-head;
- ``evaluation.suites``: the suite registry (``Suite``, ``suites_for``);
- ``evaluation.runner``: ``SuiteRunner``, ``evaluate_checkpoint``;
- ``evaluation.checkpoints``: ``read_checkpoint`` for evaluation;
- ``evaluation.run_config``: ``TrainedWith``, what evaluation reads of a run's ``config.json``;
- ``evaluation.cli``: ``evaluate_main``, the ``launch evaluate`` command;
- ``evaluation.report``: ``write_report`` (plots, summary table), ``report_main``.
"""
