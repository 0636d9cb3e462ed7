"""Evaluation of a network on a game's suites: from a checkpoint file, or inside training.

A suite is one measurement on one fixed set (see :func:`suites_for`):
  states  value MAE and policy regret on oracle-labelled states (by group and phase)
  play    games against the exact oracle from every opening, both sides
  traces  the agent's self-play from every opening, annotated by the oracle (AZAL)
  random  head-to-head score against a uniformly random player (games without oracle)
  h2h     head-to-head score against an opponent policy (``opponent=``)
  engine  games against an outside GTP engine (``go-gnugo``, ``othello-grhino``:
          ``evaluation.engine_suites``), at ``engine_level``
Metrics come back flat, ``eval/<suite>/<metric>`` (``eval/connect4-uniform/value_mae``,
``eval/connect4-uniform/easy-opening/policy_regret``), each suite with the network
evaluations its policy spent (``inference_evals``, the compute proxy at inference)
and its wall time.

:class:`SuiteRunner` holds the game, the network and the loaded suites, and evaluates
numpy weights (``Learner.get_weights``); :func:`evaluate_checkpoint` builds one from a
``launch`` checkpoint and checks that the checkpoint is of the game (and algorithm)
asked for. :func:`evaluate_main` is the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import ray

import games
from evaluation import policies as P
from evaluation.datasets import (
    CHOMP_BOARDS,
    FGAME_BETA,
    FGAME_SEEDS,
    FGAME_SHAPES,
    HEX_LABELLED,
    DatasetError,
    committed_file_present,
    load_dataset,
)
from evaluation.engine_suites import engine_match
from evaluation.exact import exact_labels
from evaluation.metrics import state_metrics
from evaluation.network import NetworkModel
from evaluation.oracles import make_oracle
from evaluation.play import game_record, head_to_head, play_vs_oracle, trace_suite
from evaluation.policies import POLICIES
from games import Game, take
from learner.checkpoint import CorruptCheckpointError, load_run_checkpoint
from learner.inference import INFERENCE_DTYPES
from learner.networks import NetworkConfig
from oracle_service.connect4_engines import DEFAULT_ENGINE, ENGINES
from oracle_service.service import OracleClient

INPUT_PARAMS = ("frames",)  # game parameters of the network's input, not of the rules


class CheckpointMismatchError(ValueError):
    """A checkpoint of another game, algorithm or network than asked for."""


@dataclass(frozen=True)
class Suite:
    name: str
    kind: str  # states | play | traces | random | h2h | engine
    dataset: str | None  # a dataset name, or None for labels built in (exact_labels / starts)
    default: bool = True


def suites_for(game: Game) -> list[Suite]:
    """Every suite of ``game``; those with ``default`` run when none are named."""
    name = game.name
    if name == "connect4":
        # Play from every 4-ply opening, both sides, is a default: the solver's 12-ply
        # book answers its early positions in milliseconds, and the oracle's quick wins
        # keep the games short (1,136 games: about 7 min on a cold store, 1 on a warm one).
        # Traces annotate every ply of the agent's self-play, midgames past the book
        # that a new checkpoint mostly leaves unsolved (568 traces: 9 min with the store
        # warm from play); AlphaZero and AZAL runs add them (launch/config.py), as the
        # AZAL paper reports them.
        return [Suite("connect4-uniform", "states", "connect4-uniform"),
                Suite("connect4-eps-optimal", "states", "connect4-eps-optimal"),
                Suite("connect4-play", "play", "connect4-openings"),
                Suite("connect4-traces", "traces", "connect4-openings", default=False),
                Suite("connect4-h2h", "h2h", "connect4-openings", default=False)]
    if name == "chomp":
        board = f"chomp-{game.params['rows']}x{game.params['cols']}"
        if (game.params["rows"], game.params["cols"]) in CHOMP_BOARDS:
            states = Suite(board, "states", board)
        else:
            states = Suite(f"{board}-states", "states", None)
        return [states, Suite(f"{board}-play", "play", None), Suite(f"{board}-traces", "traces", None),
                Suite(f"{board}-h2h", "h2h", None, default=False)]
    if name == "fgame":
        named = [f"fgame-{shape}-{game.params['seed']}" for shape, (h, b) in FGAME_SHAPES.items()
                 if (h, b, FGAME_BETA) == (game.params["depth"], game.params["branching"], game.params["beta"])
                 and game.params["seed"] in FGAME_SEEDS]
        states = Suite(named[0], "states", named[0]) if named else Suite("fgame-states", "states", None)
        return [states, Suite("fgame-play", "play", None),
                Suite("fgame-traces", "traces", None), Suite("fgame-h2h", "h2h", None, default=False)]
    if name == "tictactoe":
        return [Suite("tictactoe-states", "states", None)]
    if name == "hex" and game.params["size"] == 7 and not game.params["swap"]:
        # The weak solver's labels (AVI paper E.3): value error (MAE against +-1, and the
        # sign error) and regret on the 445 uniform states, and play against the oracle
        # from the 128 two-ply openings, both sides (256 games; the error rate counts the
        # games from a won start that the agent loses). They are defaults once their files
        # are built and committed (hours of solver time: evaluation.datasets); until then
        # they run when named, and fail naming the build command. The matches start from
        # the balanced openings once they exist, else from 128 random two-ply positions.
        labelled = all(committed_file_present(n) for n in HEX_LABELLED)
        starts = "hex-openings" if labelled else "hex-random-openings"
        return [Suite("hex-uniform", "states", "hex-uniform", default=labelled),
                Suite("hex-play", "play", "hex-openings", default=labelled),
                Suite("hex-random", "random", starts),
                Suite("hex-traces", "traces", "hex-openings", default=False),
                Suite("hex-h2h", "h2h", starts, default=False)]
    if name in ("hex", "othello", "go"):  # (Hex on another board: matches only, its datasets are 7x7)
        out = [Suite(f"{name}-random", "random", f"{name}-openings"),
               Suite(f"{name}-h2h", "h2h", f"{name}-openings", default=False)]
        # Outside engines over GTP (installed from Debian), on the board they play.
        if name == "go" and game.params["size"] == 9:
            out.append(Suite("go-gnugo", "engine", "go-openings", default=False))
        if name == "othello":
            out.append(Suite("othello-grhino", "engine", "othello-openings", default=False))
        return out
    raise ValueError(f"no evaluation suites for game {name!r}")


def _first_ply_starts(game: Game):
    """Every live position one ply from the start (openings of the small games)."""
    root = game.init(1)
    exp = game.expand(root)
    kids = take(exp.children, np.flatnonzero((exp.legal & ~exp.done)[0]))
    return kids


def suite_opening_moves(game: Game, suite: Suite, load=load_dataset) -> list[list[int]]:
    """The move lists of a play, trace or match suite's starts, in the suite's order: its
    dataset's (Chomp's openings dataset where the board has one), else the first moves
    that do not end the game (``_first_ply_starts``). ``load(name)`` reads a dataset."""
    name = suite.dataset
    if name is None and game.name == "chomp" and (game.params["rows"], game.params["cols"]) in CHOMP_BOARDS:
        name = f"{suite.name.rsplit('-', 1)[0]}-openings"
    if name is None:
        exp = game.expand(game.init(1))
        return [[int(a)] for a in np.flatnonzero((exp.legal & ~exp.done)[0])]
    return [[int(a) for a in moves] for moves in load(name).moves]


def _random_player(game: Game, seed: int):
    rng = np.random.default_rng(seed)
    return lambda states: games.random_legal_actions(game.legal(states), rng)


class SuiteRunner:
    """Evaluates weights of ``net_config`` for ``game`` on ``suites`` (names; None: the
    defaults). ``policy``: auto (greedy for value networks, policy-head argmax for
    policy-value ones), greedy, policy-head, mcts (``simulations``) or minimax
    (``depth``). ``oracle_client``: an ``OracleClient`` whose service answers the
    Connect Four oracle queries of play and trace suites; without one they are solved
    in this process, and ``oracle_store`` says where solved positions are kept
    ("default": the shared store; None: solve without one), and ``oracle_engine`` which engine
    solves (``ours``, or ``bitbully``, the optional AGPL extra). ``max_openings``: play,
    trace and match suites use only the first openings (a cheaper check). ``engine_level``,
    ``engine_tables`` (games at once), ``engine_timeout`` (seconds per engine move),
    ``engine_workers`` (Ray tasks the games are split over; 1: in this process) and
    ``sgf_dir`` (where each game's SGF is kept) are those of the engine suites; ``inference_dtype``
    is the network's inference path (``learner.inference``). ``record_games``: every game of a
    play suite is kept in :attr:`games` (``evaluation.play.game_record``, with its suite and
    number), for ``launch evaluate --games-out`` and the board's replays. ``prior``: a second
    network (an ``evaluation.network.NetworkModel`` with a policy head) whose prior MCTS
    searches with while this network gives the leaf values, the AVI paper's
    cross-inference; both networks' evaluations are counted."""

    def __init__(self, game: Game | str, net_config, *, suites=None, policy: str = "auto", gamma: float = 1.0,
                 simulations: int = 64, depth: int = 2, oracle_store="default", cache_dir=None, seed: int = 0,
                 opponent=None, max_openings: int | None = None, oracle_client=None,
                 oracle_engine: str = DEFAULT_ENGINE, engine_level: int | None = None,
                 engine_tables: int | None = None, engine_timeout: float = 60.0, sgf_dir=None,
                 engine_workers: int = 1, inference_dtype: str = "fp32", record_games: bool = False,
                 prior=None):
        if engine_workers < 1:
            raise ValueError(f"engine_workers must be >= 1, got {engine_workers}")
        self.engine_options = {"level": engine_level, "tables": engine_tables, "timeout": engine_timeout,
                               "sgf_dir": sgf_dir, "workers": int(engine_workers)}
        self.game = games.make(game) if isinstance(game, str) else game
        if isinstance(net_config, dict):
            net_config = NetworkConfig(**net_config)
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if policy == "auto":
            policy = "policy-head" if net_config.policy_head else "greedy"
        if policy == "policy-head" and not net_config.policy_head:
            raise CheckpointMismatchError("policy 'policy-head' needs a network with a policy head "
                                          "(an AlphaZero checkpoint); this one is a value network")
        self.policy, self.gamma, self.simulations, self.depth, self.seed = policy, gamma, simulations, depth, seed
        self.model = NetworkModel(self.game, net_config, inference_dtype=inference_dtype)
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
        self._cache_dir = cache_dir
        self._oracle = None
        self._oracle_store = oracle_store
        self._oracle_client = oracle_client
        self._oracle_engine = oracle_engine
        self._data = {s.name: self._load(s) for s in chosen}
        self._weights = None  # the weights evaluated last (engine suites on Ray rebuild the agent from them)
        self.record_games, self.games = record_games, []
        if max_openings is not None:  # game suites on the first openings only (a cheaper check)
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
        if suite.dataset is None:
            if self.game.name == "chomp" and (self.game.params["rows"], self.game.params["cols"]) in CHOMP_BOARDS:
                return self._states(self._dataset(f"{suite.name.rsplit('-', 1)[0]}-openings"))
            return _first_ply_starts(self.game)
        return self._states(self._dataset(suite.dataset))

    def _weak_labels(self, data) -> bool:
        """Whether a dataset's labels are a weak oracle's (win or loss only: Hex's)."""
        return self.game.name == "hex" and "winning_moves" in data.table.column_names

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
    def policy_spec(self) -> P.PolicySpec:
        return P.PolicySpec(self.policy, self.gamma, self.simulations, self.depth, self.seed)

    def choose(self):
        return self.policy_spec.build(self.game, self.model, self.prior)

    def _remote_choose(self) -> P.NetworkPolicy:
        """What builds this policy in a Ray task: the network's config and current weights."""
        if self.prior is not None:
            raise ValueError("cross-inference plays engine suites in this process only (engine_workers=1)")
        return P.NetworkPolicy(self.game.name, dict(self.game.params), self.model.net_config, self._weights,
                               self.policy_spec, self.model.fast.requested)

    # ---- evaluation ---------------------------------------------------------------

    def _evaluations(self) -> int:
        """Network evaluations so far, the prior's included (cross-inference runs both)."""
        return self.model.evaluations + (self.prior.evaluations if self.prior is not None else 0)

    def evaluate(self, weights: dict[str, np.ndarray] | None = None, *, kinds=None) -> dict:
        """Flat ``eval/<suite>/<metric>`` metrics of ``weights`` (None: the weights set last)
        on the loaded suites of ``kinds`` (None: all of them)."""
        if weights is not None:
            self.model.set_weights(weights)
            self._weights = weights  # for the engine suites' Ray tasks
        out = {}
        for suite in self.suites:
            if kinds is not None and suite.kind not in kinds:
                continue
            data = self._data[suite.name]
            choose = self.choose()
            start, evals = time.perf_counter(), self._evaluations()
            if suite.kind == "states":
                labels, groups = data
                m = state_metrics(labels, choose=choose, value=P.state_value(self.game, self.model.value_obs),
                                  groups=groups, sign_error=self.game.name == "hex")
                decisions = m["states"]
            elif suite.kind == "play":
                played = [] if self.record_games else None
                m = play_vs_oracle(self.game, choose, self.oracle, data, games_out=played)
                if played is not None:
                    openings = suite_opening_moves(self.game, suite, self._dataset)
                    self.games += [game_record(self.game, openings[g["opening"]], g["actions"], g["agent_first"],
                                               g["agent_outcome"], suite=suite.name, number=i, error=g["error"],
                                               blunder=g["blunder"]) for i, g in enumerate(played)]
                decisions = m["agent_moves"]
            elif suite.kind == "traces":
                m = trace_suite(self.game, choose, self.oracle, data)
                decisions = m["plies"]
            elif suite.kind == "engine":
                remote = self._remote_choose() if self.engine_options["workers"] > 1 else None
                m = engine_match(self.game, choose, suite.name, data, make_choose=remote, **self.engine_options)
                decisions = m["agent_moves"]
            else:
                if suite.kind == "random":
                    opponent = _random_player(self.game, self.seed)
                else:
                    opponent = self.opponent
                m = head_to_head(self.game, choose, opponent, data)
                decisions = None
            spent = self._evaluations() - evals
            m["inference_evals"] = spent
            # The value MAE's own pass is not a decision's cost: count the policy's only.
            if suite.kind == "states":
                m["inference_evals"] = spent - m["states"] * self.model.cost
            if decisions:
                m["inference_evals_per_decision"] = m["inference_evals"] / decisions
            m["seconds"] = time.perf_counter() - start
            out.update({f"eval/{suite.name}/{k}": v for k, v in m.items()})
        return out


# ------------------------------------------------------------------ checkpoints


def read_checkpoint(path, game: str | None, algo: str | None = None) -> tuple[Game, dict, dict, dict]:
    """(game, net_config dict, numpy weights, run config) of a ``launch`` checkpoint,
    checked against ``game`` (a name; None: any) and ``algo`` when given."""
    checkpoint = load_run_checkpoint(path)  # CorruptCheckpointError names the file and what it lacks
    learner = checkpoint.learner.learner  # the Learner's own state dict
    if "net" not in learner or "net_config" not in learner:
        raise CheckpointMismatchError(f"checkpoint {path}: holds no learner state (its learner has keys "
                                      f"{sorted(learner)[:6]}); is it a `python -m launch` training checkpoint?")
    config = json.loads(checkpoint.config)
    saved_game, params = learner.get("game"), dict(learner.get("game_params") or {})
    if game is not None and saved_game != game:
        raise CheckpointMismatchError(f"checkpoint {path} is of game {saved_game!r} {params or ''}, "
                                      f"not {game!r}; pass --game {saved_game}")
    saved_algo = config.get("algo", learner.get("loss"))
    if algo is not None and saved_algo != algo:
        raise CheckpointMismatchError(f"checkpoint {path} was trained with algorithm {saved_algo!r}, "
                                      f"not {algo!r}")
    weights = {k: v.detach().cpu().numpy() for k, v in learner["net"].items()}
    return games.make(saved_game, **params), dict(learner["net_config"]), weights, config


def evaluate_checkpoint(path, game: str, suites=None, *, algo: str | None = None, policy: str = "auto",
                        gamma: float | None = None, opponent_checkpoint=None, prior_checkpoint=None,
                        games_out: list | None = None, **kwargs) -> dict:
    """Flat metrics of the checkpoint at ``path`` on ``game``'s suites (see :class:`SuiteRunner`).
    ``gamma``: default the run's own (its config), else 1. ``games_out``, when given,
    receives the record of every game of the play suites. ``prior_checkpoint``: MCTS
    takes its prior from that checkpoint's policy head and its leaf values from this one
    (cross-inference)."""
    g, net_config, weights, config = read_checkpoint(path, game, algo)
    gamma = float(config.get("gamma", 1.0)) if gamma is None else gamma

    def other(checkpoint, role: str):
        og, oconf, ow, oc = read_checkpoint(checkpoint, game)
        if og.params != g.params:
            raise CheckpointMismatchError(f"{role} checkpoint {checkpoint} is of {og!r}, the checkpoint of {g!r}")
        return og, NetworkModel(og, NetworkConfig(**oconf), ow), oc

    opponent = prior = None
    if opponent_checkpoint is not None:
        og, om, oc = other(opponent_checkpoint, "opponent")
        opponent = P.policy_head_policy(og, om) if om.has_policy else P.greedy_policy(
            og, om.value_obs, float(oc.get("gamma", 1.0)))
    if prior_checkpoint is not None:
        _, prior, _ = other(prior_checkpoint, "prior")
    ev = SuiteRunner(g, net_config, suites=suites, policy=policy, gamma=gamma, opponent=opponent,
                     record_games=games_out is not None, prior=prior, **kwargs)
    metrics = ev.evaluate(weights)
    if games_out is not None:
        games_out.extend(ev.games)
    return metrics


def start_oracle_service(replicas: int, store: str | None, engine: str = DEFAULT_ENGINE):
    """(an ``OracleClient`` of ``replicas`` replicas, whether Ray was started here): on
    the Ray this process has, else ``RAY_ADDRESS``'s cluster when set, else an embedded
    one without a dashboard; each replica takes no CPU of its own, since this process
    waits while they work. ``store``: "default" or None for the service's default
    store, or a path / ``redis://`` URL."""
    started = not ray.is_initialized()
    if started:
        ray.init(include_dashboard=False, log_to_driver=False)
    client = OracleClient(replicas, None if store in (None, "default") else store, replica_options={"num_cpus": 0},
                          engine=engine)
    return client, started


def evaluate_main(argv: list[str] | None = None) -> int:
    """``evaluate --checkpoint PATH --game NAME [--suite S ...] [--policy P] [--json]``."""
    parser = argparse.ArgumentParser(prog="python -m launch evaluate",
                                     description="Exact (oracle) and match metrics of a checkpoint.")
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--game", required=True, choices=games.names())
    parser.add_argument("--suite", action="append", help="a suite name (repeatable); default: the game's defaults")
    parser.add_argument("--policy", default="auto", choices=POLICIES)
    parser.add_argument("--algo", help="fail unless the checkpoint was trained with this algorithm")
    parser.add_argument("--simulations", type=int, default=64, help="MCTS simulations per move")
    parser.add_argument("--depth", type=int, default=2, help="minimax depth")
    parser.add_argument("--opponent", type=Path, help="checkpoint of the head-to-head opponent")
    parser.add_argument("--prior", type=Path,
                        help="with --policy mcts: the checkpoint whose policy head gives the search's prior, "
                             "while --checkpoint gives the leaf values (cross-inference, AVI paper 4.3)")
    parser.add_argument("--oracle-store", default="default",
                        help="solved-position store of the Connect Four and Hex oracles (path or redis:// URL; 'none')")
    parser.add_argument("--oracle-replicas", type=int, default=0,
                        help="answer Connect Four and Hex oracle queries with an oracle service of N replicas on Ray "
                             "(the cluster of RAY_ADDRESS, else an embedded one), sharing --oracle-store; "
                             "0 (default): a solver in this process")
    parser.add_argument("--oracle-engine", default=DEFAULT_ENGINE, choices=ENGINES,
                        help="the Connect Four oracle's engine: ours (default), or bitbully (the optional "
                             "AGPL-3.0 extra, a reference)")
    parser.add_argument("--max-openings", type=int, help="play/trace/match suites on the first N openings only")
    parser.add_argument("--engine-level", type=int,
                        help="level of the engine suites' engine (go-gnugo: GNU Go 0..10, default 0; "
                             "othello-grhino: gtp-rhino 1..5, default 1)")
    parser.add_argument("--engine-tables", type=int, help="engine games played at once (default: one per CPU; "
                        "with --engine-workers, per worker, default 1)")
    parser.add_argument("--engine-workers", type=int, default=1,
                        help="split the engine games over N Ray tasks (the cluster at RAY_ADDRESS, else an "
                             "embedded Ray), each with its own engines and copy of the agent (default 1: here)")
    parser.add_argument("--engine-timeout", type=float, default=60.0, help="seconds an engine may take per move")
    parser.add_argument("--sgf-dir", type=Path, help="keep each engine game as SGF, and a JSON line per game, here")
    parser.add_argument("--inference-dtype", default="fp32", choices=INFERENCE_DTYPES,
                        help="the network's inference path (README, Inference precision)")
    parser.add_argument("--games-out", type=Path,
                        help="write every game of the play suites here, one JSON record a line "
                             "(python -m launch play --replay FILE --replay-index N shows one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.oracle_replicas < 0:
        parser.error(f"--oracle-replicas must be >= 0, got {args.oracle_replicas}")
    store = None if args.oracle_store == "none" else args.oracle_store
    if args.engine_workers < 1:
        parser.error(f"--engine-workers must be >= 1, got {args.engine_workers}")
    client, started_ray = start_oracle_service(args.oracle_replicas, store, args.oracle_engine) if args.oracle_replicas else (None, False)
    if args.engine_workers > 1 and not ray.is_initialized():  # RAY_ADDRESS's cluster, else an embedded Ray
        ray.init(include_dashboard=False, log_to_driver=False)
        started_ray = True
    played = [] if args.games_out is not None else None
    try:
        metrics = evaluate_checkpoint(
            args.checkpoint, args.game, args.suite, algo=args.algo, policy=args.policy,
            simulations=args.simulations, depth=args.depth, opponent_checkpoint=args.opponent,
            prior_checkpoint=args.prior,
            oracle_store=store, max_openings=args.max_openings, oracle_client=client,
            oracle_engine=args.oracle_engine, engine_level=args.engine_level, engine_tables=args.engine_tables,
            engine_timeout=args.engine_timeout, sgf_dir=args.sgf_dir, engine_workers=args.engine_workers,
            inference_dtype=args.inference_dtype,
            games_out=played)
        if played is not None:
            args.games_out.write_text("".join(json.dumps(r) + "\n" for r in played))
        if client is not None:
            metrics.update(client.stats_summary())
    except (CorruptCheckpointError, DatasetError, CheckpointMismatchError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
        if started_ray:
            ray.shutdown()
    if args.json:
        print(json.dumps(metrics, sort_keys=True))
    else:
        width = max(map(len, metrics), default=0)
        for k, v in metrics.items():
            print(f"{k:<{width}}  {v:.4g}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    return 0


__all__ = ["CheckpointMismatchError", "Suite", "SuiteRunner", "evaluate_checkpoint", "evaluate_main",
           "read_checkpoint", "suites_for"]
