"""The AlphaZero collector (actors/alphazero.py) without Ray: every state of a finished
game gets the outcome for its own player to move (checked from the boards, not from
ply counts), passes in Othello and Go are moves of the trajectory, and games in
progress go on across collection calls and through a checkpoint file."""

from __future__ import annotations

import numpy as np
import pytest

import games
from actors.alphazero import AlphaZeroCollector
from launch.safe_tree import from_safe, to_safe
from learner.checkpoint import load_checkpoint, save_checkpoint
from search.evaluators import UniformEvaluator
from search.mcts import MCTSConfig
from tictactoe_boards import makes_line, stones

SEARCH = MCTSConfig(simulations=4)  # noise and temperature 1: varied games


def last_mover_outcome(obs: np.ndarray) -> float:
    """The outcome for the player to move in the last state of a finished tic-tac-toe
    game, from that board alone: a game ends on a win or on the ninth stone, so with
    two or more empty cells the last move won; with one, it won if it made a line."""
    mine, theirs = stones(obs)
    empty = [c for c in range(9) if not (mine | theirs) >> c & 1]
    wins = [c for c in empty if makes_line(mine | 1 << c)]
    assert wins or len(empty) == 1, "a game over with two free cells must have ended on a win"
    return 1.0 if wins else 0.0


def split_games(obs: np.ndarray) -> list[slice]:
    """The rows of each tic-tac-toe game: a game's rows are consecutive and start on the
    empty board."""
    starts = [i for i, o in enumerate(obs) if not o.any()] + [len(obs)]
    assert starts[0] == 0
    return [slice(a, b) for a, b in zip(starts, starts[1:])]


def test_every_state_gets_the_outcome_for_its_own_player_to_move():
    game = games.make("tictactoe")
    collector = AlphaZeroCollector(game, 16, mcts=SEARCH, seed=0)
    rows = collector.collect(UniformEvaluator(game), steps=40)
    games_seen = split_games(rows["obs"])
    assert len(games_seen) == collector.games_finished >= 40
    outcomes = set()
    for g in games_seen:
        obs, target = rows["obs"][g], rows["target"][g]
        counts = [stones(o) for o in obs]
        # Consecutive plies from the start: one more stone per row.
        assert [m.bit_count() + t.bit_count() for m, t in counts] == list(range(len(obs)))
        assert 5 <= len(obs) <= 9
        z = last_mover_outcome(obs[-1])
        last_is_x = len(obs) % 2 == 1  # X moves on plies 0, 2, ...: X made the last move of an odd game
        for (mine, theirs), t in zip(counts, target):
            x_to_move = mine.bit_count() == theirs.bit_count()  # X to move: as many stones as O
            assert t == (z if x_to_move == last_is_x else -z)
        outcomes.add(z)
    assert outcomes == {0.0, 1.0}  # draws and wins were both met
    # The policy targets are visit distributions over the legal moves.
    np.testing.assert_allclose(rows["policy"].sum(axis=1), 1.0, rtol=1e-5)
    occupied = rows["obs"].reshape(len(rows["obs"]), 2, 9).any(axis=1)
    assert not rows["policy"][occupied].any()


def start_at(collector: AlphaZeroCollector, state) -> None:
    """Every environment of ``collector`` at ``state`` (batch 1), with empty trajectories,
    through the resume format: its games' rows start there."""
    saved = collector.get_state()
    saved["envs"] = {name: np.repeat(np.asarray(f), collector.num_envs, axis=0)
                     for name, f in zip(state._fields, state)}
    collector.set_state(saved)


def steps_until_rows(collector, evaluate, limit: int = 50) -> dict:
    for _ in range(limit):
        rows = collector.step(evaluate)
        if len(rows["target"]):
            return rows
    raise AssertionError(f"no game ended within {limit} steps")


# White to move after these 57 placements must pass; Black's only reply (b7, 49) ends
# the game, 39 discs to 23.
OTHELLO_ENDGAME = [44, 29, 21, 13, 26, 25, 14, 15, 37, 43, 18, 38, 32, 52, 50, 20, 45, 46, 12, 19, 11, 10, 17,
                   24, 4, 5, 2, 40, 61, 42, 3, 59, 55, 57, 33, 9, 54, 34, 60, 53, 51, 63, 8, 1, 0, 39, 16, 62,
                   31, 23, 48, 30, 41, 47, 6, 58, 22]


def test_an_othello_pass_is_a_ply_of_the_trajectory():
    game = games.make("othello")
    position = game.from_moves([OTHELLO_ENDGAME])
    assert np.flatnonzero(game.legal(position)[0]).tolist() == [64]  # only the pass
    after_pass, _, _ = game.step(position, np.array([64]))
    (reply,) = np.flatnonzero(game.legal(after_pass)[0])
    final, _, done = game.step(after_pass, np.array([reply]))
    assert done[0]
    # The winner by disc count, from the final board; ``player`` holds the discs of ``to_play``.
    player, opponent = int(final.player[0]).bit_count(), int(final.opponent[0]).bit_count()
    winner = int(final.to_play[0]) if player > opponent else 1 - int(final.to_play[0])
    assert player != opponent

    collector = AlphaZeroCollector(game, 1, mcts=SEARCH, seed=0)
    start_at(collector, position)
    rows = steps_until_rows(collector, UniformEvaluator(game))
    np.testing.assert_array_equal(rows["obs"], game.encode(games.concat([position, after_pass])).astype(np.uint8))
    colours = [int(position.to_play[0]), int(after_pass.to_play[0])]
    assert rows["target"].tolist() == [1.0 if c == winner else -1.0 for c in colours]
    assert rows["policy"][0].argmax() == 64 and rows["policy"][0, 64] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(6))
def test_go_passes_keep_each_state_with_its_colour(seed):
    """2x2 Go from a position where White must pass (Black on a1 and b2: either empty
    point is suicide for White), komi 0.5 so no game is drawn. The encoding's third
    plane says whether Black is to move: rows of one colour share the outcome, the
    other colour's rows have its negative, passes (a board that does not change)
    included."""
    game = games.make("go", size=2, komi=0.5)
    position = game.from_moves([[0, 4, 3]])
    assert np.flatnonzero(game.legal(position)[0]).tolist() == [4]
    collector = AlphaZeroCollector(game, 1, mcts=SEARCH, seed=seed)
    start_at(collector, position)
    rows = steps_until_rows(collector, UniformEvaluator(game))
    obs, target = rows["obs"], rows["target"]
    np.testing.assert_array_equal(obs[0], game.encode(position)[0])
    black_to_move = obs[:, 2].all(axis=(1, 2))  # [n]
    assert not black_to_move[0] and np.all(black_to_move[1:] != black_to_move[:-1])  # colours alternate
    assert np.all(np.abs(target) == 1.0)
    assert len(set(target[black_to_move].tolist())) == 1 and len(set(target[~black_to_move].tolist())) == 1
    assert target[0] == -target[1]
    # The first move was White's pass: the stones stay, only the side to move changes.
    np.testing.assert_array_equal(obs[1, 0], obs[0, 1])
    np.testing.assert_array_equal(obs[1, 1], obs[0, 0])


@pytest.mark.parametrize("archive_start", [0.0, 0.5])
def test_games_in_progress_go_on_across_calls_and_through_a_checkpoint_file(tmp_path, archive_start):
    """Three moves give no finished tic-tac-toe game; the games go on in the next call
    and their rows start at ply 0. Ten moves in one call, in two calls (3 + 7), and in
    two calls with the state saved to a checkpoint file between them and loaded into a
    collector seeded differently: the same rows. With archive starts, the archive of
    states searched goes through the file too (games restart from it after the resume)."""
    game = games.make("tictactoe")
    evaluate = UniformEvaluator(game)

    def collector_for(seed):
        return AlphaZeroCollector(game, 8, mcts=SEARCH, seed=seed, archive_start=archive_start, archive_size=10)

    straight = collector_for(1)
    whole = straight.collect(evaluate, 10)
    assert straight.games_finished > 0

    split = collector_for(1)
    first = split.collect(evaluate, 3)
    assert len(first["target"]) == 0 and split.games_finished == 0
    second = split.collect(evaluate, 7)
    for key in whole:
        np.testing.assert_array_equal(second[key], whole[key])
    assert not second["obs"][0].any()  # a game begun in the first call, from its first state

    before = collector_for(1)
    before.collect(evaluate, 3)
    path = save_checkpoint(tmp_path / "ckpt.pt", {"actors": to_safe([before.get_state()])})
    resumed = collector_for(99)
    resumed.set_state(from_safe(load_checkpoint(path)["actors"])[0])
    rest = resumed.collect(evaluate, 7)
    for key in whole:
        np.testing.assert_array_equal(rest[key], whole[key])
    assert resumed.games_finished == straight.games_finished
    if archive_start:
        assert straight.archive.drawn > 0  # games restarted from the archive after the resume point
        assert resumed.archive.drawn == straight.archive.drawn and resumed.archive.seen == straight.archive.seen
        assert all(np.array_equal(x, y) for x, y in zip(resumed.archive.states, straight.archive.states))
