"""A new game is one file: a toy game (a pile of stones, take one or two, who takes the
last one wins) written to a temporary module with its engine, its exact solver, its
descriptor (registered with ``games.register``) and its entries in the evaluation's
per-game tables (its oracle, exact labels and suites, each added to its table with
``register``), and then trained by AVI, evaluated against its own oracle and shown on the
board through the project's own pieces, with no edit anywhere else: adding a game
touches its own file only."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

import games

PILE_STATES = 7  # the toy's live positions: 1 to 7 stones

TOY_MODULE = '''
"""Pile: PILE stones, each move takes one or two (actions 0, 1), the player who takes the
last stone wins. A pile that is a multiple of 3 is lost for the mover."""
from typing import NamedTuple

import numpy as np

from evaluation.exact import EXACT_LABELS
from evaluation.labels import label_states
from evaluation.oracles import ORACLES, Analysis, Oracle, OracleEntry
from evaluation.suites import SUITES, GameSuites, Suite
from games import Expansion, Game, GameDescriptor

PILE = 7


class PileState(NamedTuple):
    pile: np.ndarray  # int64[B], stones left
    moves: np.ndarray  # int64[B], plies played


class Pile(Game):
    def __init__(self):
        self.name, self.params = "pile", {}
        self.num_actions, self.obs_shape, self.max_length = 2, (PILE + 1,), PILE

    def _init(self, batch):
        return PileState(np.full(batch, PILE, np.int64), np.zeros(batch, np.int64))

    def _legal(self, state):
        return state.pile[:, None] >= np.arange(1, 3)[None, :]

    def _step(self, state, actions):
        pile = state.pile - (actions + 1)
        done = pile == 0
        return PileState(pile, state.moves + 1), done.astype(np.float32), done

    def _encode(self, state):
        return np.eye(PILE + 1, dtype=np.float32)[state.pile]

    def terminal(self, state):
        return state.pile == 0

    def render_one(self, state, i):
        return f"{int(state.pile[i])} stones"


def solved_values(states) -> np.ndarray:
    """The toy's own exact solver: V* for the mover of each live state."""
    return np.where(np.asarray(states.pile) % 3 == 0, -1.0, 1.0).astype(np.float32)


class PileOracle(Oracle):
    for_game, strong = "pile", False

    def __init__(self, game, **_options):
        self._check_game(game)
        self.game, self.order = game, np.arange(2, dtype=np.int64)

    def analyze(self, states):
        exp = self.game.expand(states)
        child = np.where(exp.done, -1.0, solved_values(exp.children).reshape(exp.legal.shape))
        q = np.where(exp.legal, -child, -np.inf).astype(np.float32)
        value = q.max(axis=1)
        best = exp.legal & (q == value[:, None])
        return Analysis(value, q, q.copy(), best, np.ones(len(value), bool))


def every_live_state(game):
    return PileState(np.arange(1, PILE + 1, dtype=np.int64), np.zeros(PILE, np.int64))


def pile_labels(game, gamma):
    return label_states(game, every_live_state(game), solved_values) if gamma == 1.0 else None


def pile_suites(game):
    return [Suite("pile-states", "states", None), Suite("pile-play", "play", None)]


DESCRIPTOR = GameDescriptor(name="pile", engine=Pile, network=dict(kind="mlp", width=32, blocks=1, layers_per_block=1))

# Its entries in the tables of the package that evaluates games (theirs, keyed by its name).
ENTRIES = [(ORACLES, OracleEntry(PileOracle)), (EXACT_LABELS, pile_labels), (SUITES, GameSuites(pile_suites))]
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy game's module, imported from a temporary file and registered."""
    (tmp_path / "pile_game.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("pile_game")
    games.register(module.DESCRIPTOR)
    for table, entry in module.ENTRIES:
        table.register("pile", entry)
    yield module
    for table, _ in module.ENTRIES:
        table.unregister("pile")
    games.unregister("pile")
    sys.modules.pop("pile_game", None)


def test_the_toy_game_is_made_and_described_by_its_name(toy):
    from actors.labels import LABELLERS
    from evaluation.oracles import ORACLES

    assert "pile" in games.names() and games.descriptor("pile") is toy.DESCRIPTOR
    game = games.make("pile")
    assert isinstance(game, toy.Pile) and ORACLES.need(game).make is toy.PileOracle
    with pytest.raises(ValueError, match="game 'pile' is already registered"):
        games.register(toy.DESCRIPTOR)
    with pytest.raises(ValueError, match="game 'pile' already has its exact oracle"):
        ORACLES.register("pile", toy.ORACLES.need("pile"))
    with pytest.raises(ValueError, match="game 'pile' has no AZAL label source"):
        LABELLERS.need(game)


def _train(game, iterations: int):
    """A short AVI run with the project's collector, replay and learner (as
    ``examples/avi_minimal.py`` wires them), on the network of the game's descriptor."""
    from actors.avi import AviCollector
    from learner.learner import Learner
    from inference.network import ValueFunction
    from inference.networks import preset_network
    from replay.buffer import RingBuffer
    from replay.rows import avi_schema

    network = preset_network(game.name)
    learner = Learner(game, network, lr=3e-3, seed=0)
    value_fn = ValueFunction(game, network)
    value_fn.set_weights(learner.get_weights(), 0)
    collector = AviCollector(game, 32, epsilon=0.3, gamma=1.0, seed=0)
    replay = RingBuffer(avi_schema(game.obs_shape), 4096, seed=0)
    for version in range(1, iterations + 1):
        rows = collector.collect(value_fn, 4)
        rows["version"] = np.full(len(rows["target"]), version - 1, np.int64)
        replay.add(rows)
        for _ in range(8):
            learner.train_step(replay.sample(64))
        value_fn.set_weights(learner.get_weights(), version)
    return value_fn, collector


def test_the_toy_game_trains_and_is_evaluated_by_its_own_oracle(toy):
    from evaluation.exact import exact_labels, greedy_q, value_metrics
    from evaluation.oracles import make_oracle
    from evaluation.play import play_vs_oracle
    from evaluation.suites import suite_opening_moves, suites_for

    game = games.make("pile")
    trained, collector = _train(game, iterations=60)
    assert collector.games_finished > 0

    labels = exact_labels(game)  # the toy's solver, through its entry in EXACT_LABELS
    assert labels is not None and labels.v_star.tolist() == [1, 1, -1, 1, 1, -1, 1]
    learned = value_metrics(game, labels, trained)
    assert learned["value_mae"] < 0.2 and learned["optimal_move_rate"] == 1.0, learned

    suites = {s.name: s for s in suites_for(game)}
    assert set(suites) == {"pile-states", "pile-play"}
    oracle = make_oracle(game)
    assert isinstance(oracle, toy.PileOracle)
    starts = game.from_moves(suite_opening_moves(game, suites["pile-play"]))
    greedy = lambda states: greedy_q(game, states, trained).argmax(axis=1)  # noqa: E731
    played = play_vs_oracle(game, greedy, oracle, starts)
    # Both starts (6 and 5 stones left) are played from both sides: a perfect agent wins
    # every won start and makes no error.
    assert played["error_rate"] == 0.0 and played["move_match_rate"] == 1.0, played


def test_the_toy_game_is_shown_on_the_board_with_its_oracle(toy):
    from board.session import Session, Table
    from tests.board.conftest import ScriptedAgent

    game = games.make("pile")
    table = Table(game, ScriptedAgent([0], game), oracle=Table.oracle_for(game))
    assert isinstance(table.oracle, toy.PileOracle)
    session = Session(table, human=0)
    s = session.to_json()
    assert s["board"] is None and s["legal"] == [0, 1]  # no drawing: board.grid.GRIDS has no entry for it
    position = s["oracle"]["position"]
    # 7 stones: taking one leaves 6 (a multiple of 3, lost for the opponent): the only best move.
    assert position["value"] == 1.0 and position["moves"]["0"]["best"] and not position["moves"]["1"]["best"]


def test_the_toy_game_has_presets_and_is_scored_by_the_suite_runner(toy):
    """Its presets come from its descriptor (Table 3 with its network), and the suite
    runner scores a network on its suites against its own oracle: no edit elsewhere."""
    from evaluation.config import EvaluationConfig
    from evaluation.runner import SuiteRunner
    from launch.config import resolve
    from learner.learner import Learner

    config = resolve("pile", "small", algo="avi")
    assert (config.game, config.network.width, config.actors.num_envs) == ("pile", 32, 64)
    game = games.make("pile")
    runner = SuiteRunner(game, config.network, evaluation=EvaluationConfig(), oracle_store=None)
    assert [s.name for s in runner.suites] == ["pile-states", "pile-play"]
    metrics = runner.evaluate(Learner(game, config.network, seed=0).get_weights())
    assert 0.0 <= metrics["eval/pile-states/value_mae"] <= 2.0
    assert metrics["eval/pile-states/states"] == PILE_STATES
    assert 0.0 <= metrics["eval/pile-play/error_rate"] <= 1.0
    with pytest.raises(Exception, match="algo azal needs an oracle that labels optimal moves"):
        resolve("pile", "small", algo="azal")  # actors.labels.LABELLERS has no label source for it
