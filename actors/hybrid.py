"""Hybrid self-play: AVI's collection (``actors/avi.py``: epsilon-greedy one-step
lookahead, each row's value target ``max_a q(s, a)``, ``q = r - gamma V(f(s, a))``), each
row also carrying a policy target for the network's policy head, the distribution the
one-step values give:

    policy(a | s) = exp(q(s, a) / T) / sum_b exp(q(s, b) / T)   over the legal moves b
                  = 1[a = argmax_b q(s, b)]                      at T = 0

(``actors.hybrid_temperature``; with sampled actions, over the sampled moves). The
learner trains both heads by AlphaZero's loss on these targets (``learner.losses``).
"""

from __future__ import annotations

import numpy as np

from actors.avi import AviCollector


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
