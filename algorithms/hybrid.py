"""Hybrid: one network with a value head and a policy head, collected as AVI collects
(epsilon-greedy one-step lookahead, each row's value target ``max_a q(s, a)``), each row
also carrying the one-step values' policy, softmax(q / T) over the legal moves
(``actors/hybrid.py``; T = ``actors.hybrid_temperature``), and trained by AlphaZero's loss
(value MSE plus policy cross-entropy) on these targets.

It plays greedily on its one-step values (AVI's policy; its reports' default), or by
MCTS with its own policy head as prior and its value head at the leaves (``evaluation.policy
=mcts``: one network, not the AVI paper's two-network cross-inference). Its rows come at
every step; its actors ask values only, so an inference server can serve them and the
evaluation cache pays as AVI's does. Its preset is AVI's (the game's own) with a policy head.
"""

from algorithms.descriptors import AlgorithmDescriptor

DESCRIPTOR = AlgorithmDescriptor(
    name="hybrid",
    title="Hybrid",
    collector="actors.collectors:hybrid",
    policy_columns=("policy",),  # replay.rows.POLICY: the one-step values' softmax
    eval_cache="cache",
    inference_server=True,
    loss="learner.losses:ALPHAZERO",
    policy_head=True,
    builds_on="avi",
    # Its evaluations play its value head greedily, as AVI's do, so that the two compare
    # head for head (auto would play the policy head of any network that has one).
    preset={"evaluation.policy": "greedy"},
    report_policy="greedy",
)
