"""Arrays across the process boundary: weights as dicts of CPU numpy arrays (what the Ray
object store shares between the processes of a node without copies, ``learner.weights``),
numpy batches as tensors, and the check of a batch of encodings. The learner and every
network that plays use these alike."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import nn


def read_only_tensor(array: np.ndarray) -> torch.Tensor:
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
    net.load_state_dict({k: read_only_tensor(v) for k, v in weights.items()})  # copies into net


def check_obs(obs: np.ndarray, obs_shape: tuple, dtypes: tuple, where: str) -> int:
    """The number of rows of ``obs``, a batch of encodings [N, *obs_shape] of one of ``dtypes``;
    anything else raises, naming ``where``."""
    if not isinstance(obs, np.ndarray):
        raise TypeError(f"{where}: obs must be a numpy array, got {type(obs).__name__}")
    if obs.dtype not in dtypes:
        raise TypeError(f"{where}: obs must be {' or '.join(np.dtype(d).name for d in dtypes)}, got {obs.dtype}")
    if obs.ndim != 1 + len(obs_shape) or obs.shape[1:] != tuple(obs_shape):
        raise ValueError(f"{where}: obs must have shape [N, {', '.join(map(str, obs_shape))}], got {obs.shape}")
    return obs.shape[0]
