"""Training, checkpoints and weight broadcast of the value (or policy-value) network; the
networks themselves, and the copies that play their weights, are ``inference``'s.

``learner.weights`` (the Ray weight-broadcast record) is imported on its own, so that
code without Ray can use the rest.
"""

from learner.checkpoint import (  # noqa: F401  (re-exported: the package's public API)
    CorruptCheckpointError,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune,
    save_checkpoint,
)
from learner.learner import Learner  # noqa: F401
