"""Networks, training, checkpoints and weight broadcast of the value (later
policy-value) network.

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
from learner.learner import Learner, ValueFunction  # noqa: F401
from learner.networks import (  # noqa: F401
    PRESET_NETWORKS,
    ConvResTower,
    NetOutput,
    NetworkConfig,
    ResidualMLP,
    Symmetrized,
    build_network,
    count_parameters,
    forward_cost,
    torch_symmetries,
)
