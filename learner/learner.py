"""Training of the value network (:class:`Learner`) and its read-only twin for the
actors (:class:`ValueFunction`).

The AVI loss is the paper's eq. (5), ``E[(V_theta(s) - y)^2]`` over replayed rows
``(s, y)``; AlphaZero's (eq. 11) adds the cross-entropy of the policy head to the search's
visit distribution, ``-pi_MCTS . log softmax(logits)``; AZAL (AZAL paper eq. 10) adds
``lambda_aux`` times the cross-entropy to the smoothed oracle target, averaged over the
oracle-labelled rows only. All are minimised with Adam. The learner counts the samples it pushes through the
network forward and backward, the two terms of the compute proxy
``N_forward + 3 N_backward``; a symmetrized network counts every symmetric image.

Weights leave the learner as a dict of CPU numpy arrays (``get_weights``), which the
Ray object store shares between the actors of a node without copies; see
``learner.weights.publish``.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from games import Game
from learner.networks import (
    NetworkConfig,
    build_network,
    forward_cost,
    torch_symmetries,
)
from learner.inference import FastPath, check_dtype
from replay.rows import AUX_POLICY, POLICY, POLICY_COLUMNS

# The training algorithms, each named by its loss: the one list that the command line,
# the config, the actors and the learner check against.
ALGOS = tuple(POLICY_COLUMNS)
PRECISIONS = ("fp32", "bf16")  # of the learner's forward and backward passes (Learner.precision)


def compute_proxy(forward_samples: int, backward_samples: int) -> int:
    """The paper's forward-equivalent compute ``N_forward + 3 N_backward``, in samples."""
    return forward_samples + 3 * backward_samples


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _read_only_tensor(array: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy`` for arrays that may be read-only (batches and weights from
    the Ray object store are): the tensor is only ever read, so torch's warning about
    writing to it does not apply, and a copy would cost a pass over the batch."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


def numpy_weights(net: nn.Module) -> dict[str, np.ndarray]:
    """CPU copies of every parameter and buffer of ``net``, by state-dict name."""
    return {k: v.detach().to("cpu", copy=True).numpy() for k, v in net.state_dict().items()}


def load_numpy_weights(net: nn.Module, weights: dict[str, np.ndarray]) -> None:
    """Copy ``weights`` (as from :func:`numpy_weights`) into ``net``; the names must match."""
    expected = net.state_dict()
    missing, unexpected = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    reshaped = [f"{k} {tuple(weights[k].shape)} (network: {tuple(v.shape)})"
                for k, v in expected.items() if k in weights and tuple(weights[k].shape) != tuple(v.shape)]
    if missing or unexpected or reshaped:
        raise ValueError(f"weights do not fit the network: missing {missing[:3]}, unexpected {unexpected[:3]}, "
                         f"other shapes {reshaped[:3]} (were they made for another NetworkConfig or game?)")
    net.load_state_dict({k: _read_only_tensor(v) for k, v in weights.items()})  # copies into net


def _cpu_clone(obj):
    """A deep copy of a (nested) state dict with every tensor cloned onto the CPU, so that
    later training does not change it and a CPU-only machine can load it."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _cpu_clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cpu_clone(v) for v in obj)
    return obj


def _check_obs(obs: np.ndarray, obs_shape: tuple, dtype, where: str) -> int:
    if not isinstance(obs, np.ndarray):
        raise TypeError(f"{where}: obs must be a numpy array, got {type(obs).__name__}")
    if obs.dtype != dtype:
        raise TypeError(f"{where}: obs must be {np.dtype(dtype).name}, got {obs.dtype}")
    if obs.ndim != 1 + len(obs_shape) or obs.shape[1:] != tuple(obs_shape):
        raise ValueError(f"{where}: obs must have shape [N, {', '.join(map(str, obs_shape))}], got {obs.shape}")
    return obs.shape[0]


class Learner:
    """A value network trained by Adam on batches of replayed ``(obs, target)`` rows.

    ``augment=True`` transforms every training example by a random symmetry of the game
    (the paper's Othello and Go training, C.2); the target is unchanged, as the value
    is invariant. ``precision="bf16"`` runs the forward and backward passes under bf16
    autocast, on the CPU and on CUDA, the weights and Adam's state staying fp32. State (weights, optimizer, counters, RNGs) round-trips through
    :meth:`state_dict` / :meth:`load_state_dict` so that a resumed run continues
    bitwise as if it had never stopped.
    """

    def __init__(self, game: Game, net_config: NetworkConfig, lr: float = 3e-4, device=None, seed: int = 0,
                 loss: str = "avi", *, augment: bool = False, aux_weight: float = 1.0, precision: str = "fp32"):
        if precision not in PRECISIONS:
            raise ValueError(f"Learner: precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if loss not in ALGOS:
            raise ValueError(f"Learner: loss {loss!r} is not implemented; available: {', '.join(ALGOS)}")
        if loss != "avi" and not net_config.policy_head:
            raise ValueError(f"Learner: loss {loss!r} trains a policy, but the NetworkConfig has no policy head "
                             f"(set policy_head=True)")
        self.game, self.net_config, self.loss, self.augment = game, net_config, loss, bool(augment)
        self.precision = precision  # of the forward and backward passes; the weights stay fp32
        self.aux_weight = float(aux_weight)  # lambda_aux of AZAL
        self.device = torch.device(device) if device is not None else default_device()
        # The learner owns its process: seeding torch's global RNG makes the initial
        # weights a function of the seed; its state is saved with the checkpoint.
        torch.manual_seed(seed)
        self._rng = np.random.default_rng(seed)  # symmetry draws of `augment`
        self.net = build_network(game, net_config).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
        self._symmetries = torch_symmetries(game) if self.augment else []
        if self.augment and len(self._symmetries) < 2:
            raise ValueError(f"Learner: augment=True but {game!r} has no symmetry besides the identity")
        self._cost = forward_cost(self.net)
        self.updates = 0
        self.samples_forward = 0  # samples through the network, forward (x images)
        self.samples_backward = 0  # and backward: the compute proxy's two counts

    @property
    def compute_proxy(self) -> int:
        """The paper's forward-equivalent compute of training so far."""
        return compute_proxy(self.samples_forward, self.samples_backward)

    def _augmented(self, x: torch.Tensor, policies: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Each row of ``x`` [N, *obs_shape] through a random symmetry; the action
        distributions ``policies`` (each [N, A]) move with it: the image of action ``a``
        gets ``a``'s probability."""
        choice = self._rng.integers(len(self._symmetries), size=x.shape[0])
        out = torch.empty_like(x)
        moved = [torch.empty_like(p) for p in policies]
        for k, sym in enumerate(self._symmetries):
            rows = torch.from_numpy(np.flatnonzero(choice == k)).to(self.device)
            if rows.numel():
                out[rows] = sym.obs(x[rows])
                perm = sym.action.to(self.device)
                for src, dst in zip(policies, moved):
                    dst[rows.unsqueeze(1), perm.unsqueeze(0)] = src[rows]
        return out, moved

    def _check_policy(self, batch: dict, key: str, n: int) -> np.ndarray:
        p = batch.get(key)
        shape = (n, self.game.num_actions)
        if not isinstance(p, np.ndarray) or p.dtype != np.float32 or p.shape != shape:
            raise ValueError(f"Learner.train_step ({self.loss}): {key} must be float32{list(shape)}, got "
                             f"{getattr(p, 'dtype', type(p).__name__)}{list(getattr(p, 'shape', []))}")
        return p

    def train_step(self, batch: dict) -> dict:
        """One Adam update on ``batch = {"obs": uint8[N, *obs_shape], "target": float32[N]}``,
        plus the action distributions of ``replay.rows.POLICY_COLUMNS``: ``"policy": float32[N, A]``
        (AlphaZero, AZAL) and ``"aux_policy": float32[N, A]`` (AZAL: the smoothed oracle
        target, all zeros on unlabelled rows)."""
        obs, target = batch["obs"], batch["target"]
        n = _check_obs(obs, self.game.obs_shape, np.uint8, "Learner.train_step")
        if not isinstance(target, np.ndarray) or target.dtype != np.float32 or target.shape != (n,):
            raise ValueError(f"Learner.train_step: target must be float32[{n}], got "
                             f"{getattr(target, 'dtype', type(target).__name__)}{getattr(target, 'shape', '')}")
        policies = [self._check_policy(batch, key, n) for key in POLICY_COLUMNS[self.loss]]
        # uint8 crosses to the device (4x fewer bytes than float32) and is converted there.
        x = _read_only_tensor(obs).to(self.device, non_blocking=True).float()  # [N, *obs_shape]
        y = _read_only_tensor(target).to(self.device, non_blocking=True)  # [N]
        pis = [_read_only_tensor(p).to(self.device, non_blocking=True) for p in policies]  # each [N, A]
        if self.augment:
            x, pis = self._augmented(x, pis)
        pi = dict(zip(POLICY_COLUMNS[self.loss], pis))  # column name -> [N, A]

        self.net.train()
        # bf16: autocast runs the matmuls and convs in bfloat16 (fp32 master weights, fp32
        # optimizer state); the outputs come back to fp32 before the losses.
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            out = self.net(x)
        value = out.value.float()  # [N]
        logits = out.logits.float() if out.logits is not None else None  # [N, A]
        value_loss = F.mse_loss(value, y)  # eq. (5); eq. (11)'s value term
        loss, extra = value_loss, {}
        if POLICY in pi:
            log_p = F.log_softmax(logits, dim=1)  # [N, A]
            policy_loss = -(pi[POLICY] * log_p).sum(1).mean()  # eq. (11)'s policy term
            loss = loss + policy_loss
            extra.update(value_loss=value_loss.detach(), policy_loss=policy_loss.detach())
        if AUX_POLICY in pi:
            labelled = (pi[AUX_POLICY].sum(1) > 0).float()  # [N]; unlabelled rows are all zeros
            per_row = -(pi[AUX_POLICY] * log_p).sum(1)  # [N]
            aux_loss = (per_row * labelled).sum() / labelled.sum().clamp(min=1.0)  # over labelled rows only
            loss = loss + self.aux_weight * aux_loss
            extra.update(aux_loss=aux_loss.detach(), aux_labelled_fraction=labelled.mean())
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in self.net.parameters() if p.grad is not None])
        self.optimizer.step()

        self.updates += 1
        self.samples_forward += n * self._cost
        self.samples_backward += n * self._cost
        value = value.detach()
        # One device-to-host transfer for all the metrics.
        stats = torch.stack([loss.detach(), value.mean(), value.std(correction=0), y.mean(),
                             y.std(correction=0), grad_norm, *extra.values()]).tolist()
        names = ("loss", "value_mean", "value_std", "target_mean", "target_std", "grad_norm", *extra)
        return {**dict(zip(names, stats)), "updates": self.updates}

    # ---- weights for the actors ---------------------------------------------------

    def get_weights(self) -> dict[str, np.ndarray]:
        return numpy_weights(self.net)

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        load_numpy_weights(self.net, weights)

    # ---- resumable state --------------------------------------------------------

    def _identity(self) -> dict:
        return {"game": self.game.name, "game_params": dict(self.game.params),
                "net_config": dataclasses.asdict(self.net_config), "loss": self.loss, "augment": self.augment}

    def state_dict(self) -> dict:
        """Everything a resumed learner needs, on the CPU, made only of tensors, numbers,
        strings, None and containers (loadable with ``torch.load(weights_only=True)``)."""
        rng = {"torch": torch.get_rng_state(), "numpy": self._rng.bit_generator.state,
               "cuda": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else []}
        return _cpu_clone({
            **self._identity(),
            "net": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "counters": {"updates": self.updates, "samples_forward": self.samples_forward,
                         "samples_backward": self.samples_backward},
            "rng": rng,
        })

    def load_state_dict(self, state: dict) -> None:
        mine = self._identity()
        differ = [k for k in mine if state.get(k) != mine[k]]
        if differ:
            raise ValueError("Learner.load_state_dict: the saved learner differs in "
                             + "; ".join(f"{k}: saved {state.get(k)!r}, here {mine[k]!r}" for k in differ))
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        counters = state["counters"]
        self.updates = int(counters["updates"])
        self.samples_forward = int(counters["samples_forward"])
        self.samples_backward = int(counters["samples_backward"])
        torch.set_rng_state(state["rng"]["torch"])
        if self.device.type == "cuda" and state["rng"]["cuda"]:
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        self._rng.bit_generator.state = state["rng"]["numpy"]


class ValueFunction:
    """The actors' copy of the value network: eval mode, no autograd, on ``device``
    (the CPU by default), evaluated in chunks of at most ``max_batch`` samples to bound
    memory. ``torch.set_num_threads`` is the caller's choice.

    ``inference_dtype`` (``learner.inference``): fp32, or a reduced-precision copy of
    each weight version (bf16, int8, or auto: the fastest on this machine), built at the
    version's first call and used only if its values stay within the tolerance of fp32
    there; ``fast.dtype`` says which path answers the current version."""

    def __init__(self, game: Game, net_config: NetworkConfig, *, max_batch: int = 65536, device="cpu",
                 inference_dtype: str = "fp32"):
        if max_batch < 1:
            raise ValueError(f"ValueFunction: max_batch must be >= 1, got {max_batch}")
        self.game, self.net_config, self.max_batch = game, net_config, int(max_batch)
        self.device = torch.device(device)
        self.net = build_network(game, net_config).to(self.device).eval()
        self.fast = FastPath(check_dtype(inference_dtype, type(self).__name__),
                             (game.name, tuple(sorted(game.params.items())), net_config, self.device.type))
        self._cost = forward_cost(self.net)
        self.version: int | None = None  # of the weights in use; None until set_weights
        self.samples_forward = 0  # network evaluations, symmetric images counted

    def set_weights(self, weights: dict[str, np.ndarray], version: int) -> None:
        load_numpy_weights(self.net, weights)
        self.version = int(version)
        self.fast.new_version()

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """float32[N] values, for the player to move, of ``obs`` float32[N, *obs_shape]."""
        return self.forward(obs)[1]

    def forward(self, obs: np.ndarray, logits: bool = False) -> tuple[np.ndarray | None, np.ndarray]:
        """(float32[N, A] policy logits, or None unless ``logits`` and the network has a
        policy head; float32[N] values) of ``obs`` float32[N, *obs_shape], in chunks of
        ``max_batch``; counts ``samples_forward``."""
        name = type(self).__name__
        if self.version is None:
            raise RuntimeError(f"{name} called before set_weights: its network is untrained")
        n = _check_obs(obs, self.game.obs_shape, np.float32, name)
        values = np.empty(n, np.float32)
        priors = (np.empty((n, self.game.num_actions), np.float32)
                  if logits and self.net_config.policy_head else None)
        with torch.inference_mode():
            net = self.net
            for start in range(0, n, self.max_batch):
                chunk = _read_only_tensor(obs[start:start + self.max_batch]).to(self.device)
                if self.fast.requested != "fp32":
                    net = self.fast.module(self.net, chunk)  # built once per version, at its first chunk
                out = net(chunk)
                values[start:start + len(chunk)] = out.value.cpu().numpy()
                if priors is not None:
                    priors[start:start + len(chunk)] = out.logits.cpu().numpy()
        self.samples_forward += n * self._cost
        return priors, values
