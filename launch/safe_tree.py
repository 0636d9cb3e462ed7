"""Nested data with numpy arrays <-> data that ``torch.load(weights_only=True)`` accepts.

Checkpoints hold environment states (numpy arrays of any dtype, uint64 bitboards
included) and generator states (nested dicts of big ints). Arrays become tensors of
their raw bytes plus dtype and shape, so no pickle of arbitrary objects is needed.
"""

from __future__ import annotations

import numpy as np
import torch

_TAG = "__ndarray__"


def to_safe(obj):
    if isinstance(obj, np.ndarray):
        raw = np.ascontiguousarray(obj).reshape(-1).view(np.uint8)
        return {_TAG: torch.from_numpy(raw.copy()), "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {str(k): to_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_safe(v) for v in obj]
    return obj


def from_safe(obj):
    if isinstance(obj, dict):
        if _TAG in obj:
            raw = obj[_TAG].numpy()
            return raw.view(np.dtype(obj["dtype"])).reshape(obj["shape"]).copy()
        return {k: from_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_safe(v) for v in obj]
    return obj
