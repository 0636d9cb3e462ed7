"""The search's evaluator backed by a policy-value network: the one module of ``search``
that imports ``learner`` and with it torch. The rest of the package (MCTS, minimax, the
other evaluators) needs only ``games`` and numpy, so ``import search`` stays light.
The layers: ``games`` below both ``search`` and ``learner`` (neither imports the other),
this module above both, and ``actors`` and ``evaluation`` above it."""

from __future__ import annotations

import numpy as np

from games import Game
from games.base import State
from learner.learner import ValueFunction
from learner.networks import NetworkConfig


class NetworkEvaluator(ValueFunction):
    """A policy-value network (``build_network`` of a ``NetworkConfig`` with
    ``policy_head=True``) in eval mode without autograd, on ``device``, evaluated in
    chunks of at most ``max_batch`` states. Its values are clipped to [-1, 1] (the value
    head is a plain regression output). ``torch.set_num_threads`` is the caller's choice.

    It keeps the actors' value-network handling (weights, version, the compute counter
    ``samples_forward``) of ``learner.learner.ValueFunction``, but is called on game
    states and answers priors too; ``inference_dtype`` as there (``learner.inference``)."""

    def __init__(self, game: Game, net_config: NetworkConfig, *, device="cpu", max_batch: int = 65536,
                 inference_dtype: str = "fp32"):
        if not net_config.policy_head:
            raise ValueError("NetworkEvaluator: net_config.policy_head must be True (the search needs priors); "
                             "use dataclasses.replace(config, policy_head=True)")
        super().__init__(game, net_config, max_batch=max_batch, device=device, inference_dtype=inference_dtype)

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        logits, values = self.forward(self.game.encode(states), logits=True)
        return logits, np.clip(values, -1.0, 1.0, out=values)
