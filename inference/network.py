"""A network that plays: the trained weights' forward on batches of encodings or game
states, for self-play, search and evaluation, with no autograd and nothing of training.

:class:`ValueFunction` holds one weight version of a network of ``inference.networks``
(a symmetrized one averages its symmetric images there) in eval mode, on ``device``, and
answers in chunks of at most ``max_batch`` samples, by the fp32 network or its checked
fast copy (``inference.precision``). It counts the network evaluations it performs
(samples x ``forward_cost``: a symmetrized network evaluates every image), the inference
term of the compute proxy ``N_forward + 3 N_backward``. Its values are the value head's,
a plain regression output; what a search reads is clipped to the game's bounds [-1, 1]
here, once (:meth:`ValueFunction.evaluate`).

- called on encodings, it is AVI's value function, ``float32[N]``;
- :meth:`ValueFunction.evaluate` of game states is the search's evaluator
  (``search.evaluators``): policy logits and bounded values;
- :class:`NetworkEvaluator` is that evaluator as a callable, for a network with a policy
  head (AlphaZero's self-play).
"""

from __future__ import annotations

import numpy as np
import torch

from games import Game
from games.base import State
from inference.compiled import Compiled
from inference.networks import NetworkConfig, build_network, forward_cost
from inference.precision import FastPath, GuardSet, check_dtype, guard_set
from inference.tensors import check_obs, load_numpy_weights, read_only_tensor

VALUE_BOUNDS = (-1.0, 1.0)  # every game's value for the player to move: loss -1, win 1


class ValueFunction:
    """A read-only copy of the network: eval mode, no autograd, on ``device`` (the CPU by
    default), evaluated in chunks of at most ``max_batch`` samples to bound memory.
    ``torch.set_num_threads`` is the caller's choice.

    ``inference_dtype`` (``inference.precision``): fp32, or a reduced-precision copy of
    each weight version (bf16, int8, or auto: the fastest on this machine), built at the
    version's first call and used only if its values stay within the tolerance of fp32
    there and its greedy moves agree with fp32's on the game's guard positions (built at
    the first fast call); ``fast.dtype`` says which path answers the current version.

    ``compile`` (``inference.compiled``): off, on or auto, the fp32 network's forward compiled
    by ``torch.compile``; ``compiled.active`` says whether it answers. A fast dtype other than
    fp32 answers with its own copy, not compiled."""

    def __init__(self, game: Game, net_config: NetworkConfig, *, max_batch: int = 65536, device="cpu",
                 inference_dtype: str = "fp32", compile: str = "off"):
        if max_batch < 1:
            raise ValueError(f"{type(self).__name__}: max_batch must be >= 1, got {max_batch}")
        self.game, self.net_config, self.max_batch = game, net_config, int(max_batch)
        self.device = torch.device(device)
        self.net = build_network(game, net_config).to(self.device).eval()
        self.fast = FastPath(check_dtype(inference_dtype, type(self).__name__),
                             (game.name, tuple(sorted(game.params.items())), net_config, self.device.type))
        self.compiled = Compiled(self.net, compile, type(self).__name__)
        self.cost = forward_cost(self.net)  # network evaluations per sample (symmetric images counted)
        self._guard: GuardSet | None = None  # the fast path's guard positions, built at its first use
        self.version: int | None = None  # of the weights in use; None until set_weights
        self.samples_forward = 0  # network evaluations, symmetric images counted

    @property
    def has_policy(self) -> bool:
        return bool(self.net_config.policy_head)

    def set_weights(self, weights: dict[str, np.ndarray], version: int) -> None:
        load_numpy_weights(self.net, weights)
        self.version = int(version)
        self.fast.new_version()

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values, for the player to move, of ``obs`` float32 or uint8[N, *obs_shape]."""
        return self.forward(obs)[1]

    def forward(self, obs: np.ndarray, logits: bool = False) -> tuple[np.ndarray | None, np.ndarray]:
        """(float32[N, A] policy logits, or None unless ``logits`` and the network has a
        policy head; float32[N] values) of ``obs`` float32[N, *obs_shape], in chunks of
        ``max_batch``; counts ``samples_forward``. ``obs`` may be uint8 (every game's
        encoding is 0/1): it is converted on the device, after a quarter of the bytes crossed."""
        name = type(self).__name__
        if self.version is None:
            raise RuntimeError(f"{name} called before set_weights: its network is untrained")
        n = check_obs(obs, self.game.obs_shape, (np.float32, np.uint8), name)
        values = np.empty(n, np.float32)
        priors = np.empty((n, self.game.num_actions), np.float32) if logits and self.has_policy else None
        with torch.inference_mode():
            net = self.compiled
            for start in range(0, n, self.max_batch):
                chunk = read_only_tensor(obs[start:start + self.max_batch]).to(self.device).float()
                if self.fast.requested != "fp32":
                    if self._guard is None:
                        self._guard = guard_set(self.game, self.has_policy, self.device)
                    net = self.fast.module(self.net, chunk, self._guard)  # built once per version, at its first chunk
                out = net(chunk)
                values[start:start + len(chunk)] = out.value.cpu().numpy()
                if priors is not None:
                    priors[start:start + len(chunk)] = out.logits.cpu().numpy()
        self.samples_forward += n * self.cost
        return priors, values

    def value(self, states: State) -> np.ndarray:
        """float32[N] values of game states, unclipped (the value head's own)."""
        return self(self.game.encode(states))

    def logits(self, states: State) -> np.ndarray:
        """float32[N, A] policy logits of game states; a network without a policy head raises."""
        if not self.has_policy:
            raise ValueError(f"{self.game.name}: this network has no policy head "
                             f"(net_config.policy_head is False); use the greedy value policy")
        return self.forward(self.game.encode(states), logits=True)[0]

    def evaluate(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        """The search's evaluator: (logits float32[N, A], values float32[N] clipped to
        :data:`VALUE_BOUNDS`) of game states; uniform logits without a policy head."""
        logits, values = self.forward(self.game.encode(states), logits=True)
        if logits is None:
            logits = np.zeros((len(values), self.game.num_actions), np.float32)
        return logits, np.clip(values, *VALUE_BOUNDS, out=values)


class NetworkEvaluator(ValueFunction):
    """A policy-value network (``policy_head=True``) as the search's evaluator: called on
    game states, it answers :meth:`ValueFunction.evaluate`'s priors and bounded values."""

    def __init__(self, game: Game, net_config: NetworkConfig, *, device="cpu", max_batch: int = 65536,
                 inference_dtype: str = "fp32", compile: str = "off"):
        if not net_config.policy_head:
            raise ValueError("NetworkEvaluator: net_config.policy_head must be True (the search needs priors); "
                             "use dataclasses.replace(config, policy_head=True)")
        super().__init__(game, net_config, max_batch=max_batch, device=device, inference_dtype=inference_dtype,
                         compile=compile)

    def __call__(self, states: State) -> tuple[np.ndarray, np.ndarray]:
        return self.evaluate(states)
