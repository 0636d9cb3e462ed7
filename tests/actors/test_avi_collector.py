"""The AVI collector (actors/avi.py) without Ray: its targets against values computed
here by hand or by brute force, pass moves in Othello and Go, and environments that go
on across collection calls and through a checkpoint file."""

from __future__ import annotations

import numpy as np
import pytest

import games
from actors.avi import AviCollector
from launch.safe_tree import from_safe, to_safe
from learner.checkpoint import load_checkpoint, save_checkpoint
from tictactoe_boards import negamax, stones


def exact_value_fn(gamma: float):
    """V* of each tic-tac-toe encoding, for its player to move."""
    return lambda obs: np.array([negamax(*stones(o), gamma) for o in obs], np.float32)


def test_the_board_reader_matches_the_engine_s_encoding():
    game = games.make("tictactoe")
    after_centre = game.encode(game.from_moves([[4]]))[0]  # O to move, X in the centre
    assert stones(after_centre) == (0, 1 << 4)


@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_targets_are_the_exact_values_under_the_exact_value_function(gamma):
    """With V = V*, max_a r - gamma V*(child) is V* of the state itself: a sign error on
    the child's value or on the reward, or gamma applied to the reward, breaks it."""
    game = games.make("tictactoe")
    collector = AviCollector(game, 16, epsilon=1.0, gamma=gamma, seed=0)
    rows = collector.collect(exact_value_fn(gamma), steps=30)
    assert rows["obs"].shape == (30 * 16, 2, 3, 3) and rows["obs"].dtype == np.uint8
    expected = np.array([negamax(*stones(o), gamma) for o in rows["obs"]], np.float32)
    np.testing.assert_allclose(rows["target"], expected, atol=1e-6)
    if gamma == 1.0:  # won, drawn and lost positions were all met
        assert {-1.0, 0.0, 1.0} <= set(rows["target"].tolist())
    else:
        assert np.any(np.isclose(np.abs(rows["target"]), 0.9))  # a discounted win or loss
    assert collector.games_finished > 0


def test_greedy_play_on_exact_values_draws_every_game():
    """Epsilon 0 plays argmax q: optimal moves, so every game is a 9-ply draw with value
    0 at every state (argmin q would lose games within 5 plies)."""
    game = games.make("tictactoe")
    collector = AviCollector(game, 4, epsilon=0.0, gamma=1.0, seed=0)
    rows = collector.collect(exact_value_fn(1.0), steps=9)
    assert np.all(rows["target"] == 0.0)
    assert collector.games_finished == 4
    assert [sum(map(int.bit_count, stones(o))) for o in rows["obs"][::4]] == list(range(9))


def start_at(collector: AviCollector, state) -> None:
    """Every environment of ``collector`` at ``state`` (batch 1), through the resume format."""
    saved = collector.get_state()
    saved["envs"] = {name: np.repeat(np.asarray(f), collector.num_envs, axis=0)
                     for name, f in zip(state._fields, state)}
    collector.set_state(saved)


def fixed_value_fn(shape, seed=0):
    """A deterministic stand-in network: tanh of a fixed random projection of the encoding."""
    w = np.random.default_rng(seed).normal(size=int(np.prod(shape))).astype(np.float32)
    return lambda obs: np.tanh(obs.reshape(len(obs), -1) @ w / 4).astype(np.float32)


def same_state(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("name,params,moves,pass_action", [
    # Black's 1st..8th moves; then Black has no placement that flips a disc.
    ("othello", {}, [37, 45, 53, 54, 19, 61, 63, 47], 64),
    # 2x2 Go, Black on the diagonal (a1, b2): each empty point would leave a White stone
    # without liberties and capture nothing (suicide), so White must pass.
    ("go", {"size": 2, "komi": 0.5}, [0, 4, 3], 4),
])
def test_a_forced_pass_is_a_row_and_a_move(name, params, moves, pass_action):
    game = games.make(name, **params)
    position = game.from_moves([moves])
    legal = game.legal(position)[0]
    assert legal[pass_action] and legal.sum() == 1  # only the pass
    value_fn = fixed_value_fn(game.obs_shape)
    collector = AviCollector(game, 2, epsilon=0.5, gamma=0.9, seed=0)
    start_at(collector, position)
    first = collector.step(value_fn)
    after_pass, reward, done = game.step(position, np.array([pass_action]))
    assert not done[0] and reward[0] == 0
    expected = -0.9 * value_fn(game.encode(after_pass))[0]
    np.testing.assert_allclose(first["target"], [expected] * 2, rtol=1e-6)
    np.testing.assert_array_equal(first["obs"], np.repeat(game.encode(position), 2, axis=0).astype(np.uint8))
    assert same_state(collector.state, games.repeat(after_pass, 2))  # the pass was played
    # A pass changes only who is to move: the mover's and opponent's planes swap.
    second = collector.step(value_fn)
    np.testing.assert_array_equal(second["obs"][:, 0], first["obs"][:, 1])
    np.testing.assert_array_equal(second["obs"][:, 1], first["obs"][:, 0])


@pytest.mark.parametrize("komi,target,ends", [(7.0, 1.0, True), (-7.0, -0.5, False)])
def test_a_pass_that_ends_go_scores_the_empty_board(komi, target, ends):
    """Black has passed on the empty 5x5 board; White's pass ends the game, scored by
    area: 0 to 0 plus komi. With komi 7 White wins by passing (q = +1 beats any
    placement's q = -V = -0.5); with komi -7 passing loses (q = -1), a placement is best."""
    game = games.make("go", size=5, komi=komi)
    collector = AviCollector(game, 3, epsilon=0.0, gamma=1.0, seed=0)
    start_at(collector, game.from_moves([[25]]))
    rows = collector.step(lambda obs: np.full(len(obs), 0.5, np.float32))
    np.testing.assert_allclose(rows["target"], [target] * 3)
    assert collector.games_finished == (3 if ends else 0)
    if ends:  # finished games start again
        assert same_state(collector.state, game.init(3))
    else:
        assert np.all(collector.state.board[:, 0] == 2)  # White took the first point


@pytest.mark.parametrize("archive_start", [0.0, 0.5])
def test_environments_go_on_across_calls_and_through_a_checkpoint_file(tmp_path, archive_start):
    """Twelve steps in one call, in two calls (5 + 7), and in two calls with the state saved
    to a checkpoint file between them and loaded into a collector seeded differently:
    the same rows, and the same games finished. With archive starts, the archive of
    states played goes through the file too (games restart from it after the resume)."""
    game = games.make("tictactoe")
    value_fn = fixed_value_fn(game.obs_shape)

    def collector_for(seed):
        return AviCollector(game, 8, epsilon=0.5, gamma=1.0, seed=seed, archive_start=archive_start, archive_size=20)

    straight = collector_for(1)
    whole = straight.collect(value_fn, 12)

    split = collector_for(1)
    parts = [split.collect(value_fn, 5), split.collect(value_fn, 7)]
    for key in whole:
        np.testing.assert_array_equal(np.concatenate([p[key] for p in parts]), whole[key])

    before = collector_for(1)
    first = before.collect(value_fn, 5)
    path = save_checkpoint(tmp_path / "ckpt.pt", {"actors": to_safe([before.get_state()])})
    resumed = collector_for(99)
    resumed.set_state(from_safe(load_checkpoint(path)["actors"])[0])
    rest = resumed.collect(value_fn, 7)
    for key in whole:
        np.testing.assert_array_equal(np.concatenate([first[key], rest[key]]), whole[key])
    assert resumed.games_finished == straight.games_finished > 0
    assert same_state(resumed.state, straight.state)
    if archive_start:
        assert straight.archive.drawn > before.archive.drawn  # games restarted from the archive after step 5
        assert resumed.archive.drawn == straight.archive.drawn and resumed.archive.seen == straight.archive.seen
        assert same_state(resumed.archive.states, straight.archive.states)
