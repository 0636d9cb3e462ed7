"""Training of the value network (:class:`Learner`); the networks that play its weights
are ``inference.network``'s.

The AVI loss is the paper's eq. (5), ``E[(V_theta(s) - y)^2]`` over replayed rows
``(s, y)``; AlphaZero's (eq. 11) adds the cross-entropy of the policy head to the search's
visit distribution, ``-pi_MCTS . log softmax(logits)``; AZAL (AZAL paper eq. 10) adds
``lambda_aux`` times the cross-entropy to the smoothed oracle target, averaged over the
oracle-labelled rows only (learner/losses.py; each algorithm's descriptor names its
own). All are minimised with Adam. The learner counts the samples it pushes through the
network forward and backward, the two terms of the compute proxy
``N_forward + 3 N_backward``; a symmetrized network counts every symmetric image.

Weights leave the learner as a dict of CPU numpy arrays (``get_weights``), which the
Ray object store shares between the actors of a node without copies; see
``learner.weights.publish``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from typing import NamedTuple

import numpy as np
import torch

from games import Game
from inference.networks import NetworkConfig, build_network, forward_cost, torch_symmetries
from inference.tensors import check_obs, load_numpy_weights, numpy_weights, read_only_tensor
from learner.config import PRECISIONS
from learner.losses import AVI as VALUE_MSE, Loss

GRAPHS = ("auto", "on", "off")  # Learner.graphs: auto is on for CUDA, off elsewhere


def compute_proxy(forward_samples: int, backward_samples: int) -> int:
    """The paper's forward-equivalent compute ``N_forward + 3 N_backward``, in samples."""
    return forward_samples + 3 * backward_samples


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


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


class DeviceBatch(NamedTuple):
    """Replayed rows on the learner's device: ``obs`` uint8[N, *obs_shape] (converted to
    float on the device: a quarter of the bytes cross), ``target`` float32[N] and the
    action distributions of the algorithm's ``policy_columns``, each float32[N, A]."""

    obs: torch.Tensor
    target: torch.Tensor
    policies: tuple[torch.Tensor, ...]

    def __len__(self) -> int:
        return self.obs.shape[0]

    def rows(self, start: int, stop: int) -> "DeviceBatch":
        """Rows ``start:stop``: views, no copy."""
        return DeviceBatch(self.obs[start:stop], self.target[start:stop], tuple(p[start:stop] for p in self.policies))


@contextlib.contextmanager
def _tf32(enabled: bool):
    """CUDA matmuls and convolutions in TF32 inside the block (a process-wide switch of
    torch's, restored on exit, so that other networks of the process keep fp32)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


class Learner:
    """A value network trained by Adam on batches of replayed ``(obs, target)`` rows.

    ``augment=True`` transforms every training example by a random symmetry of the game
    (the paper's Othello and Go training, C.2); the target is unchanged, as the value
    is invariant. ``precision="bf16"`` runs the forward and backward passes under bf16
    autocast, on the CPU and on CUDA, the weights and Adam's state staying fp32. State (weights, optimizer, counters, RNGs) round-trips through
    :meth:`state_dict` / :meth:`load_state_dict` so that a resumed run continues
    bitwise as if it had never stopped.

    An update never waits for the device: :meth:`step` takes rows already on it
    (:meth:`to_device`) and answers its metrics as a device tensor, which a caller sums
    over many updates and reads once (``LearnerWorker.train``). ``graphs`` (``auto``: on
    for CUDA) records the whole update (forward, backward, gradient norm, Adam) as one
    CUDA graph at the fourth update and replays it afterwards: a small network's update is
    some 200 kernel launches, which the graph turns into one. The first three updates run
    eagerly on a side stream, as CUDA graph capture requires; every update is a real one.
    """

    WARMUP_UPDATES = 3  # eager updates before the graph is captured

    def __init__(self, game: Game, net_config: NetworkConfig, lr: float = 3e-4, device=None, seed: int = 0,
                 loss=None, *, augment: bool = False,
                 precision: str = "fp32", graphs: str = "auto"):
        if precision not in PRECISIONS:
            raise ValueError(f"Learner: precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if graphs not in GRAPHS:
            raise ValueError(f"Learner: graphs must be one of {', '.join(GRAPHS)}, got {graphs!r}")
        # ``loss``: the algorithm's descriptor, its settings resolved (algorithms.configured),
        # handed over by the run: the learner looks no algorithm up by name. None: AVI's value MSE.
        if isinstance(loss, str):
            raise ValueError(f"Learner: loss takes the algorithm's descriptor (algorithms.descriptor({loss!r})), "
                             f"not its name")
        if loss is not None and loss.policy_head and not net_config.policy_head:
            raise ValueError(f"Learner: loss {loss.name!r} trains a policy, but the NetworkConfig has no "
                             f"policy head (set policy_head=True)")
        # The algorithm's name (kept in checkpoints), its rows' action distributions and its
        # loss, made with the algorithm's own settings (AZAL's lambda_aux).
        self.loss, self.policy_columns = ("avi", ()) if loss is None else (loss.name, loss.policy_columns)
        self._loss: Loss = VALUE_MSE if loss is None else loss.training_loss()
        self.game, self.net_config, self.augment = game, net_config, bool(augment)
        self.precision = precision  # of the forward and backward passes; the weights stay fp32
        self.device = torch.device(device) if device is not None else default_device()
        # The learner owns its process: seeding torch's global RNG makes the initial
        # weights a function of the seed; its state is saved with the checkpoint.
        torch.manual_seed(seed)
        self._rng = np.random.default_rng(seed)  # symmetry draws of `augment`
        self.net = build_network(game, net_config).to(self.device)
        self.graphs = graphs == "on" or (graphs == "auto" and self.device.type == "cuda")
        if self.graphs and self.device.type != "cuda":
            raise ValueError(f"Learner: graphs='on' needs a CUDA device, the learner's is {self.device}")
        # capturable: Adam keeps its step count on the device and never reads it on the
        # host, which graph capture needs (and which spares a sync per update anyway).
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr, capturable=self.graphs)
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static: tuple | None = None  # the graph's inputs (x, y, pis) and its metrics output
        self._side_stream = torch.cuda.Stream(self.device) if self.graphs else None
        self._symmetries = torch_symmetries(game) if self.augment else []
        if self.augment and len(self._symmetries) < 2:
            raise ValueError(f"Learner: augment=True but {game!r} has no symmetry besides the identity")
        # Where each action's probability comes from under each symmetry, kept on the device.
        self._inverse_actions = [torch.argsort(sym.action).to(self.device) for sym in self._symmetries]
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
        gets ``a``'s probability. Every symmetry maps the whole batch and a mask keeps each
        row's own image: shapes that do not depend on the draw, so no wait for the device."""
        choice = self._rng.integers(len(self._symmetries), size=x.shape[0])
        chosen = read_only_tensor(choice)
        chosen = (chosen.pin_memory().to(self.device, non_blocking=True) if self.device.type == "cuda"
                  else chosen.to(self.device))  # [N]
        out, moved = x, list(policies)
        for k, sym in enumerate(self._symmetries[1:], start=1):  # the identity (k = 0) is the start
            mask = chosen == k  # [N]
            out = torch.where(mask.view(-1, *([1] * (x.dim() - 1))), sym.obs(x), out)
            # dst[:, perm[a]] = src[:, a], i.e. dst = src[:, inverse(perm)]
            inverse = self._inverse_actions[k]
            moved = [torch.where(mask[:, None], src[:, inverse], dst) for src, dst in zip(policies, moved)]
        return out, moved

    def _check_policy(self, batch: dict, key: str, n: int) -> np.ndarray:
        p = batch.get(key)
        shape = (n, self.game.num_actions)
        if not isinstance(p, np.ndarray) or p.dtype != np.float32 or p.shape != shape:
            raise ValueError(f"Learner.train_step ({self.loss}): {key} must be float32{list(shape)}, got "
                             f"{getattr(p, 'dtype', type(p).__name__)}{list(getattr(p, 'shape', []))}")
        return p

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The names of the entries of :meth:`step`'s metrics vector, in order."""
        return ("loss", "value_mean", "value_std", "target_mean", "target_std", "grad_norm", *self._loss.metrics)

    def to_device(self, batch: dict) -> DeviceBatch:
        """``batch`` (numpy rows, as :meth:`train_step` takes them; any number of rows, e.g.
        several batches sampled at once) checked and moved to the device in one transfer
        per column, from pinned memory without waiting on a GPU."""
        obs, target = batch["obs"], batch["target"]
        n = check_obs(obs, self.game.obs_shape, (np.uint8,), "Learner.train_step")
        if not isinstance(target, np.ndarray) or target.dtype != np.float32 or target.shape != (n,):
            raise ValueError(f"Learner.train_step: target must be float32[{n}], got "
                             f"{getattr(target, 'dtype', type(target).__name__)}{getattr(target, 'shape', '')}")
        policies = [self._check_policy(batch, key, n) for key in self.policy_columns]
        pinned = self.device.type == "cuda"

        def move(array: np.ndarray) -> torch.Tensor:
            tensor = read_only_tensor(np.ascontiguousarray(array))
            return tensor.pin_memory().to(self.device, non_blocking=True) if pinned else tensor.to(self.device)

        return DeviceBatch(move(obs), move(target), tuple(move(p) for p in policies))

    def train_step(self, batch: dict) -> dict:
        """One Adam update on ``batch = {"obs": uint8[N, *obs_shape], "target": float32[N]}``,
        plus the action distributions of the algorithm's ``policy_columns``: ``"policy": float32[N, A]``
        (AlphaZero, AZAL) and ``"aux_policy": float32[N, A]`` (AZAL: the smoothed oracle
        target, all zeros on unlabelled rows). Its metrics are read at once, which waits
        for the device: a training loop sums :meth:`step`'s answers instead."""
        stats = self.step(self.to_device(batch)).tolist()
        return {**dict(zip(self.metric_names, stats)), "updates": self.updates}

    def step(self, batch: DeviceBatch) -> torch.Tensor:
        """One Adam update on rows already on the device; returns the metrics vector
        (:attr:`metric_names`) float32[M] on the device, without waiting for it."""
        n = len(batch)
        # uint8 crossed to the device (4x fewer bytes than float32) and is converted there.
        x, pis = batch.obs.float(), list(batch.policies)  # [N, *obs_shape], each [N, A]
        if self.augment:
            x, pis = self._augmented(x, pis)
        self.net.train()
        if not self.graphs:
            stats = self._update(x, batch.target, pis)
        elif self._graph is not None and self._static[0].shape[0] == n:
            static_x, static_y, static_pis, static_stats = self._static
            static_x.copy_(x)
            static_y.copy_(batch.target)
            for dst, src in zip(static_pis, pis):
                dst.copy_(src)
            self._graph.replay()
            stats = static_stats.clone()  # the next replay overwrites the graph's output
        elif self.updates < self.WARMUP_UPDATES or self._graph is not None:
            # Warm-up (and a batch of another size than the graph's): eager, on the side
            # stream that capture needs warmed up.
            self._side_stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self._side_stream):
                stats = self._update(x, batch.target, pis)
            torch.cuda.current_stream(self.device).wait_stream(self._side_stream)
        else:
            stats = self._capture(x, batch.target, pis)
        self.updates += 1
        self.samples_forward += n * self._cost
        self.samples_backward += n * self._cost
        return stats

    def _capture(self, x: torch.Tensor, y: torch.Tensor, pis: list[torch.Tensor]) -> torch.Tensor:
        """Record one update on copies of these rows as a CUDA graph, then replay it: the
        recording runs nothing, the replay is this update."""
        static_x, static_y, static_pis = x.clone(), y.clone(), [p.clone() for p in pis]
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)  # backward allocates the gradients in the graph's pool
        try:
            with torch.cuda.graph(graph):
                static_stats = self._update(static_x, static_y, static_pis)
        except RuntimeError as err:
            # A network or torch version that cannot be captured trains eagerly, slower,
            # rather than not at all; the update was not applied (capture runs nothing).
            warnings.warn(f"Learner: CUDA graph capture failed, training without graphs: {err}")
            self.graphs = False
            torch.cuda.synchronize(self.device)
            return self._update(x, y, pis)
        self._graph, self._static = graph, (static_x, static_y, static_pis, static_stats)
        graph.replay()
        return static_stats.clone()

    def _update(self, x: torch.Tensor, y: torch.Tensor, pis: list[torch.Tensor]) -> torch.Tensor:
        """The update itself (eager or being captured): losses, backward, Adam; the
        metrics as one float32[M] tensor."""
        pi = dict(zip(self.policy_columns, pis))  # column name -> [N, A]
        # bf16: autocast runs the matmuls and convs in bfloat16 (fp32 master weights, fp32
        # optimizer state); the outputs come back to fp32 before the losses. Autocast's
        # cache of cast weights cannot outlive a graph capture: off under graphs.
        with _tf32(self.precision == "tf32"), torch.autocast(self.device.type, dtype=torch.bfloat16,
                                                             enabled=self.precision == "bf16",
                                                             cache_enabled=not self.graphs):
            out = self.net(x)
        value = out.value.float()  # [N]
        logits = out.logits.float() if out.logits is not None else None  # [N, A]
        loss, extra = self._loss.compute(value, logits, y, pi)  # learner/losses.py
        self.optimizer.zero_grad(set_to_none=not self.graphs)  # under graphs: zeroed in place, same pool
        with _tf32(self.precision == "tf32"):
            loss.backward()
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in self.net.parameters() if p.grad is not None])
        self.optimizer.step()
        value = value.detach()
        return torch.stack([loss.detach(), value.mean(), value.std(correction=0), y.mean(), y.std(correction=0),
                            grad_norm, *extra])

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

