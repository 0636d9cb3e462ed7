"""The learner on Ray: a thin actor around :class:`Learner` and a replay sampler.

It runs on a GPU when the launcher gives it one, draws prefetched batches from the
replay shards, and answers with metrics averaged over the updates of one call.
Weights leave it as the return value of ``get_weights`` (an object reference owned
by the caller, which hands it to the actors: no files in between).

When its process or node dies, Ray restarts it (``max_restarts=-1``), on whichever node
has room, and it reloads the newest good checkpoint of ``checkpoint_dir`` (a path every
node sees, or an object store's URI: ``storage``) by itself (learner, optimizer, update
counters, sampler generator), whatever the driver is doing meanwhile. A storage it
cannot reach ends it with a :class:`storage.StorageError` naming the storage: it never
goes on from fresh weights in place of a checkpoint it could not read. The
call in flight fails (``max_task_retries=0``: the driver decides what to redo) and
``status()`` tells the driver where the learner came back from, and its
``incarnation``, new at each start: the driver asks after every call, so it notices
a restart that no call saw failing too. ``train`` answers with the incarnation that
trained, so the driver knows whether those updates survived.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import NamedTuple

import numpy as np
import ray
import torch

import storage
from learner.checkpoint import LearnerState, latest_checkpoint, load_run_checkpoint
from learner.config import LearnerConfig, auto_precision
from inference.game_network import GameNetwork
from learner.learner import Learner
from inference.machine import THREADED_RUNTIME_ENV, Bf16Support, this_cpu, threads_here
from lifecycle import TASK_EVENTS, was_restarted, watched
from replay.service import ReplaySampler

log = logging.getLogger(__name__)


class LearnerCounters(NamedTuple):
    """The learner's update and sample counts (the compute proxy's learner terms)."""

    updates: int
    samples_forward: int
    samples_backward: int


class TrainReply(NamedTuple):
    """The answer of one ``train`` call."""

    counters: LearnerCounters  # after the call
    incarnation: str  # of the learner that trained: the updates survive only if it still runs
    losses: dict[str, float]  # Learner.train_step's metrics, averaged over the call's updates
    sample_age: float  # mean weight versions between a sampled row's and the newest published
    wait_fraction: float  # of the call's time spent waiting for replay batches
    device: str  # where the learner trains
    precision: str  # of its forward and backward passes, as chosen on its node
    threads: int  # torch threads it trained with

    def metrics(self) -> dict:
        """The reply as the run logs it."""
        return {**self.losses, "sample_age": self.sample_age, "learner_wait_fraction": self.wait_fraction,
                "learner_device": self.device, "learner_precision": self.precision, "learner_threads": self.threads}


class LearnerStatus(NamedTuple):
    """How the learner now running started."""

    incarnation: str  # new at each start
    restarted: bool  # by Ray, after a crash
    restored_from: str | None  # the checkpoint it reloaded, or None
    started: LearnerCounters  # the counters it started with (those of that checkpoint)
    updates: int  # now


class LearnerWorker:
    def __init__(self, *, game_network: GameNetwork, config: LearnerConfig, algo, replay,
                 seed: int, checkpoint_dir: str | None = None):
        """``game_network``: the game and the network it trains (the run's,
        ``TrainConfig.game_network``); ``config``: the run's learner settings, whole (its
        ``device`` resolved by the run; ``auto`` here is cuda where torch sees one); ``algo``:
        the ``AlgorithmDescriptor`` whose loss it trains (the run hands it over: the learner
        looks no algorithm up by name);
        ``checkpoint_dir``: where the run writes its checkpoints (``RunCheckpoint.learner``
        holds :meth:`state_dict`); a restarted learner reloads the newest good one."""
        device = config.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.precision, self.precision_note = _precision_here(config, device, game_network.network)
        self.threads = None  # torch's own (CUDA: the host side of the updates)
        if device == "cpu":
            self.threads = threads_here(config.threads)
            torch.set_num_threads(self.threads)
        log.info("learner on %s, precision %s (%s), %s torch threads", device, self.precision,
                 self.precision_note, self.threads or torch.get_num_threads())
        self.game = game_network.make_game()
        self.learner = Learner(self.game, game_network.network, lr=config.lr, device=device, seed=seed,
                               augment=config.augment_symmetries, loss=algo, precision=self.precision)
        # batches_per_request: batches the sampler draws per request to the shards
        # (ReplaySampler.next_block), moved to the device together.
        self.sampler = ReplaySampler(replay, config.batch_size, prefetch=config.prefetch, seed=seed,
                                     batches_per_request=config.batches_per_request)
        self.incarnation = uuid.uuid4().hex
        self.restarted = was_restarted()
        self.restored_from = None
        if self.restarted and checkpoint_dir is not None:
            try:  # skips corrupt ones, with a warning
                path = latest_checkpoint(checkpoint_dir)
            except storage.StorageError as e:  # never fresh weights in place of an unread checkpoint
                raise storage.StorageError(f"the restarted learner cannot read its checkpoints: {e}") from e
            if path is not None:
                self.load_state_dict(load_run_checkpoint(path).learner)
                self.restored_from = str(path)
            log.warning("learner restarted with %d updates from %s", self.learner.updates,
                        self.restored_from or f"nothing (no checkpoint in {checkpoint_dir}): fresh weights")
        self.started = self._counters()

    def _counters(self) -> LearnerCounters:
        return LearnerCounters(self.learner.updates, self.learner.samples_forward, self.learner.samples_backward)

    def train(self, updates: int, version: int, deadline: float | None = None) -> TrainReply:
        """``updates`` gradient steps, fewer when the run's time budget ends at ``deadline``
        (a ``time.time()``); ``version`` is that of the newest published weights, to
        measure the age of sampled rows (versions between a row's weights and them).

        The metrics stay on the device, summed, and are read once at the end: the updates
        of a call never wait for the device (on a GPU the host queues them ahead)."""
        learner, size = self.learner, self.sampler.batch_size
        sums = None  # of the metrics vectors, on the device
        age = 0.0
        wait_before = self.sampler.wait_seconds
        start = time.perf_counter()
        self.sampler.expect(updates)
        done = 0
        while done < updates and (done == 0 or deadline is None or time.time() < deadline):
            block, batches = self.sampler.next_block()
            rows = learner.to_device(block)  # the block's batches in one transfer
            versions = block["version"]
            for i in range(batches):
                if done and deadline is not None and time.time() >= deadline:
                    break
                stats = learner.step(rows.rows(i * size, (i + 1) * size))
                sums = stats if sums is None else sums + stats
                age += float(version - versions[i * size:(i + 1) * size].mean())
                done += 1
        means = (sums / done).tolist()  # the call's one wait for the device
        seconds = time.perf_counter() - start
        return TrainReply(counters=self._counters(), incarnation=self.incarnation,
                          losses=dict(zip(learner.metric_names, means)), sample_age=age / done,
                          wait_fraction=(self.sampler.wait_seconds - wait_before) / max(seconds, 1e-9),
                          device=str(learner.device), precision=self.precision, threads=torch.get_num_threads())

    def status(self) -> LearnerStatus:
        return LearnerStatus(incarnation=self.incarnation, restarted=self.restarted,
                             restored_from=self.restored_from, started=self.started, updates=self.learner.updates)

    def get_weights(self) -> dict[str, np.ndarray]:
        return self.learner.get_weights()

    def state_dict(self) -> LearnerState:
        return LearnerState(learner=self.learner.state_dict(), sampler_rng=self.sampler.rng_state())

    def load_state_dict(self, state: LearnerState) -> None:
        self.learner.load_state_dict(state.learner)
        self.sampler.set_rng_state(state.sampler_rng)


def _precision_here(config: LearnerConfig, device: str, network, here: Bf16Support | None = None) -> tuple[str, str]:
    """The precision this learner trains in, and why: the run's resolved one, checked
    against this node's CPU. The run resolves ``auto`` on the driver's machine, which on
    a cluster may not be the learner's: a bf16 that auto chose there is fp32 here if this
    CPU would emulate it. ``auto`` itself (a learner built without a run) is resolved here.
    ``here``: this node's bf16 support (default: read from its CPU)."""
    here = here or this_cpu()
    if config.precision == "auto":
        return auto_precision(device, here, network)
    if config.precision == "bf16" and device == "cpu" and config.precision_note.startswith("auto") and not here.native:
        log.warning("learner: auto chose bf16 on the driver's CPU, but this node's has %s: training in fp32",
                    here.reason)
        return "fp32", f"{config.precision_note}; fp32 on the learner's node, {here.reason}"
    return config.precision, config.precision_note or "set in the config"


# A restarted learner reloads the newest checkpoint of ``checkpoint_dir`` (see the module doc).
LearnerActor = ray.remote(max_restarts=-1, max_task_retries=0, enable_task_events=TASK_EVENTS,
                          runtime_env=THREADED_RUNTIME_ENV)(watched(LearnerWorker))
