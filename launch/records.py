"""What a training run counts, and the metric records it logs of the actors' collection
calls and the replay's shards (one JSON line each in ``metrics.jsonl``, and W&B)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from actors.pool import CollectStats
from learner.actor import LearnerCounters
from learner.learner import compute_proxy
from replay.buffer import BufferStats


@dataclass
class RunCounters:
    """The run's totals, logged with every record and kept in checkpoints."""

    iteration: int = 0  # schedule iterations: a collection and a training (sync), or a training chunk (async)
    updates: int = 0  # gradient steps
    rows: int = 0  # replay rows inserted
    positions: int = 0  # environment steps played
    games: int = 0  # games finished
    version: int = 0  # of the newest published weights
    elapsed: float = 0.0  # seconds of training, over resumes
    actor_forward_samples: int = 0  # network evaluations of the actors
    learner_forward_samples: int = 0
    learner_backward_samples: int = 0

    def restore(self, saved: dict) -> None:
        """Take a checkpoint's counters, in place (the run's parts share this object); a
        missing or unknown name is an error naming it."""
        names = {f.name for f in fields(self)}
        if set(saved) != names:
            raise ValueError(f"checkpoint counters: missing {sorted(names - set(saved))}, "
                             f"unknown {sorted(set(saved) - names)}")
        for name, value in saved.items():
            setattr(self, name, value)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def compute(self) -> float:
        """The paper's compute proxy N_forward + 3 N_backward of the whole run, in samples."""
        return float(compute_proxy(self.actor_forward_samples + self.learner_forward_samples,
                                   self.learner_backward_samples))

    def take_learner(self, counters: LearnerCounters) -> None:
        """The learner's counts are the run's (after a train call, or a restart that lost some)."""
        self.updates = counters.updates
        self.learner_forward_samples = counters.samples_forward
        self.learner_backward_samples = counters.samples_backward

    def add_collected(self, stats: list[CollectStats]) -> None:
        self.rows += sum(s.rows for s in stats)
        self.positions += sum(s.positions for s in stats)
        self.actor_forward_samples += sum(s.forward_samples for s in stats)
        self.games += sum(s.games_finished for s in stats)


def collect_record(stats: list[CollectStats]) -> dict:
    """Rates and where the actors' time went, over the collection calls ``stats``."""
    timing = {k: sum(s.timings[k] for s in stats) for k in stats[0].timings}
    total = sum(timing.values()) or 1.0
    # Calls of different actors overlap: positions/s is per actor, summed over actors.
    per_actor: dict[int, list] = {}
    for s in stats:
        got = per_actor.setdefault(s.index, [0, 0.0])
        got[0] += s.positions
        got[1] += s.seconds
    with_rows = [s for s in stats if s.rows] or stats
    record = {"collect_rows": sum(s.rows for s in stats), "collect_positions": sum(s.positions for s in stats),
              "positions_per_s": sum(r / max(t, 1e-9) for r, t in per_actor.values()),
              "target_mean": float(np.mean([s.target_mean for s in with_rows])),
              "target_std": float(np.mean([s.target_std for s in with_rows])),
              **{f"actor_time/{k}": v / total for k, v in timing.items()}}
    lookups = sum(s.cache_lookups for s in stats)
    if lookups:  # the evaluation cache is on: the share of asked inputs it answered
        record["cache_hit_rate"] = 1.0 - sum(s.cache_evaluated for s in stats) / lookups
    if stats[0].labels is not None:  # AZAL: this iteration's labels and oracle queries
        record.update({k: sum(getattr(s.labels, k) for s in stats) for k in stats[0].labels._fields})
        record["labelled_rows"] = sum(s.labelled_rows for s in stats)
    return record


def replay_record(shards: list[BufferStats]) -> dict:
    """The replay size, and per shard its size and rows inserted and sampled so far
    (``shards``: ``ReplayService.stats()``)."""
    record = {"replay_size": sum(s.size for s in shards)}
    for i, s in enumerate(shards):
        record.update({f"replay/shard{i}_size": s.size, f"replay/shard{i}_total_added": s.total_added,
                       f"replay/shard{i}_total_sampled": s.total_sampled})
    return record


def inference_record(servers: list[dict]) -> dict:
    """The inference servers' totals since they (last) started (``InferenceWorker.stats()``
    of each): batches run, requests and rows answered, inputs the network ran (the rest
    were repeats answered by their caches), and how many requests a batch gathered."""
    batches, rows = sum(s["batches"] for s in servers), sum(s["rows"] for s in servers)
    return {"inference/batches": batches, "inference/requests": sum(s["requests"] for s in servers),
            "inference/rows": rows, "inference/evaluated": sum(s["evaluated"] for s in servers),
            "inference/mean_rows_per_batch": rows / batches if batches else 0.0,
            "inference/max_requests_per_batch": max(s["max_requests_per_batch"] for s in servers)}
