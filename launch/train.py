"""The training run: Ray start-up, the actor pool, replay, learner, schedule, checkpoints.

Synchronous schedule (the paper's Algorithm 1, the default): each iteration the
actors collect N_envs x K rows with frozen weights, then the learner takes
``updates_per_iteration`` gradient steps (epochs per iteration = replay ratio) and
publishes new weights. Asynchronous schedule: actors collect continuously, taking the
newest weights at each call, while a rate limiter lets the learner run only as far as
``samples_per_insert`` allows.

A checkpoint (learner, optimizer, counters, environments and random states of every
actor) is written every ``checkpoint_every`` iterations, right after the replay
snapshot, so ``--resume`` continues the run where the checkpoint left it.

Faults (a process or a whole node dying) do not end a run:

- a self-play actor restarts on a node with a free CPU and its interrupted call is
  retried by Ray (``actors/pool.py``);
- a replay shard restarts from its last Parquet snapshot; rows on their way to it are
  sent again once it is back (``ReplayService.put``), the learner's sampler redraws its
  batch, and the run counts the rows stored since the snapshot, now lost;
- the learner restarts from the newest good checkpoint by itself
  (``learner/actor.py``); the driver waits for it, takes its update counter (the
  checkpoint's) and redoes the interrupted call. Weights are published from the
  driver's object store, so they do not die with the learner's node.

Each iteration logs what happened in the ``faults/...`` metrics (this iteration and
``_total``, the run's total: checkpoints keep it across ``--resume``): restarts of
actors, shards and the learner, failed replay sends, replay rows and learner updates
lost, and seconds lost waiting for restarts; each restart also prints one line.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import ray
from ray.exceptions import GetTimeoutError, RayActorError

import games
from actors.pool import SelfPlayActor
from evaluation.exact import exact_labels, value_metrics
from launch.config import ConfigError, TrainConfig, validate
from launch.evaluator import evaluator_needs_oracle
from launch.metrics import MetricsLogger, Progress
from launch.placement import offered_resources, role_options, run_options
from launch.safe_tree import from_safe, to_safe
from learner.actor import LearnerActor
from learner.checkpoint import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune,
    save_checkpoint,
)
from learner.learner import ValueFunction
from learner.weights import WeightVersion
from replay.rows import Column, alphazero_schema, avi_schema
from replay.service import ReplayService

COUNTERS = ("iteration", "updates", "rows", "positions", "games", "version", "elapsed", "actor_forward_samples",
            "learner_forward_samples", "learner_backward_samples")
# Logged per iteration as faults/<name> and faults/<name>_total (see the module doc).
FAULTS = ("actor_restarts", "replay_restarts", "learner_restarts", "replay_add_failures", "replay_rows_lost",
          "learner_updates_lost", "seconds_lost")
RESTART_TIMEOUT = 180.0  # seconds to wait for a restarted learner or replay shard to answer


def prepare_run_dir(config: TrainConfig, run_dir: Path | None, resume: Path | None) -> tuple[TrainConfig, Path]:
    """The run directory and the config to run: a new directory gets ``config.json``;
    a resumed one must hold a run of the same algorithm and game."""
    if resume is not None:
        run_dir = Path(resume)
        saved_path = run_dir / "config.json"
        if not saved_path.exists():
            raise ConfigError(f"--resume {run_dir}: no config.json there, not a run directory")
        saved = TrainConfig.from_dict(json.loads(saved_path.read_text()))
        if (saved.algo, saved.game, saved.game_params) != (config.algo, config.game, config.game_params):
            raise ConfigError(
                f"--resume {run_dir}: that run trains {saved.algo} on {saved.game} {saved.game_params or ''}, "
                f"not {config.algo} on {config.game} {config.game_params or ''}")
        return saved, run_dir
    if run_dir is None:
        run_dir = Path("runs") / f"{config.algo}-{config.game}-{time.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    run_dir = Path(run_dir)
    if (run_dir / "config.json").exists():
        raise ConfigError(f"--run-dir {run_dir} already holds a run; use --resume {run_dir} to continue it")
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run_dir / "replay").mkdir(exist_ok=True)
    (run_dir / "plots").mkdir(exist_ok=True)
    (run_dir / "config.json").write_text(config.to_json())
    return config, run_dir


def start_ray(address: str | None) -> None:
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address)
    else:
        ray.init(include_dashboard=False, log_to_driver=True)


class Run:
    """One training run, started on Ray; ``run()`` trains until the budget is spent."""

    def __init__(self, config: TrainConfig, run_dir: Path, *, wandb_mode: str | None = None, resume: bool = False,
                 fixed_cluster: bool = True):
        validate(config)
        self.config, self.run_dir = config, Path(run_dir)
        self.game = games.make(config.game, **config.game_params)
        self.counters = {k: 0 for k in COUNTERS}
        gpus = ray.cluster_resources().get("GPU", 0)
        if config.device == "cuda" and gpus < 1:
            raise ConfigError("device=cuda but the Ray cluster offers no GPU")
        use_gpu = config.device in ("auto", "cuda") and gpus >= 1
        cpus = ray.cluster_resources().get("CPU", 0)
        needed = config.num_actors + (0 if use_gpu else 1)
        if fixed_cluster and needed > cpus:
            # Ray would wait forever for the missing CPU: refuse now, naming the numbers.
            # (An autoscaling cluster, reached with --address, adds nodes instead.)
            raise ConfigError(f"num_actors={config.num_actors} self-play actors and a "
                              f"{'GPU' if use_gpu else 'CPU'} learner need {needed} CPUs; "
                              f"the Ray cluster has {cpus:g}")
        self.logger = MetricsLogger(self.run_dir, asdict(config), wandb_mode=wandb_mode)
        # Actor names carry the run's name: runs sharing a cluster do not collide, and
        # operators (and the fault-tolerance tests) can find an actor by name.
        name = self.run_dir.resolve().name
        # Where each role runs: plain CPU/GPU requests on the embedded Ray; on a cluster,
        # confined to the nodes declaring its resource (launch/placement.py, deploy/).
        offered = () if fixed_cluster else offered_resources()
        self.placement = run_options(embedded=fixed_cluster, offered=offered, device="cuda" if use_gpu else "cpu")
        # An oracle replica on the embedded Ray takes no CPU of its own: the actor that
        # waits for its labels leaves its CPU to it.
        self.placement["oracle"] = role_options("oracle", embedded=fixed_cluster, offered=offered,
                                                cpus=0 if fixed_cluster else 1)
        # The oracle service: AZAL's labels, and the Connect Four oracle of the evaluator's
        # play and trace suites (one service, one store: each position solved once).
        # Then the evaluator: a missing dataset or unknown suite stops the run before
        # any self-play or training starts.
        self.oracle = (self._start_oracle() if config.algo == "azal" or evaluator_needs_oracle(config.game, config.eval_suites)
                       else None)
        self.evaluator = self._start_evaluator(name)
        self.replay = ReplayService.create(self.schema(), config.replay_capacity,
                                           config.replay_shards, seed=config.seed,
                                           snapshot_dir=str(self.run_dir / "replay"), name=f"{name}-replay",
                                           actor_options=self.placement["replay"])
        self.learner = LearnerActor.options(name=f"{name}-learner", **self.placement["learner"]).remote(
            game=config.game, game_params=config.game_params, network=config.network, lr=config.lr,
            batch_size=config.batch_size, replay=self.replay, prefetch=config.prefetch, seed=config.seed,
            device="cuda" if use_gpu else "cpu", augment=config.augment_symmetries, loss=config.algo,
            aux_weight=config.aux_weight, checkpoint_dir=str(self.run_dir / "checkpoints"))
        self.faults = {k: 0 for k in FAULTS}  # the run's totals (kept in checkpoints across --resume)
        self._faults_logged = dict(self.faults)
        # Per shard: its incarnation, and the highest total_added seen per incarnation
        # (from the actors' replies), to count the rows a restart lost.
        self._shard_incarnation = [r["incarnation"] for r in self.replay.recoveries()]
        self._shard_seen: list[dict[str, int]] = [{} for _ in range(self.replay.num_shards)]
        per_actor = config.num_envs // config.num_actors
        self.actors = [
            SelfPlayActor.options(name=f"{name}-selfplay-{i}", **self.placement["actor"]).remote(
                game=config.game, game_params=config.game_params, network=config.network, num_envs=per_actor,
                seed=config.seed, index=i, replay=self.replay, threads=config.actor_threads, algo=config.algo,
                epsilon=config.epsilon, gamma=config.gamma, mcts=config.mcts, oracle=self.oracle,
                label_min_ply=config.label_min_ply, oracle_store=config.oracle_store or None)
            for i in range(config.num_actors)]
        self._learner_incarnation = ray.get(self.learner.status.remote())["incarnation"]
        self.labels = exact_labels(self.game, config.gamma)
        self.eval_fn = ValueFunction(self.game, config.network) if self.labels is not None else None
        if resume:
            self._restore()
        self.weights = WeightVersion(self.counters["version"], ray.put(self._learner_call("get_weights")))

    def schema(self) -> dict:
        """The replay rows of this algorithm (``replay/rows.py``); AZAL adds the oracle's
        smoothed target, all zeros on unlabelled rows."""
        if self.config.algo == "avi":
            return avi_schema(self.game.obs_shape)
        schema = alphazero_schema(self.game.obs_shape, self.game.num_actions)
        if self.config.algo == "azal":
            schema["aux_policy"] = Column((self.game.num_actions,), "float32")
        return schema

    def _start_evaluator(self, name: str):
        """The evaluator actor on the game's datasets (launch/evaluator.py), or None."""
        from launch.evaluator import EvaluatorActor, chosen_suites

        cfg = self.config
        suites = chosen_suites(cfg.game, cfg.eval_suites)
        if suites is False:
            return None
        evaluator = EvaluatorActor.options(name=f"{name}-evaluator").remote(
            game=cfg.game, game_params=cfg.game_params, network=cfg.network, suites=suites, policy=cfg.eval_policy,
            gamma=cfg.gamma, simulations=cfg.eval_simulations, max_openings=cfg.eval_max_openings or None,
            oracle_store=cfg.oracle_store or None, oracle=self.oracle)
        try:
            ray.get(evaluator.suites.remote())  # a missing dataset or unknown suite stops the run now
        except ray.exceptions.RayActorError:
            ray.kill(evaluator)
            raise
        return evaluator

    @property
    def evaluates(self) -> bool:
        return self.labels is not None or self.evaluator is not None

    def _start_oracle(self):
        from oracle_service.service import OracleClient

        return OracleClient(self.config.oracle_replicas, self.config.oracle_store or None,
                            replica_options=self.placement["oracle"])

    # ------------------------------------------------------------ checkpoints

    def _restore(self) -> None:
        path = latest_checkpoint(self.run_dir / "checkpoints")
        if path is None:
            raise ConfigError(f"--resume {self.run_dir}: no readable checkpoint in {self.run_dir / 'checkpoints'}")
        payload = load_checkpoint(path)
        self.counters.update(payload["counters"])
        self.faults.update(payload.get("faults", {}))  # older checkpoints have none
        self._faults_logged = dict(self.faults)
        ray.get(self.learner.load_state_dict.remote(payload["learner"]))
        actor_states = from_safe(payload["actors"])
        ray.get([a.set_state.remote(s) for a, s in zip(self.actors, actor_states)])
        # The shards already reloaded their snapshots when they started; restoring again
        # makes a missing or foreign snapshot an error here rather than an empty buffer.
        self.replay.restore(str(self.run_dir / "replay"))
        restored = self.replay.size()
        print(f"resumed {self.run_dir} from {path.name}: iteration {self.counters['iteration']}, "
              f"{self.counters['updates']} updates, {restored} replay rows")

    def checkpoint(self) -> Path:
        self._replay_call(lambda: self.replay.snapshot(str(self.run_dir / "replay")))
        learner = self._learner_call("state_dict")
        payload = {
            "counters": dict(self.counters),  # after _learner_call: those of the learner's state
            "learner": learner,
            "actors": to_safe(ray.get([a.get_state.remote() for a in self.actors])),
            "config": self.config.to_json(),
            "faults": dict(self.faults),
        }
        path = save_checkpoint(checkpoint_path(self.run_dir / "checkpoints", self.counters["updates"]), payload)
        prune(self.run_dir / "checkpoints", keep=self.config.keep_checkpoints)
        return path

    # ------------------------------------------------------------- the loop

    def run(self, *, updates: int | None = None, minutes: float | None = None, stop=None) -> dict:
        """Train until ``updates`` or ``minutes`` are spent, or ``stop(record)`` is True."""
        if updates is None and minutes is None:
            raise ConfigError("give a budget: --updates N or --minutes M")
        progress = Progress(updates if updates is not None else minutes * 60,
                            "updates" if updates is not None else "s")
        start = time.time()
        start_elapsed = self.counters["elapsed"]
        last = {}
        schedule = self._iterate_sync if self.config.schedule == "sync" else self._iterate_async

        def budget_left() -> int | None:
            if updates is not None:
                return updates - self.counters["updates"]
            return None

        if self.evaluates and self.counters["iteration"] == 0:
            # The untrained network's errors: the first point of every learning curve.
            self.logger.log({**self.counters, "compute": 0.0, **self.evaluate()})
        deadline = None if minutes is None else start + minutes * 60
        records = schedule(budget_left, lambda: deadline is not None and time.time() >= deadline, deadline)
        try:
            for record in records:
                self.counters["elapsed"] = start_elapsed + time.time() - start
                record.update(self.counters, compute=self.compute())
                record.update(self._fault_record())
                if self.oracle is not None:  # the oracle service's totals so far
                    record.update(self.oracle.stats_summary())
                if self.evaluates and self.counters["iteration"] % self.config.eval_every == 0:
                    record.update(self.evaluate())
                self.logger.log(record)
                last = record
                done_units = self.counters["updates"] if updates is not None else time.time() - start
                progress.update(done_units, _summary(record))
                if self.counters["iteration"] % self.config.checkpoint_every == 0:
                    self.checkpoint()
                if stop is not None and stop(record):
                    break
        finally:
            records.close()  # an async schedule waits for its calls in flight
            progress.close()
        if self.evaluates and last and not any(k.startswith("eval/") for k in last):
            last.update(self.evaluate())  # the final weights are always evaluated
            self.logger.log({**self.counters, "compute": self.compute(),
                             **{k: v for k, v in last.items() if k.startswith("eval/")}})
        if self.counters["iteration"] % self.config.checkpoint_every != 0:
            self.checkpoint()
        return last

    def compute(self) -> float:
        """The paper's forward-equivalent proxy N_forward + 3 N_backward, in samples."""
        c = self.counters
        return float(c["actor_forward_samples"] + c["learner_forward_samples"] + 3 * c["learner_backward_samples"])

    def evaluate(self) -> dict:
        """Exact metrics of the newest weights: the built-in labels' (``eval/value_mae``
        ...) and the evaluator actor's suites (``eval/<suite>/...``)."""
        out = {}
        if self.evaluator is not None:
            pending = self.evaluator.evaluate.remote([self.weights])  # in its own process, meanwhile
        if self.labels is not None:
            self.eval_fn.set_weights(ray.get(self.weights.ref), self.weights.version)
            out.update({f"eval/{k}": v for k, v in value_metrics(self.game, self.labels, self.eval_fn,
                                                                  self.config.gamma).items()})
        if self.evaluator is not None:
            out.update(ray.get(pending))
        return out

    def _publish(self) -> None:
        # Fetched and put by the driver: the weights then live in its object store, and
        # actors can still read them after the learner's node is gone.
        weights = ray.put(self._learner_call("get_weights"))
        self.counters["version"] += 1
        self.weights = WeightVersion(self.counters["version"], weights)

    # ------------------------------------------------------------ faults

    def _learner_call(self, method: str, *args):
        """``ray.get`` of a learner method. If the learner dies meanwhile, or has restarted
        since the last call, wait for it (it reloads its newest checkpoint itself), take
        its counters and, unless the answer came from the restored learner (``train``
        names its incarnation; other calls are simply made again), call again."""
        while True:
            start = time.time()
            result = self._learner_answer(getattr(self.learner, method).remote(*args), method, start)
            if result is not None:
                return result

    def _learner_answer(self, ref, method: str, start: float | None):
        """The answer of the learner call ``ref`` (``method``, submitted at ``start``), or
        None when it must be made again: it died with the learner, or it came from before a
        restart (a ``train`` answer that names the restored incarnation stands). A restart
        is noticed here, with the seconds since ``start`` lost (none when ``start`` is None:
        nothing waited on it)."""
        try:
            result, status = ray.get([ref, self.learner.status.remote()])
        except RayActorError as error:
            result, status = None, self._await_learner(error)
        restarted = status["incarnation"] != self._learner_incarnation
        if restarted:
            self._learner_restarted(status, 0.0 if start is None else time.time() - start)
        if result is None or (restarted and not (method == "train" and result["incarnation"] == status["incarnation"])):
            return None
        return result

    def _await_learner(self, error: Exception) -> dict:
        deadline = time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                return ray.get(self.learner.status.remote(), timeout=10)
            except (RayActorError, GetTimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the learner did not come back within {RESTART_TIMEOUT:.0f} s "
                                       f"after it failed: {error}") from error
                time.sleep(0.5)

    def _learner_restarted(self, status: dict, seconds: float) -> None:
        """The learner came back as ``status`` says: its counters (a checkpoint's) are the run's now."""
        started = status["started"]
        lost = self.counters["updates"] - started["updates"]
        self.counters.update(updates=started["updates"], learner_forward_samples=started["samples_forward"],
                             learner_backward_samples=started["samples_backward"])
        self._learner_incarnation = status["incarnation"]
        self.faults["learner_restarts"] += 1
        self.faults["learner_updates_lost"] += lost
        self.faults["seconds_lost"] += seconds
        print(f"learner restarted from {status['restored_from'] or 'nothing (no checkpoint yet)'} with "
              f"{started['updates']} updates ({lost} updates lost, {seconds:.1f} s)", flush=True)

    def _replay_call(self, call):
        """``call()`` (a replay service request), asked again while a shard restarts."""
        deadline = time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                return call()
            except RayActorError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _count_call_faults(self, s: dict, wall: float) -> None:
        """Faults seen by one collection call of ``wall`` seconds (submit to result)."""
        if s["restarted"]:
            lost = max(0.0, wall - s["seconds"])
            self.faults["actor_restarts"] += 1
            self.faults["seconds_lost"] += lost
            print(f"self-play actor {s['index']} restarted; its call took {wall:.1f} s ({lost:.1f} s lost)",
                  flush=True)
        self.faults["replay_add_failures"] += s["replay_add_failures"]
        if s["replay_shard"] >= 0:
            seen = self._shard_seen[s["replay_shard"]]
            seen[s["replay_incarnation"]] = max(seen.get(s["replay_incarnation"], 0), s["replay_total_added"])

    def _check_shards(self) -> None:
        """Notice replay shards that restarted, and count the rows each lost: those it had
        taken (as its replies said) beyond the snapshot it came back with."""
        for i, r in enumerate(self._replay_call(self.replay.recoveries)):
            if r["incarnation"] == self._shard_incarnation[i]:
                continue
            seen = self._shard_seen[i]
            lost = max(0, max((v for k, v in seen.items() if k != r["incarnation"]), default=0) - r["total_added"])
            self._shard_incarnation[i] = r["incarnation"]
            self._shard_seen[i] = {k: v for k, v in seen.items() if k == r["incarnation"]}
            self.faults["replay_restarts"] += 1
            self.faults["replay_rows_lost"] += lost
            print(f"replay shard {i} restarted from {r['restored_from'] or 'nothing (no snapshot yet)'} with "
                  f"{r['size']} rows: {lost} rows lost (stored since that snapshot)", flush=True)

    def _fault_record(self) -> dict:
        """``faults/<name>`` since the last record and ``faults/<name>_total``."""
        self._check_shards()
        record = {}
        for k, total in self.faults.items():
            record[f"faults/{k}"] = total - self._faults_logged[k]
            record[f"faults/{k}_total"] = total
        self._faults_logged = dict(self.faults)
        return record

    def _count_collected(self, stats: list[dict]) -> None:
        c = self.counters
        c["rows"] += sum(s["rows"] for s in stats)
        c["positions"] += sum(s["positions"] for s in stats)
        c["actor_forward_samples"] += sum(s["forward_samples"] for s in stats)
        c["games"] += sum(s["games_finished"] for s in stats)

    @staticmethod
    def _collect_record(stats: list[dict]) -> dict:
        """Rates and where the actors' time went, over the collection calls ``stats``."""
        rows = sum(s["rows"] for s in stats)
        positions = sum(s["positions"] for s in stats)
        timing = {k: sum(s["timings"][k] for s in stats) for k in stats[0]["timings"]}
        total = sum(timing.values()) or 1.0
        # Calls of different actors overlap: positions/s is per actor, summed over actors.
        per_actor = {}
        for s in stats:
            got = per_actor.setdefault(s["index"], [0, 0.0])
            got[0] += s["positions"]
            got[1] += s["seconds"]
        with_rows = [s for s in stats if s["rows"]] or stats
        record = {"collect_rows": rows, "collect_positions": positions,
                  "positions_per_s": sum(r / max(t, 1e-9) for r, t in per_actor.values()),
                  "target_mean": float(np.mean([s["target_mean"] for s in with_rows])),
                  "target_std": float(np.mean([s["target_std"] for s in with_rows])),
                  **{f"actor_time/{k}": v / total for k, v in timing.items()}}
        if "oracle_queries" in stats[0]:  # AZAL: this iteration's labels and oracle queries
            record.update({k: sum(s[k] for s in stats) for k in
                           ("oracle_queries", "oracle_unique", "oracle_errors", "labelled_rows", "store_labels")})
        return record

    def _replay_record(self) -> dict:
        """The replay size, and per shard its size and rows inserted and sampled so far."""
        shards = self._replay_call(self.replay.stats)
        record = {"replay_size": sum(s["size"] for s in shards)}
        for i, s in enumerate(shards):
            record.update({f"replay/shard{i}_{k}": s[k] for k in ("size", "total_added", "total_sampled")})
        return record

    def _absorb_train(self, result: dict) -> dict:
        c = self.counters
        c["updates"] = result["updates"]
        c["learner_forward_samples"] = result["samples_forward"]
        c["learner_backward_samples"] = result["samples_backward"]
        return {k: v for k, v in result.items()
                if k not in ("updates", "samples_forward", "samples_backward", "incarnation")}

    def _iterate_sync(self, budget_left, out_of_time, deadline):
        cfg = self.config
        while True:
            left = budget_left()
            if (left is not None and left <= 0) or out_of_time():
                return
            t0 = time.time()
            stats = self._collect_all(cfg.collect_steps, deadline)
            self._count_collected(stats)
            record = self._collect_record(stats)
            t1 = time.time()
            # Epochs per iteration over the positions played (fewer when time ran out);
            # AlphaZero's rows arrive when games end, so the replay may still be short.
            steps = max(1, round(cfg.epochs_per_iteration * record["collect_positions"] / cfg.batch_size))
            steps = steps if left is None else min(left, steps)
            if self.counters["rows"] < cfg.batch_size:
                self.counters["iteration"] += 1
                yield {**record, **self._replay_record(), "collect_seconds": t1 - t0}
                continue
            trained = self._learner_call("train", steps, self.counters["version"], deadline)
            steps = trained["updates"] - self.counters["updates"]
            record.update(self._absorb_train(trained))
            t2 = time.time()
            self._publish()
            self.counters["iteration"] += 1
            # Sync: every row of an iteration comes from the weights published before it.
            record.update(**self._replay_record(), collect_seconds=t1 - t0, train_seconds=t2 - t1,
                          policy_lag=max(self.counters["version"] - 1 - s["version"] for s in stats),
                          updates_per_s=steps / max(t2 - t1, 1e-9))
            yield record

    def _collect_all(self, steps: int, deadline: float | None) -> list[dict]:
        """One collection call of every actor; a call whose actor died is retried by Ray."""
        start = time.time()
        refs = [a.collect.remote([self.weights], steps, deadline) for a in self.actors]
        done_at, waiting = {}, list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            done_at[ready[0]] = time.time()
        stats = ray.get(refs)
        for ref, s in zip(refs, stats):
            self._count_call_faults(s, done_at[ref] - start)
        return stats

    def _iterate_async(self, budget_left, out_of_time, deadline):
        """Actors collect all the time, each call with the newest weights. The learner
        trains in chunks of a quarter iteration when the rate limiter allows it: its
        gradient samples may not run ahead of ``samples_per_insert`` times the rows
        inserted, and it waits while some actor still collects with weights
        ``max_policy_lag`` versions old (so no row is more than that far behind)."""
        cfg = self.config
        steps = max(1, cfg.collect_steps // 4)  # shorter calls: fresher weights per call
        chunk = max(1, cfg.updates_per_iteration // 4)
        pending = {a.collect.remote([self.weights], steps, deadline): (a, self.weights.version, time.time())
                   for a in self.actors}
        training = None
        stats_since, lag_max, limited = [], 0, 0.0
        try:
            while True:
                left = budget_left()
                if (left is not None and left <= 0 and training is None) or out_of_time():
                    return
                allowed = int(cfg.samples_per_insert * self.counters["rows"] / cfg.batch_size) - self.counters["updates"]
                if self.counters["rows"] < cfg.batch_size:
                    allowed = 0  # AlphaZero: no full batch in the replay yet
                oldest = min(version for _, version, _ in pending.values())
                fresh_enough = self.counters["version"] - oldest < cfg.max_policy_lag
                if training is None and allowed >= chunk and fresh_enough and (left is None or left > 0):
                    n = chunk if left is None else min(chunk, left)
                    training = self.learner.train.remote(n, self.counters["version"], deadline)
                waited = time.perf_counter()
                ready, _ = ray.wait(list(pending) + ([training] if training else []), num_returns=1)
                if training is None:
                    limited += time.perf_counter() - waited  # the learner idles: held by the limiter
                ref = ready[0]
                if ref is training:
                    training = None
                    # Actors kept collecting meanwhile: a restart loses no seconds here.
                    trained = self._learner_answer(ref, "train", None)
                    if trained is None:
                        continue  # the chunk died with its learner: the limiter issues it again
                    t_record = self._absorb_train(trained)
                    self._publish()
                    self.counters["iteration"] += 1
                    record = self._collect_record(stats_since) if stats_since else {}
                    record.update(**t_record, **self._replay_record(), policy_lag=lag_max,
                                  rate_limited_seconds=limited)
                    stats_since, lag_max, limited = [], 0, 0.0
                    yield record
                    continue
                actor, _, submitted = pending.pop(ref)
                s = ray.get(ref)
                self._count_call_faults(s, time.time() - submitted)
                self._count_collected([s])
                stats_since.append(s)
                lag_max = max(lag_max, self.counters["version"] - s["version"])
                pending[actor.collect.remote([self.weights], steps, deadline)] = (
                    actor, self.weights.version, time.time())
        finally:
            # Wait for the calls in flight (their failures, if any, no longer matter).
            in_flight = list(pending) + ([training] if training else [])
            if in_flight:
                ray.wait(in_flight, num_returns=len(in_flight))

    def close(self) -> None:
        self.logger.close()
        for a in self.actors:
            ray.kill(a)
        ray.kill(self.learner)
        self.replay.close()
        if self.oracle is not None:
            self.oracle.close()
        if self.evaluator is not None:
            ray.kill(self.evaluator)


def _summary(record: dict) -> str:
    parts = [f"loss {record.get('loss', float('nan')):.4f}", f"{record.get('positions_per_s', 0):,.0f} positions/s",
             f"replay {record.get('replay_size', 0):,}"]
    if "eval/value_mae" in record:
        parts.append(f"MAE {record['eval/value_mae']:.3f}")
    return ", ".join(parts)


def train(config: TrainConfig, *, run_dir=None, resume=None, updates=None, minutes=None, address=None,
          wandb_mode=None, stop=None) -> tuple[Path, dict]:
    """Run (or resume) a training run; returns the run directory and its last metrics."""
    config, run_dir = prepare_run_dir(config, run_dir, resume)
    start_ray(address)
    run = Run(config, run_dir, wandb_mode=wandb_mode, resume=resume is not None, fixed_cluster=address is None)
    try:
        last = run.run(updates=updates, minutes=minutes, stop=stop)
    finally:
        run.close()
    return run_dir, last
