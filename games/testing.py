"""Checks that every engine must pass, for tests of the engines and of new games."""

from __future__ import annotations

import numpy as np

from games.base import Game, State, random_legal_actions, random_play, take


def assert_states_equal(a: State, b: State, msg: str = "") -> None:
    assert type(a) is type(b), f"{msg}: {type(a).__name__} != {type(b).__name__}"
    for field, x, y in zip(a._fields, a, b):
        np.testing.assert_array_equal(x, y, err_msg=f"{msg} field {field}")


def assert_expand_matches_step(game: Game, state: State, msg: str = "") -> None:
    """``game.expand(state)`` equals stepping every legal action of every element one
    by one through the checked API; illegal actions carry no reward and no done."""
    exp = game.expand(state)
    legal = game.legal(state)
    A = game.num_actions
    np.testing.assert_array_equal(exp.legal, legal, err_msg=f"{msg} legal")
    assert exp.reward.shape == exp.done.shape == (len(legal), A)
    assert not exp.reward[~legal].any() and not exp.done[~legal].any(), f"{msg}: reward or done on illegal"
    rows = np.flatnonzero(legal.reshape(-1))  # b * A + a for every legal (b, a)
    if len(rows) == 0:
        return
    # One checked step of every legal (parent, action) pair, as a batch.
    child, reward, done = game.step(take(state, rows // A), rows % A)
    assert_states_equal(take(exp.children, rows), child, f"{msg} children")
    np.testing.assert_array_equal(exp.reward.reshape(-1)[rows], reward, err_msg=f"{msg} reward")
    np.testing.assert_array_equal(exp.done.reshape(-1)[rows], done, err_msg=f"{msg} done")


def random_playout(game: Game, batch: int, rng: np.random.Generator):
    """The batch state at every ply of ``batch`` uniformly random games, the first state
    the start and the last one with every game over (finished games stay as they are)."""
    for ply in random_play(game, game.init(batch), rng, plies=game.max_length):
        yield ply.state
    if not game.terminal(ply.state).all():
        raise AssertionError(f"{game!r}: random games outlived max_length={game.max_length}")


def random_move_lists(game: Game, count: int, rng: np.random.Generator, max_plies: int,
                      min_plies: int = 0) -> list[list[int]]:
    """``count`` move lists of live positions: random games cut after a number of plies
    drawn uniformly in ``[min_plies, max_plies]``; a game that ends earlier is cut
    before its last move (too short ones are drawn again). One game at a time through
    the checked ``step``, unlike ``games.random_play``: tests want each list's own depth."""
    out = []
    while len(out) < count:
        state, moves = game.init(1), []
        for _ in range(int(rng.integers(min_plies, max_plies + 1))):
            a = int(random_legal_actions(game.legal(state), rng)[0])
            nxt, _, done = game.step(state, np.array([a]))
            if done[0]:
                break
            state, moves = nxt, moves + [a]
        if len(moves) >= min_plies:
            out.append(moves)
    return out


def symmetric_play(game: Game, sym, rng: np.random.Generator, count: int, max_plies: int):
    """``count`` random games of up to ``max_plies`` moves, each replayed with its moves
    mapped by the symmetry ``sym``; asserts that the image's encoding and legal mask are
    the mapped ones, and yields ``(state, image)`` for game-specific checks."""
    for _ in range(count):
        state, moves = game.init(1), []
        for _ in range(int(rng.integers(1, max_plies))):
            legal = game.legal(state)
            if not legal.any():
                break
            action = int(random_legal_actions(legal, rng)[0])
            moves.append(action)
            state, _, _ = game.step(state, np.array([action]))
        image = game.from_moves([[int(sym.action[a]) for a in moves]])
        np.testing.assert_array_equal(game.encode(image), sym.obs(game.encode(state)), err_msg=sym.name)
        np.testing.assert_array_equal(game.legal(image)[:, sym.action], game.legal(state), err_msg=sym.name)
        yield state, image
