"""The evaluation of a network on a game's suites (``evaluation.suites``): from numpy
weights inside training, or from a checkpoint file.

Metrics come back flat, ``eval/<suite>/<metric>`` (``eval/connect4-uniform/value_mae``,
``eval/connect4-uniform/easy-opening/policy_regret``), each suite with the network
evaluations its policy spent (``inference_evals``, the compute proxy at inference)
and its wall time. A second policy (``EvaluationConfig.also_search``: a training run's
own search) plays every suite again, its decisions' metrics under the suite's name with
the policy's, ``eval/<suite>@mcts32/<metric>`` (``evaluation.metric_keys.policy_suite``);
the value head's are the network's, and stay under the suite's own keys only.

:class:`SuiteRunner` holds the game, the network and the loaded suites, and evaluates
numpy weights (``Learner.get_weights``); :func:`evaluate_checkpoint` builds one from a
``launch`` checkpoint (read and checked against the game, and algorithm, asked for by
``evaluation.checkpoints.read_checkpoint``). The command line is ``evaluation.cli``.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

import games
from evaluation import policies as P
from evaluation import policy_registry
from evaluation.checkpoints import CheckpointMismatchError, read_checkpoint
from evaluation.config import EvaluationConfig
from evaluation.datasets import DatasetError, load_dataset
from evaluation.engine_suites import engine_match
from evaluation.exact import exact_labels
from evaluation.metric_keys import parse_policy_tag, policy_suite, suite_metric
from evaluation.metrics import state_metrics
from evaluation.network import NetworkModel
from evaluation.oracles import PastDeadline, make_oracle, oracle_is_weak
from evaluation.play import game_record, head_to_head, play_vs_oracle, trace_suite
from evaluation.suites import Suite, suite_opening_moves, suites_for
from games import Game, take
from inference.networks import NetworkConfig
from oracle_service.connect4_engines import DEFAULT_ENGINE

INPUT_PARAMS = ("frames",)  # game parameters of the network's input, not of the rules


class SuiteAbandoned(Exception):
    """A suite ran past the time it was given (``SuiteRunner.evaluate``'s ``limits``)."""


def _until(choose, deadline: float):
    """``choose`` that gives its suite up (:class:`SuiteAbandoned`) once ``deadline`` has passed."""
    def timed(states):
        if time.time() >= deadline:
            raise SuiteAbandoned
        return choose(states)
    return timed


def _first_ply_starts(game: Game):
    """Every live position one ply from the start (openings of the small games)."""
    root = game.init(1)
    exp = game.expand(root)
    kids = take(exp.children, np.flatnonzero((exp.legal & ~exp.done)[0]))
    return kids


def _random_player(game: Game, seed: int):
    rng = np.random.default_rng(seed)
    return lambda states: games.random_legal_actions(game.legal(states), rng)


class SuiteRun(NamedTuple):
    """One suite played by one policy: the name its keys carry (the suite's own for the
    runner's policy, ``<suite>@<policy><budget>`` for the second one), the suite and the
    policy. Each is evaluated, skipped and timed on its own (``SuiteRunner.evaluate``)."""

    name: str
    suite: Suite
    spec: policy_registry.PolicySpec
    own: bool  # the runner's own policy: its states suites also score the value head


def evaluation_policies(evaluation: EvaluationConfig, *, policy_head: bool, gamma: float = 1.0, seed: int = 0,
                        training_search: str | None = None, search_settings: dict | None = None):
    """(the policy ``evaluation`` plays, the second one or None) for a network with or
    without a policy head, as ``PolicySpec`` s. The second is ``also_search``'s
    (``EvaluationConfig.also_policy`` of ``training_search``) with the first's other
    settings, None where it is the first already (whose suites' own keys then are its).
    ``search_settings``: the training search's own constants (``c_puct``, ``c_init``,
    ``c_base``), which the second policy plays with when it is that search (auto)."""
    own = policy_registry.PolicySpec(policy_registry.resolve(evaluation.policy, policy_head), gamma,
                                     evaluation.simulations, evaluation.depth, seed, evaluation.reuse)
    tag = evaluation.also_policy(training_search)
    if tag is None:
        return own, None
    policy, budget = parse_policy_tag(tag)
    setting = policy_registry.entry(policy).budget
    also = own._replace(policy=policy, **({setting: budget} if setting is not None else {}))
    if tag == training_search and search_settings:
        also = also._replace(**search_settings)
    return own, None if also == own else also


def suite_runs(suites: list[Suite], own: policy_registry.PolicySpec,
               also: policy_registry.PolicySpec | None = None) -> list[SuiteRun]:
    """Every suite by ``own``, then by ``also``: a wall clock that cannot fit them all
    leaves the second policy's out first (launch/eval_plan.py)."""
    runs = [SuiteRun(s.name, s, own, True) for s in suites]
    if also is not None:
        runs += [SuiteRun(policy_suite(s.name, also.policy, policy_registry.budget(also)), s, also, False)
                 for s in suites]
    return runs


class SuiteRunner:
    """Evaluates weights of ``net_config`` for ``game`` on ``suites`` (names; None: the
    defaults), playing as ``evaluation`` says (an ``EvaluationConfig``: its policy, the
    search's simulations or depth, the openings, the network's inference path).
    ``oracle_client``: an ``OracleClient`` whose service answers the
    Connect Four oracle queries of play and trace suites; without one they are solved
    in this process, and ``oracle_store`` says where solved positions are kept
    ("default": the shared store; None: solve without one), and ``oracle_engine`` which engine
    solves (``ours``, or ``bitbully``, the optional AGPL extra). ``engine_level``,
    ``engine_tables`` (games at once), ``engine_timeout`` (seconds per engine move),
    ``engine_workers`` (Ray tasks the games are split over; 1: in this process) and
    ``sgf_dir`` (where each game's SGF is kept) are those of the engine suites. ``record_games``: every game of a
    play suite is kept in :attr:`games` (``evaluation.play.game_record``, with its suite and
    number), for ``launch evaluate --games-out`` and the board's replays. ``prior``: a second
    network (an ``evaluation.network.NetworkModel`` with a policy head) whose prior MCTS
    searches with while this network gives the leaf values, the AVI paper's
    cross-inference; both networks' evaluations are counted. ``training_search``: the tag
    of the search the network trains with at its training budget (``mcts32``), what
    ``evaluation.also_search=auto`` plays beside the policy (None: auto plays nothing
    more), played with ``search_settings``, its own exploration constants; :attr:`runs`
    lists every suite with each policy that plays it."""

    def __init__(self, game: Game | str, net_config, *, suites=None, evaluation: EvaluationConfig = EvaluationConfig(),
                 gamma: float = 1.0, oracle_store="default", cache_dir=None, seed: int = 0,
                 opponent=None, oracle_client=None, oracle_engine: str = DEFAULT_ENGINE,
                 engine_level: int | None = None, engine_tables: int | None = None, engine_timeout: float = 60.0,
                 sgf_dir=None, engine_workers: int = 1, record_games: bool = False, prior=None,
                 training_search: str | None = None, search_settings: dict | None = None):
        if engine_workers < 1:
            raise ValueError(f"engine_workers must be >= 1, got {engine_workers}")
        self.engine_options = {"level": engine_level, "tables": engine_tables, "timeout": engine_timeout,
                               "sgf_dir": sgf_dir, "workers": int(engine_workers)}
        self.game = games.make(game) if isinstance(game, str) else game
        if isinstance(net_config, dict):
            net_config = NetworkConfig(**net_config)
        own, self.also = evaluation_policies(evaluation, policy_head=net_config.policy_head, gamma=gamma, seed=seed,
                                             training_search=training_search, search_settings=search_settings)
        self.policy, self.gamma, self.seed = own.policy, gamma, seed
        self.simulations, self.depth, self.reuse = evaluation.simulations, evaluation.depth, evaluation.reuse
        for spec in (own, self.also):
            try:  # what the policies need of the network, before any suite loads (the oracle is
                # made when a policy asks for it: make_oracle names a game without one)
                if spec is not None:
                    policy_registry.check(spec.policy, has_policy_head=net_config.policy_head, oracle=True)
            except policy_registry.PolicyUnavailable as e:
                raise CheckpointMismatchError(str(e)) from e
        self.model = NetworkModel(self.game, net_config, inference_dtype=evaluation.inference_dtype)
        self.prior = prior
        if prior is not None:  # the policy's own checks (MCTS only, a prior with a policy head), before any suite loads
            self.choose()
        self.opponent = opponent
        known = {s.name: s for s in suites_for(self.game)}
        if suites is None:
            chosen = [s for s in known.values() if s.default]
        else:
            unknown = [s for s in suites if s not in known]
            if unknown:
                raise DatasetError(f"unknown suite(s) {unknown} for {self.game!r}; available: {', '.join(known)}")
            chosen = [known[s] for s in suites]
        if any(s.kind == "h2h" for s in chosen) and opponent is None:
            raise ValueError("a head-to-head suite needs an opponent (opponent= / --opponent CHECKPOINT)")
        self.suites = chosen
        self.runs = suite_runs(chosen, own, self.also)
        self._cache_dir = cache_dir
        self._oracle = None
        self._oracle_store = oracle_store
        self._oracle_client = oracle_client
        self._oracle_engine = oracle_engine
        self._data = {s.name: self._load(s) for s in chosen}
        self._weights = None  # the weights evaluated last (engine suites on Ray rebuild the agent from them)
        self.abandoned: dict[str, float] = {}  # of the last evaluate call: suite -> seconds it ran
        self.record_games, self.games = record_games, []
        max_openings = evaluation.max_openings
        if max_openings:  # game suites on the first openings only (a cheaper check)
            for s in chosen:
                if s.kind == "engine":
                    self._data[s.name] = self._data[s.name][:max_openings]
                elif s.kind != "states":
                    n = len(np.asarray(self._data[s.name][0]))
                    self._data[s.name] = take(self._data[s.name], np.arange(min(max_openings, n)))

    # ---- suite data ---------------------------------------------------------------

    def _load(self, suite: Suite):
        if suite.kind == "states":
            if suite.dataset is None:
                labels = exact_labels(self.game, self.gamma)
                if labels is None:
                    raise DatasetError(f"{suite.name}: no exact labels for {self.game!r} at gamma {self.gamma}")
                return labels, None
            data = self._dataset(suite.dataset)
            # A weak oracle's labels (Hex) are +-1 at any gamma: the solver knows who wins,
            # not when, so the discounted V* (gamma^plies-to-end, signed) cannot be formed,
            # while its sign can, and is the same for every gamma > 0. The paper's Hex value
            # error is the MAE against +-1; a learner with gamma < 1 is held to it too (its
            # values shrink with the distance to the end), and value_sign_error, which no
            # discount changes, is reported beside it. Regret uses the weak q* in {-1, +1}.
            labels = data.labels_at(1.0 if self._weak_labels(data) else self.gamma)
            return labels._replace(states=self._states(data)), data.groups
        if suite.kind == "engine":  # move lists: the engine is told the opening move by move
            return [list(map(int, m)) for m in self._dataset(suite.dataset).moves]
        if suite.dataset is None:  # no openings dataset: every first move that does not end the game
            return _first_ply_starts(self.game)
        return self._states(self._dataset(suite.dataset))

    def _weak_labels(self, data) -> bool:
        """Whether a dataset's labels are a weak oracle's (win or loss only: Hex's)."""
        return oracle_is_weak(self.game) and "winning_moves" in data.table.column_names

    def _dataset(self, name: str):
        """The dataset ``name``, checked to be of this game. Input options that leave the
        rules alone (Chomp's ``frames``) may differ: see :meth:`_states`."""
        data = load_dataset(name, cache_dir=self._cache_dir)
        ours = {k: v for k, v in self.game.params.items() if k not in INPUT_PARAMS}
        if data.game.name != self.game.name or data.game.params != ours:
            raise DatasetError(f"dataset {name!r} is for {data.game!r}, not {self.game!r}")
        return data

    def _states(self, data):
        """The dataset's states as this game's: replayed from their moves when the game
        keeps more than the dataset's (a multi-frame Chomp keeps earlier boards)."""
        if data.game.params == self.game.params:
            return data.states
        return self.game.from_moves(data.moves)

    @property
    def oracle(self):
        if self._oracle is None:
            self._oracle = make_oracle(self.game, store=self._oracle_store, client=self._oracle_client,
                                       engine=self._oracle_engine)
        return self._oracle

    # ---- policies -----------------------------------------------------------------

    @property
    def policy_spec(self) -> policy_registry.PolicySpec:
        return policy_registry.PolicySpec(self.policy, self.gamma, self.simulations, self.depth, self.seed,
                                          self.reuse)

    def played(self) -> dict:
        """The runner's policy and its budget by name (``policy_registry.played``)."""
        return policy_registry.played(self.policy_spec)

    def choose(self, spec: policy_registry.PolicySpec | None = None):
        """The policy ``spec`` (default the runner's own) on this network."""
        spec = self.policy_spec if spec is None else spec
        # The oracle is made (its data loaded) only for a policy that plays with it, and the
        # prior given to the policies that search with one.
        entry = policy_registry.entry(spec.policy)
        oracle = self.oracle if "oracle" in entry.needs else None
        prior = self.prior if spec == self.policy_spec or entry.takes_prior else None
        return spec.build(self.game, self.model, prior, oracle)

    def _remote_choose(self, spec: policy_registry.PolicySpec) -> policy_registry.NetworkPolicy:
        """What builds the policy ``spec`` in a Ray task: the network's config and current weights."""
        if self.prior is not None:
            raise ValueError("cross-inference plays engine suites in this process only (engine_workers=1)")
        return policy_registry.NetworkPolicy(self.game.name, dict(self.game.params), self.model.net_config,
                                             self._weights, spec, self.model.fast.requested)

    # ---- evaluation ---------------------------------------------------------------

    def _evaluations(self) -> int:
        """Network evaluations so far, the prior's included (cross-inference runs both)."""
        return self.model.evaluations + (self.prior.evaluations if self.prior is not None else 0)

    def evaluate(self, weights: dict[str, np.ndarray] | None = None, *, kinds=None, skip=(),
                 limits: dict[str, float] | None = None, deadline: float | None = None) -> dict:
        """Flat ``eval/<suite>/<metric>`` metrics of ``weights`` (None: the weights set last)
        on the loaded suites of ``kinds`` (None: all of them) but those named in ``skip``,
        with the second policy's under ``eval/<suite>@<tag>/<metric>``. ``skip``, ``limits``
        and :attr:`abandoned` name :attr:`runs` (a suite by one policy).

        A run named in ``limits`` is abandoned once it has run that many seconds, or at
        ``deadline`` (a ``time.time()``), whichever comes first: its metrics are left out and
        :attr:`abandoned` says how long it ran (its policy checks the clock before each of its
        moves; engine games on Ray tasks are not abandoned)."""
        if weights is not None:
            self.model.set_weights(weights)
            self._weights = weights  # for the engine suites' Ray tasks
        out = {}
        self.abandoned = {}
        for run in self.runs:
            suite = run.suite
            if (kinds is not None and suite.kind not in kinds) or run.name in skip:
                continue
            data = self._data[suite.name]
            choose = self.choose(run.spec)
            start, evals = time.perf_counter(), self._evaluations()
            until = None
            if limits is not None and run.name in limits:
                until = time.time() + limits[run.name]
                until = until if deadline is None else min(until, deadline)
                choose = _until(choose, until)
            uses_oracle = suite.kind in ("play", "traces")
            if uses_oracle:  # the oracle's solving, the bulk of a cold suite's time, stops there too
                self.oracle.deadline = until
            try:
                m, decisions = self._run_suite(run, data, choose)
            except (SuiteAbandoned, PastDeadline):
                self.abandoned[run.name] = time.perf_counter() - start
                continue
            finally:
                if uses_oracle:
                    self.oracle.deadline = None
            spent = self._evaluations() - evals
            m["inference_evals"] = spent
            # The value MAE's own pass is not a decision's cost: count the policy's only.
            if suite.kind == "states" and run.own:
                m["inference_evals"] = spent - m["states"] * self.model.cost
            if decisions:
                m["inference_evals_per_decision"] = m["inference_evals"] / decisions
            m["seconds"] = time.perf_counter() - start
            out.update({suite_metric(run.name, k): v for k, v in m.items()})
        return out

    def _run_suite(self, run: SuiteRun, data, choose) -> tuple[dict, int | None]:
        """One run's metrics and the policy's decisions they took (None where not counted)."""
        suite = run.suite
        if suite.kind == "states":
            labels, groups = data
            # The value head's metrics are the network's whatever plays: scored once, with the runner's policy.
            value = P.state_value(self.game, self.model.value_obs) if run.own else None
            m = state_metrics(labels, choose=choose, value=value, groups=groups,
                              sign_error=oracle_is_weak(self.game))
            decisions = m["states"]
        elif suite.kind == "play":
            played = [] if self.record_games else None
            m = play_vs_oracle(self.game, choose, self.oracle, data, games_out=played)
            if played is not None:
                openings = suite_opening_moves(self.game, suite, self._dataset)
                self.games += [game_record(self.game, openings[g.opening], g.actions, g.agent_first,
                                           g.agent_outcome, suite=suite.name, number=i, error=g.error,
                                           blunder=g.blunder, agent=policy_registry.played(run.spec))
                               for i, g in enumerate(played)]
            decisions = m["agent_moves"]
        elif suite.kind == "traces":
            m = trace_suite(self.game, choose, self.oracle, data)
            decisions = m["plies"]
        elif suite.kind == "engine":
            remote = self._remote_choose(run.spec) if self.engine_options["workers"] > 1 else None
            m = engine_match(self.game, choose, suite.name, data, make_choose=remote, **self.engine_options)
            decisions = m["agent_moves"]
        else:
            if suite.kind == "random":
                opponent = _random_player(self.game, self.seed)
            else:
                opponent = self.opponent
            m = head_to_head(self.game, choose, opponent, data)
            decisions = None
        return m, decisions


def evaluate_checkpoint(path, game: str, suites=None, *, algo: str | None = None,
                        evaluation: EvaluationConfig = EvaluationConfig(), gamma: float | None = None,
                        opponent_checkpoint=None, opponent_policy: str = policy_registry.AUTO, prior_checkpoint=None,
                        games_out: list | None = None, sides_out: dict | None = None, **kwargs) -> dict:
    """Flat metrics of the checkpoint at ``path`` on ``game``'s suites (see :class:`SuiteRunner`).
    ``gamma``: default the run's own (its config), else 1. ``games_out``, when given,
    receives the record of every game of the play suites. ``opponent_policy``: the policy
    the ``opponent_checkpoint`` plays the head-to-head suites with (auto: its policy
    head's argmax, or greedy without one), with the evaluation's settings.
    ``prior_checkpoint``: MCTS takes its prior from that checkpoint's policy head and its
    leaf values from this one (cross-inference). ``sides_out``, when given, receives the
    policy each side played, with its budget, by name (``policy_registry.played``):
    ``agent`` (this checkpoint's), and ``opponent`` with an opponent."""
    g, net_config, weights, config = read_checkpoint(path, game, algo)
    gamma = config.gamma if gamma is None else gamma

    def other(checkpoint, role: str):
        og, oconf, ow, oc = read_checkpoint(checkpoint, game)
        if og.params != g.params:
            raise CheckpointMismatchError(f"{role} checkpoint {checkpoint} is of {og!r}, the checkpoint of {g!r}")
        return og, NetworkModel(og, NetworkConfig(**oconf), ow), oc

    opponent = prior = opponent_spec = None
    if opponent_checkpoint is not None:
        og, om, oc = other(opponent_checkpoint, "opponent")
        opponent_spec = policy_registry.PolicySpec(policy_registry.resolve(opponent_policy, om.has_policy),
                                                   gamma=oc.gamma, simulations=evaluation.simulations,
                                                   depth=evaluation.depth, reuse=evaluation.reuse)
        opponent = policy_registry.make(opponent_spec, og, om)
    if prior_checkpoint is not None:
        _, prior, _ = other(prior_checkpoint, "prior")
    ev = SuiteRunner(g, net_config, suites=suites, evaluation=evaluation, gamma=gamma, opponent=opponent,
                     record_games=games_out is not None, prior=prior, **kwargs)
    metrics = ev.evaluate(weights)
    if games_out is not None:
        games_out.extend(ev.games)
    if sides_out is not None:
        sides_out["agent"] = ev.played()
        if opponent_spec is not None:
            sides_out["opponent"] = policy_registry.played(opponent_spec)
    return metrics
