"""Hybrid: one network with a value head and a policy head, collected as AVI collects
(``actors/avi.py``: epsilon-greedy one-step lookahead, each row's value target
``max_a q(s, a)``, ``q = r - gamma V(f(s, a))``), each row also carrying a policy target
for the policy head, the distribution the one-step values give:

    policy(a | s) = exp(q(s, a) / T) / sum_b exp(q(s, b) / T)   over the legal moves b
                  = 1[a = argmax_b q(s, b)]                      at T = 0

(T = ``algorithm.temperature``; with sampled actions, over the sampled moves), and trained
by AlphaZero's loss (value MSE plus policy cross-entropy, ``learner.losses.ALPHAZERO``) on
these targets.

It plays greedily on its one-step values (AVI's policy; its reports' default), or by
MCTS with its own policy head as prior and its value head at the leaves (``evaluation.policy
=mcts``: one network, not the AVI paper's two-network cross-inference). Its rows come at
every step; its actors ask values only, so an inference server can serve them and the
evaluation cache pays as AVI's does. Its preset is AVI's (the game's own) with a policy head.

This module is the whole algorithm: its settings, its collector, its loss and its
preset; removing it and its line in ``algorithms.BUILTIN`` removes the hybrid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actors.avi import AviCollector
from actors.collectors import CollectorSetup, avi_options, value_function
from algorithms.descriptors import AlgorithmDescriptor, check_at_least_zero
from learner.losses import ALPHAZERO


@dataclass(frozen=True)
class HybridSettings:
    """The hybrid's own settings (``algorithm.FIELD`` config keys)."""

    # T of the policy target softmax(q / T) over the legal moves (0: the greedy move,
    # one-hot). 0.1: a move one outcome worse (a draw beside a win) gets e^-10 of the better
    # one's mass, so the target is the greedy move where the values tell moves apart, shared
    # among moves within ~0.1 of each other, which the value head does not yet tell apart.
    temperature: float = 0.1

    def __post_init__(self):
        check_at_least_zero("temperature", self.temperature, zero="0: the greedy move")


def one_step_policy(q: np.ndarray, temperature: float) -> np.ndarray:
    """float32[B, A]: softmax of ``q`` float32[B, A] / ``temperature`` over the finite
    entries of each row (-inf: illegal, or not sampled); at temperature 0 the one-hot of
    the greedy move (``q.argmax``, the first of equal maxima, as AVI's greedy move)."""
    B, A = q.shape
    if temperature == 0:
        policy = np.zeros((B, A), np.float32)
        policy[np.arange(B), q.argmax(axis=1)] = 1.0
        return policy
    finite = np.isfinite(q)
    z = np.where(finite, q.astype(np.float64) / temperature, -np.inf)
    e = np.where(finite, np.exp(z - z.max(axis=1, keepdims=True)), 0.0)  # the largest is e^0 = 1
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


class HybridCollector(AviCollector):
    """AVI's collector whose rows also carry the one-step values' policy (``policy`` float32[B, A])."""

    def __init__(self, game, num_envs: int, *, temperature: float, **avi_options):
        """``temperature``: T of the policy target (0: greedy one-hot); ``avi_options``: AviCollector's."""
        if not temperature >= 0:
            raise ValueError(f"HybridCollector: temperature must be >= 0, got {temperature}")
        super().__init__(game, num_envs, **avi_options)
        self.temperature = float(temperature)

    def rows(self, obs: np.ndarray, target: np.ndarray, q: np.ndarray) -> dict:
        return {**super().rows(obs, target, q), "policy": one_step_policy(q, self.temperature)}


def collector(setup: CollectorSetup):
    """AVI's value function and collection, each row with the one-step values' policy as well."""
    settings: HybridSettings = setup.settings
    return value_function(setup), HybridCollector(setup.game, setup.num_envs, gamma=setup.gamma, seed=setup.seed,
                                                  temperature=settings.temperature, **avi_options(setup.config))


DESCRIPTOR = AlgorithmDescriptor(
    name="hybrid",
    title="Hybrid",
    collector=collector,
    policy_columns=("policy",),  # replay.rows.POLICY: the one-step values' softmax
    eval_cache="cache",
    inference_server=True,
    loss=ALPHAZERO,
    policy_head=True,
    builds_on="avi",
    # Its evaluations play its value head greedily, as AVI's do, so that the two compare
    # head for head (auto would play the policy head of any network that has one).
    preset={"evaluation.policy": "greedy"},
    report_policy="greedy",
    settings_record=HybridSettings,
    moved_keys={"actors.hybrid_temperature": "temperature"},  # its key before it was the hybrid's own
    exploration="actors.epsilon",  # AVI's: the probability of a uniformly random legal move
)
