"""The cross-package record of a weight broadcast: a version and a Ray object reference.

The run's driver publishes the learner's weights once per version with :func:`publish`
(into its own object store, so that they outlive the learner's node); actors receive
the small :class:`WeightVersion` record and ``ray.get`` the dict of numpy arrays,
which the object store shares read-only between the processes of a node. Weights are
never broadcast through checkpoint files.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import ray


class WeightVersion(NamedTuple):
    version: int  # the learner's update count when the weights were taken
    ref: ray.ObjectRef  # to a dict[str, np.ndarray], as Learner.get_weights gives


def publish(weights: dict[str, np.ndarray], version: int) -> WeightVersion:
    """Put ``weights`` (name -> numpy array) in the object store as ``version``."""
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 0:
        raise ValueError(f"publish: version must be an integer >= 0, got {version!r}")
    bad = [k for k, v in weights.items() if not isinstance(v, np.ndarray)]
    if bad:
        raise TypeError(f"publish: weights must be numpy arrays (Learner.get_weights), "
                        f"{bad[0]!r} is a {type(weights[bad[0]]).__name__}")
    return WeightVersion(int(version), ray.put(weights))
