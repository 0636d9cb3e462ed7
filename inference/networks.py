"""The value (and policy-value) networks of the AVI paper, Appendix C.1-C.3.

Every network maps a float32 batch ``[N, *obs_shape]`` (a game's ``encode``) to a
:class:`NetOutput`: ``value[N]`` from the point of view of the player to move, and
``logits[N, A]`` when it has a policy head (AlphaZero), else ``None``.

- :class:`ResidualMLP` (Connect Four, Hex, F-Games, Tic-Tac-Toe, Chomp): the board is
  flattened, a linear stem maps it to ``width`` units, then ``blocks`` residual
  blocks of ``layers_per_block`` (Linear -> LayerNorm -> GELU) layers.
- :class:`ConvResTower` (Othello, Go): MiniZero's board-game backbone, a 3x3 conv stem
  and ``blocks`` residual blocks of two 3x3 convs with BatchNorm and ReLU.
- :class:`Symmetrized` wraps either one to make it exactly invariant under a game's
  symmetries (C.1: Connect Four and Hex feed the board and its reflection and average).

The compute proxy of the paper is ``N_forward + 3 N_backward`` counted in samples
through a network; :func:`forward_cost` says how many network evaluations one input
sample costs (a symmetrized network evaluates every symmetric image).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, NamedTuple, Sequence

import numpy as np
import torch
from torch import Tensor, nn

import games
from games import Game


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Architecture of a network; one per game in :data:`PRESET_NETWORKS`."""

    kind: str
    """Backbone: ``"mlp"`` (flattened residual MLP) or ``"conv"`` (residual conv tower)."""
    width: int = 256
    """Hidden units of every MLP body layer (the paper: 256)."""
    blocks: int = 2
    """Residual blocks of the body (MLP or conv)."""
    layers_per_block: int = 2
    """(Linear -> LayerNorm -> GELU) layers per MLP residual block."""
    channels: int = 64
    """Channels of every conv layer of the tower."""
    head_width: int = 256
    """Hidden units of the value and policy heads (the paper: 256)."""
    policy_head: bool = False
    """Add a policy head with one logit per action (AlphaZero); AVI needs none."""
    symmetrize: bool = False
    """Average over the game's symmetries at every call (C.1), making the value invariant."""

    def __post_init__(self):
        if self.kind not in ("mlp", "conv"):
            raise ValueError(f"NetworkConfig.kind must be 'mlp' or 'conv', got {self.kind!r}")
        for name in ("width", "blocks", "layers_per_block", "channels", "head_width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"NetworkConfig.{name} must be a positive integer, got {value!r}")


class NetOutput(NamedTuple):
    value: Tensor  # float32[N], for the player to move
    logits: Tensor | None  # float32[N, A], or None without a policy head


def _mlp_head(width: int, hidden: int, out: int) -> nn.Sequential:
    # Two layers, no activation on the output: the value is a plain regression target
    # and the policy logits go through a softmax in the loss.
    return nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, out))


class _MLPBlock(nn.Module):
    def __init__(self, width: int, layers: int):
        super().__init__()
        self.body = nn.Sequential(*(
            nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()) for _ in range(layers)))

    def forward(self, x: Tensor) -> Tensor:  # [N, width] -> [N, width]
        return x + self.body(x)


class ResidualMLP(nn.Module):
    """The residual MLP of C.1 and C.3 over the flattened encoding."""

    def __init__(self, obs_shape: Sequence[int], num_actions: int, *, width: int = 256, blocks: int = 2,
                 layers_per_block: int = 2, head_width: int = 256, policy_head: bool = False):
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.stem = nn.Linear(math.prod(self.obs_shape), width)
        self.blocks = nn.Sequential(*(_MLPBlock(width, layers_per_block) for _ in range(blocks)))
        self.value_head = _mlp_head(width, head_width, 1)
        self.policy_head = _mlp_head(width, head_width, num_actions) if policy_head else None

    def forward(self, obs: Tensor) -> NetOutput:  # obs [N, *obs_shape]
        h = self.blocks(self.stem(obs.flatten(1)))  # [N, width]
        logits = self.policy_head(h) if self.policy_head is not None else None  # [N, A]
        return NetOutput(self.value_head(h).squeeze(1), logits)


class _ConvBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: Tensor) -> Tensor:  # [N, C, H, W] -> [N, C, H, W]
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class ConvResTower(nn.Module):
    """MiniZero's board-game network (C.2): conv stem, residual tower, value head
    (1x1 conv, FC ``head_width``, scalar) and optional policy head (1x1 conv, FC to A).

    The value is left without MiniZero's tanh: AVI regresses it with an MSE like the
    MLP's value head, which has no output activation either.
    """

    def __init__(self, obs_shape: Sequence[int], num_actions: int, *, channels: int = 64, blocks: int = 3,
                 head_width: int = 256, policy_head: bool = False):
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"ConvResTower needs encodings [C, H, W], got obs_shape {tuple(obs_shape)}")
        self.obs_shape = tuple(obs_shape)
        planes, height, width = self.obs_shape
        cells = height * width
        self.stem = nn.Sequential(nn.Conv2d(planes, channels, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(channels), nn.ReLU())
        self.blocks = nn.Sequential(*(_ConvBlock(channels) for _ in range(blocks)))
        self.value_head = nn.Sequential(
            nn.Conv2d(channels, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU(), nn.Flatten(),
            nn.Linear(cells, head_width), nn.ReLU(), nn.Linear(head_width, 1))
        # Two planes for the policy, as AlphaZero's policy head.
        self.policy_head = nn.Sequential(
            nn.Conv2d(channels, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
            nn.Linear(2 * cells, num_actions)) if policy_head else None

    def forward(self, obs: Tensor) -> NetOutput:  # obs [N, C, H, W]
        h = self.blocks(self.stem(obs))  # [N, channels, H, W]
        logits = self.policy_head(h) if self.policy_head is not None else None  # [N, A]
        return NetOutput(self.value_head(h).squeeze(1), logits)


# ------------------------------------------------------------------- symmetries


class TorchSymmetry(NamedTuple):
    """The torch twin of a :class:`games.Symmetry`: ``obs`` maps ``[N, *obs_shape]``
    tensors, ``action[a]`` is the image of action ``a`` (int64[A])."""

    name: str
    obs: Callable[[Tensor], Tensor]
    action: Tensor  # int64[A]


def _torch_transform(name: str) -> Callable[[Tensor], Tensor] | None:
    """The tensor function a game's symmetry name stands for, or None if unknown.
    Names are those of ``games.base`` (``square_board_symmetries``) and the engines."""
    if name == "identity":
        return lambda x: x
    if name == "mirror":  # Connect Four: columns reversed
        return lambda x: x.flip(-1)
    if name == "transpose":  # square Chomp
        return lambda x: x.transpose(-1, -2)
    match = re.fullmatch(r"rot(0|90|180|270)(_flip)?", name)
    if match:
        # As square_board_symmetries: flip the last axis first, then rotate
        # (torch.rot90 turns the same way as np.rot90); Hex's rot180 is the same map.
        k, flip = int(match.group(1)) // 90, bool(match.group(2))
        return lambda x: torch.rot90(x.flip(-1) if flip else x, k, dims=(-2, -1))
    return None


def torch_symmetries(game: Game) -> list[TorchSymmetry]:
    """Torch versions of ``game.symmetries()``, in the same order (identity first).

    Each one is checked against the game's numpy map on a random encoding, so a game
    whose symmetry is named like a known one but acts differently fails here, early.
    """
    out = []
    probe = np.random.default_rng(0).integers(0, 2, size=(2, *game.obs_shape)).astype(np.float32)
    for sym in game.symmetries():
        fn = _torch_transform(sym.name)
        if fn is None:
            raise ValueError(f"{game.name}: no torch version of symmetry {sym.name!r}; "
                             f"add it to inference.networks._torch_transform")
        if not np.array_equal(fn(torch.from_numpy(probe)).numpy(), sym.obs(probe)):
            raise ValueError(f"{game.name}: the torch version of symmetry {sym.name!r} "
                             f"disagrees with the game's numpy map")
        out.append(TorchSymmetry(sym.name, fn, torch.as_tensor(sym.action, dtype=torch.int64)))
    return out


class Symmetrized(nn.Module):
    """``net`` averaged over a symmetry group (AVI paper C.1).

    The value is the mean of ``net``'s values on every transformed input; the logits
    are the mean of each transformed input's logits mapped back to the original
    actions (``logits_t[:, action]``, since ``action[a]`` is the image of ``a``).
    Averaging logits rather than probabilities keeps the output a logit vector; both
    make the policy equivariant. Each image is a separate call over the same ``[N, ...]``
    shape, so that every sample sits at the same batch row in every call and the value
    of a two-element group is bitwise invariant (``a + b == b + a``).
    """

    def __init__(self, net: nn.Module, transforms: Sequence[Callable[[Tensor], Tensor]],
                 action_perms: Sequence[Tensor]):
        super().__init__()
        if len(transforms) != len(action_perms) or not transforms:
            raise ValueError(f"Symmetrized needs one action permutation per transform, got "
                             f"{len(transforms)} transforms and {len(action_perms)} permutations")
        self.net = net
        self.transforms = list(transforms)
        # Buffers, so that .to(device) moves them; not persistent: they come from the game.
        for i, perm in enumerate(action_perms):
            self.register_buffer(f"_perm{i}", torch.as_tensor(perm, dtype=torch.int64), persistent=False)

    @property
    def num_images(self) -> int:
        return len(self.transforms)

    def forward(self, obs: Tensor) -> NetOutput:  # obs [N, *obs_shape]
        values, logits = [], []
        for i, transform in enumerate(self.transforms):
            out = self.net(transform(obs))
            values.append(out.value)  # [N]
            if out.logits is not None:
                logits.append(out.logits[:, getattr(self, f"_perm{i}")])  # [N, A], original actions
        value = torch.stack(values).mean(0)
        return NetOutput(value, torch.stack(logits).mean(0) if logits else None)


# --------------------------------------------------------------------- building

def preset_network(game_name: str) -> NetworkConfig:
    """The network of a game's presets: its descriptor's ``network`` (games/<game>.py).
    Connect Four and Hex: C.1; F-Games: C.3; Othello and Go: C.2 (MiniZero's backbone,
    3 blocks). MiniZero uses 256 channels (its nn_num_hidden_channels default); 64 keeps
    CPU self-play practical here. Tic-Tac-Toe and Chomp are not in the paper: small MLPs."""
    network = games.descriptor(game_name).network
    if not network:
        raise ValueError(f"game {game_name!r} has no preset network (its descriptor's network is empty)")
    return NetworkConfig(**network)


PRESET_NETWORKS: dict[str, NetworkConfig] = {name: preset_network(name) for name in games.BUILTIN}


def build_network(game: Game, config: NetworkConfig) -> nn.Module:
    """The network ``config`` describes for ``game``'s encodings and actions."""
    if config.kind == "mlp":
        net = ResidualMLP(game.obs_shape, game.num_actions, width=config.width, blocks=config.blocks,
                          layers_per_block=config.layers_per_block, head_width=config.head_width,
                          policy_head=config.policy_head)
    else:
        if len(game.obs_shape) != 3:
            raise ValueError(f"{game.name}: a conv network needs encodings [C, H, W], "
                             f"the game's obs_shape is {game.obs_shape}")
        net = ConvResTower(game.obs_shape, game.num_actions, channels=config.channels, blocks=config.blocks,
                           head_width=config.head_width, policy_head=config.policy_head)
    if config.symmetrize:
        syms = torch_symmetries(game)
        if len(syms) < 2:
            raise ValueError(f"{game!r} has no symmetry besides the identity; "
                             f"symmetrize=True would only double the cost")
        net = Symmetrized(net, [s.obs for s in syms], [s.action for s in syms])
    return net


def count_parameters(net: nn.Module) -> int:
    """Trainable parameters (BatchNorm running statistics are buffers, not counted)."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def forward_cost(config_or_net: NetworkConfig | nn.Module, game: Game | None = None) -> int:
    """Network evaluations per input sample: the number of symmetric images a
    symmetrized network evaluates (2 for Connect Four and Hex), else 1.

    From a config alone the group is not known: give ``game`` to count its symmetries,
    else a symmetrized config counts 2, the size of the preset games' groups."""
    if isinstance(config_or_net, NetworkConfig):
        if not config_or_net.symmetrize:
            return 1
        return len(game.symmetries()) if game is not None else 2
    if isinstance(config_or_net, Symmetrized):
        return config_or_net.num_images
    if isinstance(config_or_net, nn.Module):
        return 1
    raise TypeError(f"forward_cost takes a NetworkConfig or an nn.Module, got {type(config_or_net).__name__}")
