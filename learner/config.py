"""The learner's configuration: what the learner actor reads, validated here.

A run hands ``LearnerActor`` this record whole (``launch/train.py``). ``--set
learner.KEY=VALUE`` sets one field. No torch here: the driver reads configs without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inference.machine import Bf16Support, threads_value

# Of the learner's forward and backward passes (Learner.precision). tf32: fp32 tensors whose
# CUDA matmuls and convolutions round their inputs to TF32 (10-bit mantissa); the same as
# fp32 on a CPU. bf16: autocast.
PRECISIONS = ("fp32", "tf32", "bf16")
DEVICES = ("auto", "cpu", "cuda")
# An MLP narrower than this trains faster in fp32 even where bf16 is native: its matmuls are
# too small for bf16 to save what autocast's casts cost (tic-tac-toe's width 64: x0.90 of
# fp32's updates/s; width 256, Connect Four, Hex, Chomp: x1.2-2.0; docs/benchmarks.md).
MIN_BF16_WIDTH = 128


def auto_precision(device: str, bf16: Bf16Support, network) -> tuple[str, str]:
    """``precision=auto`` made concrete: (precision, why). bf16 for a CPU learner where
    ``bf16`` (``inference.machine.bf16_support`` of the learner's CPU) is native and the
    ``network`` (a NetworkConfig) is not a narrow MLP: there its learning curves hold
    (tests/learner/test_reduced_precision_avi.py) and it trains faster. Else fp32: emulated
    bf16 is several times slower than fp32, and on CUDA bf16's learning curves are not
    yet measured."""
    if device != "cpu":
        return "fp32", f"auto on {device}: fp32 (bf16 learning curves not measured there)"
    if not bf16.native:
        return "fp32", f"auto on cpu: fp32, {bf16.reason}"
    if network.kind == "mlp" and network.width < MIN_BF16_WIDTH:
        return "fp32", f"auto on cpu: fp32, MLP width {network.width} < {MIN_BF16_WIDTH} (bf16 slower there)"
    return "bf16", f"auto on cpu: bf16, {bf16.reason}"


# The waits' defaults (``wait_for_gpu_s`` and ``restart_wait_s`` auto). On a cloud cluster a
# lost GPU node is replaced by the autoscaler, and a first one joins after `ray up` returns:
# the autoscaler's launch request (under a minute), the VM's boot with its NVIDIA driver
# (2-4 minutes on AWS's and GCP's Deep Learning images), the pull and unpacking of the
# selfplay:cuda image (several GB: torch's CUDA wheels; 5-10 minutes from a registry in the
# node's region), Ray's start, and the restarted learner's read of its checkpoint (under a
# minute). About 15 minutes, 20 with a margin. Estimated from those steps, not measured on
# a cloud. A spot node the cloud has no capacity for, or a GPU quota of 0, outlasts any
# bound: past it the run ends and says which setting to raise.
CLUSTER_NODE_WAIT_S = 1200.0
# On the embedded Ray a learner restarts in its own machine's process: seconds, unless the
# machine is loaded (a restart imports torch and reads the checkpoint).
EMBEDDED_RESTART_WAIT_S = 180.0


def _seconds(value, name: str):
    """A wait's bound: ``auto`` or a number of seconds >= 0 (``--set`` hands over text)."""
    if value == "auto":
        return value
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be auto or a number of seconds >= 0, got {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"{name} must be >= 0 seconds (or auto), got {value!r}")
    return seconds


@dataclass(frozen=True)
class LearnerConfig:
    """Optimisation (AVI paper, Table 3): Adam on minibatches sampled from the replay."""

    lr: float = 3e-4  # Adam learning rate
    batch_size: int = 256  # minibatch rows
    epochs_per_iteration: float = 4.0  # replay ratio: gradient samples per row collected
    augment_symmetries: bool = False  # a random symmetry per sampled row (Othello, Go; paper C.2)
    device: str = "auto"  # auto (cuda where Ray offers a GPU), cpu or cuda
    device_note: str = ""  # why device is what it is, written where the run resolves auto
    # Seconds a run on a Ray cluster it joined (--address) waits for a node with a GPU before
    # it makes device auto concrete (or refuses cuda): `ray up` and KubeRay report a cluster
    # up before its GPU worker has booted and pulled its image. auto: 1200 s on a cluster
    # that declares a `learner` node type no live node is yet ($SELFPLAY_PLACEMENT_RESOURCES
    # lists it, as deploy/'s nodes do; CLUSTER_NODE_WAIT_S, a GPU node's boot and image
    # pull), none on any other (learner nodes live, or none declared); 0: no wait; the
    # embedded Ray never waits (its nodes are fixed); device cpu never does. Past it, auto
    # trains on the CPU and cuda is refused.
    wait_for_gpu_s: float | str = "auto"
    # Seconds the run waits for its learner to answer, at its start and after it died (its
    # process, or its node: Ray restarts it where a node offers what it asks, a replacement
    # GPU node included), before the run ends with an error naming this setting, after its
    # end row, its newest checkpoint pair kept. auto: 180 s on the embedded Ray
    # (EMBEDDED_RESTART_WAIT_S), 1200 s on a cluster (CLUSTER_NODE_WAIT_S).
    restart_wait_s: float | str = "auto"
    # The forward and backward passes: fp32, tf32 (CUDA), bf16 (autocast), or auto: bf16 on a
    # CPU with native bf16 (AVX512_BF16, AMX) unless the MLP is narrow, else fp32
    # (auto_precision); the run makes it concrete and says why in precision_note.
    precision: str = "auto"
    precision_note: str = ""  # why precision is what it is, written where the run resolves auto
    # Torch threads of a CPU learner. auto: every core of its node under the synchronous
    # schedule, where the actors are idle while it trains; 1 under the asynchronous one.
    threads: int | str = "auto"
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
        for name in ("wait_for_gpu_s", "restart_wait_s"):
            object.__setattr__(self, name, _seconds(getattr(self, name), name))
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.precision not in ("auto", *PRECISIONS):
            raise ValueError(f"precision must be one of auto, {', '.join(PRECISIONS)}, got {self.precision!r}")
        object.__setattr__(self, "threads", threads_value(self.threads, "learner"))

    def waits_for(self, *, embedded: bool, gpu_node_to_come: bool = False) -> "LearnerConfig":
        """This config with its waits' ``auto`` made concrete for the embedded Ray (no GPU
        wait, :data:`EMBEDDED_RESTART_WAIT_S`) or for a cluster it joined
        (:data:`CLUSTER_NODE_WAIT_S` to restart; the same for a GPU node only where
        ``gpu_node_to_come``: the cluster declares a learner node type no live node is yet)."""
        gpu = CLUSTER_NODE_WAIT_S if gpu_node_to_come and not embedded else 0.0
        restart = EMBEDDED_RESTART_WAIT_S if embedded else CLUSTER_NODE_WAIT_S
        return replace(self, wait_for_gpu_s=gpu if self.wait_for_gpu_s == "auto" else self.wait_for_gpu_s,
                       restart_wait_s=restart if self.restart_wait_s == "auto" else self.restart_wait_s)
