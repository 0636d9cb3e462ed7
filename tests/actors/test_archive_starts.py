"""Archive starts (actors/archive.py, ``archive_start``): the archive is a uniform sample of
the states offered to it; fresh games start from it with the configured probability;
in the AVI and AlphaZero collectors every such start is a state the collector played,
AlphaZero's rows of those games get their own outcome, AZAL's their own position's oracle
labels, and the archive goes through a checkpoint file."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import games
from actors.alphazero import AlphaZeroCollector
from actors.archive import StateArchive
from actors.avi import AviCollector
from actors.config import SelfPlayConfig
from actors.labels import SMOOTHING, OracleLabeler
from algorithms.azal import AzalCollector
from launch.config import resolve
from launch.safe_tree import from_safe, to_safe
from learner.checkpoint import load_checkpoint, save_checkpoint
from oracle_service.chomp_grundy import ChompTable
from oracle_service.service import OracleWorker
from search.evaluators import UniformEvaluator
from search.mcts import MCTSConfig
from tictactoe_boards import makes_line, stones


class Tagged(NamedTuple):
    """A stand-in state whose rows say which offer they were."""

    tag: np.ndarray  # int64[B]
    pair: np.ndarray  # int64[B, 2], (tag, -tag): a second field kept in step


def tagged(first: int, n: int) -> Tagged:
    tags = np.arange(first, first + n, dtype=np.int64)
    return Tagged(tags, np.stack([tags, -tags], axis=1))


def fixed_value_fn(shape, seed=0):
    w = np.random.default_rng(seed).normal(size=int(np.prod(shape))).astype(np.float32)
    return lambda obs: np.tanh(obs.reshape(len(obs), len(w)) @ w / 4).astype(np.float32)


def test_the_reservoir_keeps_a_uniform_sample_of_every_offer():
    """1,000 offers in batches of uneven sizes, capacity 50: each offer is kept with
    probability 1/20 whether it came early or late (binomial bounds over 300 archives),
    no offer is held twice, and the fields of a row stay together."""
    trials, offers, capacity = 300, 1000, 50
    kept = np.zeros(offers, np.int64)
    batches = [1, 7, 42, 100, 350, 500]  # sums to 1000; the first fill the reservoir
    for t in range(trials):
        archive = StateArchive(probability=1.0, capacity=capacity, seed=t)
        first = 0
        for n in batches:
            archive.add(tagged(first, n))
            first += n
        held = archive.states.tag[:archive.size]
        assert archive.size == capacity and len(set(held.tolist())) == capacity
        np.testing.assert_array_equal(archive.states.pair[:, 0], archive.states.tag)
        np.testing.assert_array_equal(archive.states.pair[:, 1], -archive.states.tag)
        kept[held] += 1
    p = capacity / offers
    for block in np.split(kept, 10):  # offers 0-99, 100-199, ...: each block held alike
        expected = len(block) * trials * p
        assert abs(block.sum() - expected) < 4 * np.sqrt(expected * (1 - p)), (block.sum(), expected)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_fresh_starts_come_from_the_archive_with_probability_p(p):
    """Of 4,000 restarting rows, the number that start at an archived state lies within a
    binomial bound of 4,000 p; the rows that do not restart, and the others, are the fresh
    state; every draw is an archived state."""
    archive = StateArchive(probability=p, capacity=100, seed=1)
    fresh = Tagged(np.full(6000, -1, np.int64), np.full((6000, 2), -1, np.int64))
    assert archive.starts(fresh, np.ones(6000, bool)) is fresh  # empty: nothing to draw
    archive.add(tagged(0, 300))
    restart = np.zeros(6000, bool)
    restart[:4000] = True
    starts = archive.starts(fresh, restart)
    from_archive = starts.tag != -1
    assert not from_archive[4000:].any()
    assert set(starts.tag[from_archive].tolist()) <= set(archive.states.tag.tolist())
    n = int(from_archive.sum())
    assert abs(n - 4000 * p) <= 4 * np.sqrt(4000 * p * (1 - p)), n
    assert archive.drawn == n


def keys_of(state) -> set[bytes]:
    return set(games.state_keys(state))


def test_avi_restarts_at_states_it_played():
    """Tic-tac-toe AVI with archive_start=1: once the archive holds states, every game that
    ends restarts at a state some environment played earlier (by state key), many of them
    past the opening, and the archive holds played states only."""
    game = games.make("tictactoe")
    value_fn = fixed_value_fn(game.obs_shape)
    collector = AviCollector(game, 16, epsilon=0.5, gamma=1.0, seed=0, archive_start=1.0, archive_size=64)
    played, restarts = set(), []
    for _ in range(60):
        before = collector.state
        played |= keys_of(before)
        exp = game.expand(before)
        collector.step(value_fn)
        after = games.state_keys(collector.state)
        for b in range(16):
            children = {k for a, k in enumerate(games.state_keys(games.take(exp.children, slice(b * 9, b * 9 + 9))))
                        if exp.legal[b, a] and not exp.done[b, a]}
            if after[b] not in children:  # not a move of this game: a fresh start
                restarts.append(after[b])
    assert len(restarts) > 50
    assert all(k in played for k in restarts)
    empty = games.state_keys(game.init(1))[0]
    assert sum(k != empty for k in restarts) > len(restarts) / 2
    assert keys_of(games.take(collector.archive.states, slice(0, collector.archive.size))) <= played


def last_mover_outcome(obs: np.ndarray) -> float:
    """The outcome for the player to move in the last state of a finished tic-tac-toe game:
    a game ends on a win or on the ninth stone."""
    mine, theirs = stones(obs)
    empty = [c for c in range(9) if not (mine | theirs) >> c & 1]
    return 1.0 if any(makes_line(mine | 1 << c) for c in empty) else 0.0


def test_alphazero_games_from_the_archive_get_their_own_outcome():
    """Tic-tac-toe AlphaZero with archive_start=1: each finished game's rows are the states
    its environment searched since its last fresh start, that start a state played earlier;
    each row's target is the game's outcome for its own player to move (from the boards)."""
    game = games.make("tictactoe")
    collector = AlphaZeroCollector(game, 8, mcts=MCTSConfig(simulations=4), seed=0, archive_start=1.0,
                                   archive_size=32)
    evaluate = UniformEvaluator(game)
    played, since_start = set(), [[] for _ in range(8)]
    starts_checked = mid_game_starts = 0
    for step in range(80):
        obs = game.encode(collector.state).astype(np.uint8)
        keys = games.state_keys(collector.state)
        for b in range(8):
            if not since_start[b]:  # a fresh start: the first, or a state played earlier
                if step > 0:
                    assert keys[b] in played
                    starts_checked += 1
                    mid_game_starts += bool(obs[b].any())
            since_start[b].append(obs[b])
        played |= set(keys)
        rows = collector.step(evaluate)
        ended = np.flatnonzero(collector.traj_len == 0)
        expected = [o for b in ended for o in since_start[b]]
        np.testing.assert_array_equal(rows["obs"], np.array(expected, np.uint8).reshape(-1, 2, 3, 3))
        i = 0
        for b in ended:
            game_obs = since_start[b]
            z = last_mover_outcome(game_obs[-1])
            last = stones(game_obs[-1])
            last_mover_is_x = last[0].bit_count() == last[1].bit_count()
            for o in game_obs:
                mine, theirs = stones(o)
                x_to_move = mine.bit_count() == theirs.bit_count()
                assert rows["target"][i] == (z if x_to_move == last_mover_is_x else -z)
                i += 1
            since_start[b] = []
    assert starts_checked > 30 and mid_game_starts > starts_checked / 2


@pytest.mark.parametrize("p", [0.0, 0.5])
def test_the_collectors_own_draws_are_those_of_a_collector_without_archive(p):
    """The archive draws from its own generator: until the first game starts from it, the
    collector's rows are those of archive_start=0 (AlphaZero and AVI); with p = 0 always."""
    game = games.make("tictactoe")
    evaluate = UniformEvaluator(game)
    plain = AlphaZeroCollector(game, 8, mcts=MCTSConfig(simulations=4), seed=2)
    archived = AlphaZeroCollector(game, 8, mcts=MCTSConfig(simulations=4), seed=2, archive_start=p)
    assert (archived.archive is None) == (p == 0)
    for _ in range(40):
        drawn = 0 if archived.archive is None else archived.archive.drawn
        a, b = plain.step(evaluate), archived.step(evaluate)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        if archived.archive is not None and archived.archive.drawn > drawn:
            break
    else:
        assert p == 0
    value_fn = fixed_value_fn(game.obs_shape)
    plain_avi = AviCollector(game, 8, epsilon=0.5, gamma=1.0, seed=2)
    archived_avi = AviCollector(game, 8, epsilon=0.5, gamma=1.0, seed=2, archive_start=p)
    for _ in range(40):
        drawn = 0 if archived_avi.archive is None else archived_avi.archive.drawn
        a, b = plain_avi.step(value_fn), archived_avi.step(value_fn)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        if archived_avi.archive is not None and archived_avi.archive.drawn > drawn:
            break
    else:
        assert p == 0


def test_the_settings_are_checked_by_name():
    with pytest.raises(ValueError, match=r"archive_start must lie in \[0, 1\]"):
        SelfPlayConfig(archive_start=1.5)
    with pytest.raises(ValueError, match="archive_size must be >= 1"):
        SelfPlayConfig(archive_size=0)
    with pytest.raises(ValueError, match="moves must be given exactly when the archive keeps them"):
        StateArchive(probability=1.0, capacity=4, seed=0, moves=3).add(tagged(0, 2))
    with pytest.raises(ValueError, match="this archive keeps no moves"):
        StateArchive(probability=1.0, capacity=4, seed=0).starts_with_moves(tagged(0, 2), np.ones(2, bool))
    for algo in ("alphazero", "azal"):
        assert resolve("connect4", algo=algo, overrides=["actors.archive_start=0.5"]).actors.archive_start == 0.5


def test_the_archive_keeps_each_states_moves_beside_it():
    """An archive made with ``moves`` returns, for every row it starts, the moves it was
    offered with that very state (the tags say which), and none for a fresh start; the
    same draws as :meth:`starts` of an archive without moves, seeded alike."""
    with_moves = StateArchive(probability=0.5, capacity=50, seed=3, moves=4)
    without = StateArchive(probability=0.5, capacity=50, seed=3)
    for first in range(0, 400, 40):
        batch = tagged(first, 40)
        moves = np.stack([batch.tag % 7, batch.tag % 5, np.full(40, -1), np.full(40, -1)], axis=1)
        with_moves.add(batch, moves)
        without.add(batch)
    fresh = Tagged(np.full(200, -1, np.int64), np.zeros((200, 2), np.int64))
    restart = np.arange(200) % 3 != 0
    starts, moves = with_moves.starts_with_moves(fresh, restart)
    np.testing.assert_array_equal(starts.tag, without.starts(fresh, restart).tag)
    drawn = starts.tag != -1
    assert 50 < drawn.sum() < 150 and not drawn[~restart].any()
    np.testing.assert_array_equal(moves[drawn, 0], starts.tag[drawn] % 7)
    np.testing.assert_array_equal(moves[drawn, 1], starts.tag[drawn] % 5)
    assert (moves[drawn, 2:] == -1).all() and (moves[~drawn] == -1).all()


def chomp_azal(tmp_path, seed, *, archive_start=1.0, archive_size=64):
    game = games.make("chomp", rows=4, cols=5)
    labeler = OracleLabeler(game, OracleWorker(store=str(tmp_path / f"s{seed}.sqlite"), chomp_cache_dir=str(tmp_path)))
    return AzalCollector(game, 8, mcts=MCTSConfig(simulations=4), seed=seed, labeler=labeler,
                              archive_start=archive_start, archive_size=archive_size)


def test_azal_games_from_the_archive_are_labelled_at_their_own_positions(tmp_path):
    """Chomp 4x5 AZAL with archive_start=1: most games start in mid-game from the archive,
    and every row's oracle target is that of the row's own position, read from its board
    and looked up in a Grundy table made apart from the labeller (the moves to a Grundy-0
    position; none where there is none). Labels asked by the moves since the game's own
    start would name other positions."""
    collector = chomp_azal(tmp_path, seed=0)
    rows = collector.collect(UniformEvaluator(collector.game), 60)
    assert collector.archive.drawn > 20
    game, table = collector.game, ChompTable(4, 5, cache_dir=str(tmp_path / "apart"))
    profiles = rows["obs"][:, 0].sum(axis=2)  # [N, rows]: squares left in each row
    legal = game.legal(game.from_profiles(profiles.tolist()))
    labelled = 0
    for i, profile in enumerate(profiles.tolist()):
        winning = table.winning_actions(profile)
        expected = np.zeros(game.num_actions)
        if winning:
            expected = np.where(legal[i], SMOOTHING, 0.0)
            expected[winning] += 1.0
            expected /= expected.sum()
            labelled += 1
        np.testing.assert_allclose(rows["aux_policy"][i], expected, rtol=1e-5, err_msg=f"row {i}, {profile}")
    assert labelled > len(profiles) / 3
    archived = np.asarray(collector.archive.states.profile[:collector.archive.size]).sum(axis=1)
    assert (archived < 4 * 5).mean() > 0.5  # the starts drawn are mostly past the opening


def test_azal_games_from_the_archive_go_on_through_a_checkpoint_file(tmp_path):
    """AZAL with archive starts, 12 moves in one call, and 6 + 6 with the collector's state
    saved to a checkpoint file and loaded into a collector seeded differently, at a point
    where games started from the archive are in progress: the same rows and labels."""
    straight = chomp_azal(tmp_path, seed=1, archive_start=0.5)
    evaluate = UniformEvaluator(straight.game)
    whole = straight.collect(evaluate, 12)
    before = chomp_azal(tmp_path, seed=1, archive_start=0.5)
    first = before.collect(evaluate, 6)
    assert (before.start_moves >= 0).any(axis=1).sum() > 0  # games from the archive in progress
    path = save_checkpoint(tmp_path / "ckpt.pt", {"actors": to_safe([before.get_state()])})
    resumed = chomp_azal(tmp_path, seed=99, archive_start=0.5)
    resumed.set_state(from_safe(load_checkpoint(path)["actors"])[0])
    rest = resumed.collect(evaluate, 6)
    for key in whole:
        np.testing.assert_array_equal(np.concatenate([first[key], rest[key]]), whole[key], err_msg=key)
    assert resumed.archive.drawn == straight.archive.drawn > before.archive.drawn
