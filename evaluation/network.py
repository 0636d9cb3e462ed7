"""The network under evaluation: a ``learner`` network answering on game states, and
the counter of its inference compute.

:class:`NetworkModel` counts the network evaluations it performs (samples x
``learner.networks.forward_cost``, a symmetrized network evaluates every image), the
inference term of the paper's proxy ``N_forward + 3 N_backward``. It is kept apart from
``evaluation.policies`` so that the policies, and a configuration check reading
``POLICIES``, load without torch.
"""

from __future__ import annotations

import numpy as np

from games import Game
from learner.learner import ValueFunction


class NetworkModel(ValueFunction):
    """A network of ``learner.networks`` built from its config and numpy weights, in
    eval mode without autograd, evaluated in chunks of ``max_batch`` samples: the
    actors' ``ValueFunction``, answering on game states, with its policy head too."""

    def __init__(self, game: Game, net_config, weights: dict[str, np.ndarray] | None = None, *,
                 max_batch: int = 16384, device="cpu", inference_dtype: str = "fp32"):
        super().__init__(game, net_config, max_batch=max_batch, device=device, inference_dtype=inference_dtype)
        self.cost = self._cost  # network evaluations per sample (symmetric images counted)
        if weights is not None:
            self.set_weights(weights)

    @property
    def evaluations(self) -> int:
        """Network evaluations (samples x images) since construction."""
        return self.samples_forward

    def set_weights(self, weights: dict[str, np.ndarray], version: int = 0) -> None:
        super().set_weights(weights, version)

    @property
    def has_policy(self) -> bool:
        return bool(self.net_config.policy_head)

    def value_obs(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values of encodings ``obs`` float32[N, *obs_shape]."""
        return self(obs)

    def value(self, states) -> np.ndarray:
        return self.value_obs(self.game.encode(states))

    def logits(self, states) -> np.ndarray:
        if not self.has_policy:
            raise ValueError(f"{self.game.name}: this network has no policy head "
                             f"(net_config.policy_head is False); use the greedy value policy")
        return self.forward(self.game.encode(states), logits=True)[0]

    def evaluate(self, states) -> tuple[np.ndarray, np.ndarray]:
        """The search's evaluator: (logits [N, A], values [N] clipped to [-1, 1]);
        uniform logits without a policy head."""
        logits, values = self.forward(self.game.encode(states), logits=True)
        if logits is None:
            logits = np.zeros((len(values), self.game.num_actions), np.float32)
        return logits, np.clip(values, -1.0, 1.0)
