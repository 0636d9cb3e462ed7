"""The network under evaluation: ``inference.network.ValueFunction`` built with its
weights, and the counter of its inference compute.

:class:`NetworkModel` counts the network evaluations it performs (samples x
``inference.networks.forward_cost``, a symmetrized network evaluates every image), the
inference term of the paper's proxy ``N_forward + 3 N_backward``. It is kept apart from
``evaluation.policies`` so that the policies, and a configuration check reading
``POLICIES``, load without torch.
"""

from __future__ import annotations

import numpy as np

from games import Game
from inference.network import ValueFunction


class NetworkModel(ValueFunction):
    """A network of ``inference.networks`` built from its config and numpy weights (one
    version, 0, unless set again), evaluated in chunks of ``max_batch`` samples: values
    (``value_obs``, ``value``), logits and the search's ``evaluate``, as the policies ask."""

    def __init__(self, game: Game, net_config, weights: dict[str, np.ndarray] | None = None, *,
                 max_batch: int = 16384, device="cpu", inference_dtype: str = "fp32"):
        super().__init__(game, net_config, max_batch=max_batch, device=device, inference_dtype=inference_dtype)
        if weights is not None:
            self.set_weights(weights)

    @property
    def evaluations(self) -> int:
        """Network evaluations (samples x images) since construction."""
        return self.samples_forward

    def set_weights(self, weights: dict[str, np.ndarray], version: int = 0) -> None:
        super().set_weights(weights, version)

    def value_obs(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values of encodings ``obs`` float32[N, *obs_shape]."""
        return self(obs)
