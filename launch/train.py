"""A training run: Ray start-up, the roles, the schedule, the records and checkpoints.

A run starts its roles on Ray: the oracle service (AZAL's labels, the evaluator's
Connect Four play), the evaluator, the replay shards, the learner and the self-play
actors. Then every iteration of its schedule (``launch/schedules.py``: synchronous, the
paper's Algorithm 1, or asynchronous) collects rows, trains on them and publishes new
weights, and the run, in :meth:`Run.run`:

1. adds the run's counters (``launch/records.py``) and compute proxy to the record;
2. adds the faults since the last record (``launch/faults.py``);
3. every ``evaluation.every`` iterations, the exact metrics of the new weights (the
   evaluator's game suites, play against the oracle and traces, at every
   ``evaluation.play_every``-th of these evaluations and on the final weights);
4. logs the record to ``metrics.jsonl`` and W&B, and shows it on the console;
5. every ``checkpoint_every`` iterations, commits a replay snapshot and a checkpoint
   (learner, optimizer, counters, faults, environments and random states of every
   actor) as one pair (``launch/run_store.py``), so that ``--resume`` continues the
   run where it left it.

Faults (a process or a whole node dying) do not end a run:

- a self-play actor restarts on a node with a free CPU and its interrupted call is
  retried by Ray (``actors/pool.py``);
- a replay shard restarts from its last Parquet snapshot; rows on their way to it are
  sent again once it is back (``ReplayService.put``), the learner's sampler redraws its
  batch, and the run counts the rows stored since the snapshot, now lost;
- the learner restarts from the newest good checkpoint by itself
  (``learner/actor.py``); the driver waits for it, takes its update counter (the
  checkpoint's) and redoes the interrupted call (``launch/restarts.py``). Weights are
  published from the driver's object store, so they do not die with the learner's node.

No wait for the learner is endless (``launch/restarts.py``): its first answer and its
answer after a restart are waited for ``learner.restart_wait_s`` at most (on a cluster long
enough for a GPU node to boot and pull its image). A learner that does not come back within
it ends the run with that error (``WaitExpired``), after an end row in ``metrics.jsonl``
that says so; the newest checkpoint pair stays, and ``--resume`` continues from it. While
the run waits for a lost learner, the actors collect on. The calls to the other roles'
actors are waited for while the actors work on them, and within the same bound while one
is away (``RoleWatch``); a role that no node takes at the run's start (the evaluator, which
starts first, say) ends it the same way, with its end row, and the roles started before it
are stopped.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import asdict
from pathlib import Path

import ray

import algorithms
import lifecycle
import storage
from actors.inference_server import InferenceActor
from actors.pool import SelfPlayActor
from evaluation.exact import exact_labels, policy_head_metrics, value_metrics
from evaluation.suites import suites_for
from launch.config import ConfigError, TrainConfig, resolved, validate
from launch.evaluator import (EvaluatorActor, Evaluated, chosen_suites, evaluator_needs_oracle, training_search,
                              training_search_settings)
from launch.faults import FaultLedger
from launch.metrics import MetricsLogger
from launch.run_placement import learner_node_to_come, place_run, resources_after_gpu_wait
from launch.records import RunCounters, inference_record, replay_record
from launch.restarts import LearnerLink, RoleWatch, WaitExpired, replay_call
from launch.run_dir import actor_log_dir, prepare_run_dir, run_location, write_run_config
from launch.run_store import RunStore
from launch.safe_tree import from_safe, to_safe
from launch.run_budget import RunBudget, check_budget
from launch.schedules import SCHEDULES
from learner.actor import LearnerActor
from learner.checkpoint import RunCheckpoint
from inference.network import ValueFunction
from learner.weights import publish
from lifecycle.ray_start import start_ray
from oracle_service.service import OracleClient
from replay.rows import schema_for
from replay.service import ReplayService


class Run:
    """One training run, started on Ray; ``run()`` trains until the budget is spent."""

    def __init__(self, config: TrainConfig, run_dir: Path, *, wandb_mode: str | None = None, resume: bool = False,
                 fixed_cluster: bool = True, wandb_as=None):
        # The run's life, in order: its config resolved for the cluster and recorded (here),
        # its roles started (_start_roles), on --resume every role back at the saved moment
        # (_restore); then run(): the iterations, a checkpoint pair every checkpoint_every of
        # them (checkpoint) and the end; close() stops the roles.
        self.config = config = resolved_for_cluster(config, fixed_cluster)
        self.run_dir = run_location(run_dir)
        write_run_config(self.run_dir, config)
        self.game = config.game_network.make_game()
        self.algorithm = algorithms.configured(config.algo, config.algorithm)  # with the run's settings of it
        self.counters = RunCounters()
        self.logger = MetricsLogger(self.run_dir, asdict(config), wandb_mode=wandb_mode, wandb_as=wandb_as)
        # Actor names carry the run's name: runs sharing a cluster do not collide, and
        # operators (and the fault-tolerance tests) can find an actor by name.
        self.name = storage.basename(self.run_dir) if storage.is_remote(self.run_dir) else self.run_dir.resolve().name
        # Every actor logs its start, exit and crashes to logs/<its name>.log (lifecycle/),
        # a file of its own node: in the run directory, or on a node's disk when the run's
        # storage is an object store (which cannot be appended to).
        self.log_dir = str(actor_log_dir(self.run_dir, self.name))
        self.placement, self.inference_device = place_run(config, fixed_cluster)
        self._checkpointed_at: tuple[int, int] | None = None  # (iteration, updates) of the newest checkpoint
        self._checkpoint_path: Path | None = None
        self._last: dict = {}  # the newest iteration's record
        self._restored_from = None  # the pair a resumed run started from
        # The roles not started yet, as close() and the end row find them if a start's wait ends the run.
        self.oracle = self.evaluator = self.replay = self.link = None
        self.inference, self.actors, self.faults = [], [], FaultLedger([])
        try:
            self._start_roles()  # the evaluator's start waits for its node: bounded
            self.link.wait_started()  # placed once a node offers what it asks: bounded
            if resume:
                self._restore()
            self.weights = publish(self.link.call("get_weights"), self.counters.version)
        except WaitExpired as err:
            log_error_end(self, err)
            self.close()
            raise

    def _start_roles(self) -> None:
        """Every role on Ray, each given its config (and the workers the run's game and
        network, ``config.game_network``): the oracle service and the evaluator first (a
        missing dataset or unknown suite stops the run before any self-play or training
        starts), the replay shards, the learner, and the self-play actors with their
        inference servers."""
        config = self.config
        # The oracle service: AZAL's labels, and the Connect Four oracle of the evaluator's
        # play and trace suites (one service, one store: each position solved once).
        needs_oracle = (self.algorithm.labels_while_collecting
                        or evaluator_needs_oracle(self.game, config.evaluation.suites))
        self.oracle = (OracleClient(config.oracle.replicas, config.oracle.store or None,
                                    replica_options=self.placement["oracle"], log_dir=self.log_dir,
                                    engine=config.oracle.engine)
                       if needs_oracle else None)
        # The bound of every wait for an actor away from the run (its node lost, or none
        # placed yet): the learner's, learner.restart_wait_s (launch/restarts.py).
        self.watch = RoleWatch(config.learner.restart_wait_s)
        self.evaluator, evaluated_suites, self.play_suites = self._start_evaluator()
        schema = schema_for(self.algorithm.policy_columns, self.game.obs_shape, self.game.num_actions)
        self.replay = ReplayService.create(schema, config.replay.capacity, config.replay.shards, seed=config.seed,
                                           snapshot_dir=str(storage.join(self.run_dir, "replay")), name=f"{self.name}-replay",
                                           actor_options=self.placement["replay"], log_dir=self.log_dir)
        learner = LearnerActor.options(name=f"{self.name}-learner", **self.placement["learner"]).remote(
            game_network=config.game_network, config=config.learner, algo=self.algorithm, replay=self.replay,
            seed=config.seed, checkpoint_dir=str(storage.join(self.run_dir, "checkpoints")), log_dir=self.log_dir)
        self.store = RunStore(self.run_dir, self.replay, keep=config.keep_checkpoints,
                              keep_every=config.keep_checkpoints_every)
        self.faults = FaultLedger([r.incarnation for r in self.replay.recoveries()])
        self.inference, self.actors = self._start_self_play()
        self.link = LearnerLink(learner, self.counters, self.faults, wait_s=config.learner.restart_wait_s)
        # One path for the exact metrics of states: the evaluator's states suite where it
        # runs one (Chomp, F-Games), else the labels built in here (tic-tac-toe, or none).
        states_suites = {s.name for s in suites_for(self.game) if s.kind == "states"}
        self.labels = (None if states_suites & set(evaluated_suites)
                       else exact_labels(self.game, config.gamma))
        self.eval_fn = (ValueFunction(self.game, config.network, inference_dtype=config.evaluation.inference_dtype)
                        if self.labels is not None else None)

    def _start_self_play(self) -> tuple[list, list]:
        """The inference servers (if any) and the self-play actors, each given the run's
        self-play config whole."""
        config, actors = self.config, dataclasses.replace(self.config.actors, inference_device=self.inference_device)
        game_network = config.game_network
        inference = [
            InferenceActor.options(name=f"{self.name}-inference-{j}", **self.placement["inference"]).remote(
                game_network=game_network, algo=self.algorithm, config=actors,
                # The versions in flight: one (sync), up to max_policy_lag + 1 (async).
                versions=1 if config.schedule == "sync" else config.max_policy_lag + 1, log_dir=self.log_dir)
            for j in range(actors.inference_servers)]
        pool = [
            SelfPlayActor.options(name=f"{self.name}-selfplay-{i}", **self.placement["actor"]).remote(
                game_network=game_network, config=actors, algo=self.algorithm, seed=config.seed, index=i,
                replay=self.replay, gamma=config.gamma, oracle=self.oracle, oracle_store=config.oracle.store or None,
                log_dir=self.log_dir,
                inference_server=inference[i % len(inference)] if inference else None)
            for i in range(actors.num_actors)]
        return inference, pool

    def _start_evaluator(self):
        """The evaluator actor on the game's datasets (launch/evaluator.py), the names of
        its suites and of those among them on the ``evaluation.play_every`` cadence, or
        (None, [], [])."""
        cfg = self.config
        if chosen_suites(self.game, cfg.evaluation.suites) is False:
            return None, [], []
        evaluator = EvaluatorActor.options(name=f"{self.name}-evaluator", **self.placement["evaluator"]).remote(
            game_network=cfg.game_network, config=cfg.evaluation, gamma=cfg.gamma,
            oracle_store=cfg.oracle.store or None, oracle=self.oracle, training_search=training_search(cfg),
            search_settings=training_search_settings(cfg),
            log_dir=self.log_dir)
        try:  # a missing dataset or unknown suite stops the run now; no node for it, within the watch's bound
            names, play = self.watch.get({evaluator.suites.remote(): evaluator,
                                          evaluator.play_suites.remote(): evaluator}, "the evaluator's start")
        except (ray.exceptions.RayActorError, WaitExpired):
            ray.kill(evaluator)
            raise
        return evaluator, names, play

    @property
    def evaluates(self) -> bool:
        return self.labels is not None or self.evaluator is not None

    def plays_at(self, iteration: int) -> bool:
        """Whether the evaluation at ``iteration`` (one of every ``evaluation.every``) runs the
        game suites: every ``evaluation.play_every``-th evaluation, the untrained network's
        (iteration 0) first. Counted in iterations, so that a resumed run keeps the cadence."""
        return iteration % (self.config.evaluation.every * self.config.evaluation.play_every) == 0

    # ------------------------------------------------------------- the loop

    def run(self, *, updates: int | None = None, minutes: float | None = None, train_minutes: float | None = None,
            started: float | None = None, stop=None) -> dict:
        """Train until the budget is spent (``launch/run_budget.py``: ``updates``, the wall
        clock of ``minutes`` from ``started``, or ``train_minutes``), or ``stop(record)`` is
        True. The run ends with its final weights evaluated and checkpointed, and a last row
        in ``metrics.jsonl``, also returned: the final state, ``end`` (why it ended),
        ``no_update`` (why none, if none) and ``evaluation_skipped`` (the suites a wall clock
        left out, and why)."""
        spend = RunBudget(self, updates=updates, minutes=minutes, train_minutes=train_minutes, started=started,
                          time_share=self.config.evaluation.time_share,
                          storage_outage_s=self.config.storage_outage_s)
        elapsed_before, updates_before = self.counters.elapsed, self.counters.updates
        last, stopped = {}, False
        if self.evaluates and self.counters.iteration == 0 and not spend.budget.out_of_time():
            # The untrained network's errors: the first point of every learning curve.
            self.logger.log({**self.counters.as_dict(), "compute": 0.0, **spend.evaluate()})
        records = SCHEDULES[self.config.schedule](self, spend.budget)
        try:
            for record in records:  # one iteration of the schedule: rows collected, trained on, published
                self.counters.elapsed = elapsed_before + time.time() - spend.start
                self._add_totals(record)
                if (self.evaluates and self.counters.iteration % self.config.evaluation.every == 0
                        and spend.cadence_allows()):
                    record.update(spend.evaluate(play=self.plays_at(self.counters.iteration)))
                self.logger.log(record)
                last = self._last = record
                spend.progress.update(spend.spent(), record)
                if self.counters.iteration % self.config.checkpoint_every == 0:
                    spend.checkpoint()
                if stop is not None and stop(record):
                    stopped = True
                    break
        finally:
            records.close()  # an async schedule waits for its calls in flight
            spend.progress.close()
        self.counters.elapsed = elapsed_before + time.time() - spend.start
        end = {**self.counters.as_dict(), "compute": self.counters.compute}
        if self.evaluates and self.counters.version not in spend.complete:
            # The final weights are always evaluated: what the last record lacks (all of it,
            # or the game suites it left out) is added; a wall clock may still leave some out.
            evaluated, unplayed = any(k.startswith("eval/") for k in last), unplayed_suites(self.play_suites, last)
            if not evaluated or unplayed:
                checkpoint_left = self._checkpointed_at != (self.counters.iteration, self.counters.updates)
                end.update(spend.evaluate(play=bool(unplayed), others=not evaluated, final=True, due=unplayed,
                                          checkpoint_left=checkpoint_left))
        if self._checkpointed_at != (self.counters.iteration, self.counters.updates):
            spend.checkpoint(final=True)
        end["end"] = spend.end_reason(stopped)
        if spend.checkpoints_failed:  # tried again and written once the storage was back
            end["checkpoints_failed"] = spend.checkpoints_failed
        if self.counters.updates == updates_before:
            end["no_update"] = no_update_reason(self.config, self.counters.rows)
        if spend.left_out():
            end["evaluation_skipped"] = spend.left_out()
            for line in spend.left_out():
                print(f"evaluation left out {line}", file=sys.stderr)
        end["checkpoint"] = str(self._checkpoint_path)
        # Faults since the last record (the final checkpoint counts restarts no call reported).
        end.update(self.faults.record())
        end["eval_seconds"] = spend.eval_seconds  # of this session (since a resume)
        end["train_seconds"] = spend.train_seconds()
        # The last row: the run's final state whole (the last iteration's metrics, the final
        # weights' evaluation) and why it ended; the same dict is returned.
        final = {**last, **end}
        self.logger.log(final)
        return final

    def _add_totals(self, record: dict) -> None:
        """The run's counters, compute proxy, faults, oracle and inference totals, into an
        iteration's ``record``."""
        record.update(self.counters.as_dict(), compute=self.counters.compute)
        self.faults.shard_recoveries(replay_call(self.replay.recoveries))
        record.update(self.faults.record())
        if self.oracle is not None:  # the oracle service's totals so far
            record.update(self.oracle.stats_summary())
        if self.inference:  # the inference servers' batches so far
            record.update(inference_record(self.watch.get({s.stats.remote(): s for s in self.inference},
                                                          "the inference servers' statistics")))

    def publish(self) -> None:
        # Fetched and put by the driver: the weights then live in its object store, and
        # actors can still read them after the learner's node is gone.
        weights = self.link.call("get_weights")
        self.counters.version += 1
        self.weights = publish(weights, self.counters.version)

    def replay_record(self) -> dict:
        return replay_record(replay_call(self.replay.stats))

    def evaluate(self, *, play: bool = True, others: bool = True, limits: dict[str, float] | None = None,
                 deadline: float | None = None) -> Evaluated:
        """Exact metrics of the newest weights: the built-in labels' (``eval/value_mae``
        ...) or the evaluator actor's suites (``eval/<suite>/...``); its game suites when
        ``play`` (with ``limits``: those it names, each given its seconds, none past
        ``deadline``), the others (and the built-in labels) when ``others``."""
        out, abandoned = {}, {}
        if self.evaluator is not None:  # in its own process, meanwhile
            pending = self.evaluator.evaluate.remote([self.weights], play=play, others=others, limits=limits,
                                                     deadline=deadline)
        if self.labels is not None and others:
            self.eval_fn.set_weights(ray.get(self.weights.ref), self.weights.version)
            out.update({f"eval/{k}": v for k, v in value_metrics(self.game, self.labels, self.eval_fn,
                                                                  self.config.gamma).items()})
            if self.config.network.policy_head:  # the policy head's move beside the values' greedy one
                out.update({f"eval/policy_head/{k}": v
                            for k, v in policy_head_metrics(self.game, self.labels, self.eval_fn.forward).items()})
        if self.evaluator is not None:
            answer, = self.watch.get({pending: self.evaluator}, "the evaluation")
            out.update(answer.metrics)
            abandoned = answer.abandoned
        return Evaluated(out, abandoned)

    # ------------------------------------------------------------ checkpoints

    def checkpoint(self):
        """A replay snapshot and a checkpoint of everything a resumed run needs, of one
        moment, committed as one pair (``launch/run_store.py``): a crash while writing
        leaves the previous pair whole, and ``--resume`` takes that one."""
        path = self.store.commit(self.counters.updates, self._run_checkpoint)
        self._checkpointed_at, self._checkpoint_path = (self.counters.iteration, self.counters.updates), path
        return path

    def _run_checkpoint(self) -> RunCheckpoint:
        """The learner's, the actors' and the run's state now (after the replay's snapshot)."""
        learner = self.link.call("state_dict")
        actor_states = self.watch.get({a.get_state.remote(): a for a in self.actors}, "the self-play actors' states")
        # Restarts no iteration's record counted yet (an actor lost in this call, or after its
        # last collect): counted now, so that the checkpoint's totals and the end row hold them.
        incarnations = self.watch.get({a.restart_incarnation.remote(): a for a in self.actors},
                                      "the self-play actors' incarnations")
        for i, incarnation in enumerate(incarnations):
            if incarnation is not None:
                self.faults.actor_restarted(i, incarnation)
        # And the replay shards' (a shard lost since the last iteration's record and before
        # this snapshot came back from the previous one: its lost rows are counted here).
        self.faults.shard_recoveries(replay_call(self.replay.recoveries))
        return RunCheckpoint(
            counters=self.counters.as_dict(),  # after the learner call: those of the learner's state
            learner=learner, actors=to_safe(actor_states), config=self.config.to_json(),
            faults=dict(self.faults.totals))

    def _restore(self) -> None:
        """Every role back at the newest saved moment: counters and fault totals, the
        learner, the self-play actors and the replay shards."""
        saved = self.store.newest()
        try:
            self.counters.restore(saved.checkpoint.counters)
            self.faults.restore(saved.checkpoint.faults)
        except ValueError as err:
            raise ConfigError(f"--resume {self.run_dir}: {storage.basename(saved.path)}: {err}") from None
        self._restored_from = saved.path
        # The learner answered a moment ago (LearnerLink.wait_started); lost meanwhile, this raises.
        self.watch.get({self.link.learner.load_state_dict.remote(saved.checkpoint.learner): self.link.learner},
                       "the learner's restore")
        actor_states = from_safe(saved.checkpoint.actors)
        self.watch.get({a.set_state.remote(s): a for a, s in zip(self.actors, actor_states)},
                       "the self-play actors' restore")
        self.store.restore_replay(saved)
        print(f"resumed {self.run_dir} from {storage.basename(saved.path)}: iteration {self.counters.iteration}, "
              f"{self.counters.updates} updates, {self.replay.size()} replay rows")

    def close(self) -> None:
        self.logger.close()
        stop_started_roles(self)


def stop_started_roles(run: Run) -> None:
    """Stops the roles of ``run`` that have started: all of them, unless a start's wait ended
    the run (the roles after it are None or empty). Ended gracefully, so that their logs say
    they exited."""
    lifecycle.stop([*run.actors, *run.inference, *([run.link.learner] if run.link is not None else []),
                    *([run.evaluator] if run.evaluator is not None else [])])
    for role in (run.replay, run.oracle):
        if role is not None:
            role.close()


def unplayed_suites(play_suites, record: dict) -> list[str]:
    """The game suites of ``play_suites`` with no metric in ``record``."""
    return [s for s in play_suites if not any(k.startswith(f"eval/{s}/") for k in record)]


def log_error_end(run: Run, error: Exception) -> None:
    """The end row of ``run``, which a bounded wait ended (``error``): its last record, its
    counters and faults, the error, and its newest checkpoint pair, which ``--resume``
    continues from."""
    end = {**run._last, **run.counters.as_dict(), "compute": run.counters.compute, "end": "error",
           "error": str(error), "checkpoint": str(run._checkpoint_path or run._restored_from), **run.faults.record()}
    run.logger.log(end)
    kept = (f"its newest checkpoint pair kept ({end['checkpoint']}): --resume {run.run_dir} continues from it"
            if run._checkpoint_path or run._restored_from else "no checkpoint pair yet")
    print(f"error: {error}; the run ends at {run.counters.updates} updates, {kept}", file=sys.stderr, flush=True)


def resolved_for_cluster(config: TrainConfig, fixed_cluster: bool) -> TrainConfig:
    """``config`` with every auto made concrete for the cluster Ray offers, once, before
    any actor starts (and recorded by the run); on a cluster still bringing up its GPU
    node, after a bounded wait for it (``learner.wait_for_gpu_s``). The waits' ``auto``
    (``learner.wait_for_gpu_s``, ``learner.restart_wait_s``) become the embedded Ray's or a
    cluster's (``LearnerConfig.waits_for``)."""
    validate(config)
    # The waits' auto: none for a GPU on the embedded Ray, a node's boot and image pull on a
    # cluster (no GPU wait where its `learner` nodes have joined already).
    config = dataclasses.replace(config, learner=config.learner.waits_for(
        embedded=fixed_cluster, gpu_node_to_come=not fixed_cluster and learner_node_to_come()))
    resources, gpu_wait = resources_after_gpu_wait(config.learner, embedded=fixed_cluster)
    config = resolved(config, cpus=resources.get("CPU", 0), gpus=resources.get("GPU", 0), gpu_wait=gpu_wait)
    validate(config)
    return config


def no_update_reason(config: TrainConfig, rows: int) -> str:
    """Why a run that collected ``rows`` rows ended without an update, for its end row."""
    if rows < config.learner.batch_size:
        what = ("a game must end before its rows are stored"
                if algorithms.descriptor(config.algo).rows_from_finished_games else "each iteration collects actors.num_envs x actors.collect_steps rows")
        return (f"the budget ended with {rows:,} rows in the replay, fewer than one batch "
                f"(learner.batch_size={config.learner.batch_size}; {what}): give more --minutes or a smaller preset")
    return (f"the budget ended during the first collection ({rows:,} rows collected, "
            f"{config.rows_per_iteration:,} per iteration): give more --minutes or fewer rows per iteration")


def train(config: TrainConfig, *, run_dir=None, resume=None, updates=None, minutes=None, train_minutes=None,
          address=None, wandb_mode=None, stop=None, wandb_as=None) -> tuple[Path, dict]:
    """Run (or resume) a training run; returns the run directory and its last metrics. The
    budget as :meth:`Run.run` takes it; the wall clock of ``minutes`` starts once Ray is up.
    ``wandb_as``: where W&B files the run (``launch.wandb_run.WandbRun``; default a plain run's)."""
    check_budget(updates, minutes, train_minutes)  # before a run directory or Ray exists
    config, run_dir = prepare_run_dir(config, run_dir, resume)
    start_ray(address)
    started = time.time()
    run = Run(config, run_dir, wandb_mode=wandb_mode, resume=resume is not None, fixed_cluster=address is None,
              wandb_as=wandb_as)
    try:
        last = run.run(updates=updates, minutes=minutes, train_minutes=train_minutes, started=started, stop=stop)
    except WaitExpired as err:  # the learner did not come back in time: the run ends, saying so
        log_error_end(run, err)
        raise
    finally:
        run.close()
    return run_dir, last
