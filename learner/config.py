"""The learner's configuration: what the learner actor reads, validated here.

A run hands ``LearnerActor`` this record whole (``launch/train.py``). ``--set
learner.KEY=VALUE`` sets one field. No torch here: the driver reads configs without it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The training algorithms, each named by its loss (learner/learner.py): the one list that
# the command line, the config, the actors and the learner check against.
ALGOS = ("avi", "alphazero", "azal")
# Of the learner's forward and backward passes (Learner.precision). tf32: fp32 tensors whose
# CUDA matmuls and convolutions round their inputs to TF32 (10-bit mantissa); the same as
# fp32 on a CPU. bf16: autocast.
PRECISIONS = ("fp32", "tf32", "bf16")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class LearnerConfig:
    """Optimisation (AVI paper, Table 3): Adam on minibatches sampled from the replay."""

    lr: float = 3e-4  # Adam learning rate
    batch_size: int = 256  # minibatch rows
    epochs_per_iteration: float = 4.0  # replay ratio: gradient samples per row collected
    augment_symmetries: bool = False  # a random symmetry per sampled row (Othello, Go; paper C.2)
    aux_weight: float = 1.0  # AZAL: lambda_aux of the oracle cross-entropy (AZAL paper)
    device: str = "auto"  # auto (cuda where Ray offers a GPU), cpu or cuda
    precision: str = "fp32"  # the forward and backward passes: fp32, tf32 (CUDA) or bf16 (autocast)
    prefetch: int = 4  # sample requests in flight ahead of the learner
    # Batches per sample request (ReplaySampler.next_block): a GPU learner takes thousands of
    # batches a second, which one round trip to the shards each would not feed. 1 keeps
    # the draws of runs and checkpoints made before blocks existed.
    batches_per_request: int = 1

    def __post_init__(self):
        for name in ("batch_size", "prefetch", "batches_per_request"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("lr", "epochs_per_iteration"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.aux_weight < 0:
            raise ValueError(f"aux_weight must be >= 0, got {self.aux_weight}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
