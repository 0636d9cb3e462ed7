"""Evaluation at the boards whose sets are built on first use (``evaluation.datasets``:
``board_name``, ``board_gap``): Hex 3x3's every live position and its openings against
an independent negamax (``tests/hex_negamax.py``), the provenance kept and the cache
reused, a board without sets refused naming what exists, and the suites (auto included)
scored by the runner at 3x3 and 4x4. The solver itself against exhaustive search at 3x3
to 6x6: ``tests/oracle/test_hex_solver.py``."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hex_negamax import board_after, connects, winning_cells

import games
from evaluation import builders, datasets
from evaluation.datasets import DatasetError, board_name, board_gap, load_dataset
from evaluation.runner import SuiteRunner
from evaluation.suites import auto_suite_names, suites_for
from learner.learner import Learner
from inference.networks import NetworkConfig

NET = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16)


def _every_live_3x3() -> set[tuple]:
    """Every 3x3 board nobody has won, Black with as many stones as White or one more,
    by counting boards (not by playing): 4,520."""
    boards = (np.arange(3**9)[:, None] // 3 ** np.arange(9) % 3).astype(int)
    lead = (boards == 1).sum(axis=1) - (boards == 2).sum(axis=1)
    return {b for b in map(tuple, boards[(lead == 0) | (lead == 1)].tolist())
            if not connects(b, 3, 1) and not connects(b, 3, 2)}


def test_hex_3x3_uniform_holds_every_live_position_labelled_as_negamax_says(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.CACHE_ENV, str(tmp_path))
    game = games.make("hex", size=3)
    name = board_name(game, "hex-uniform")
    assert name == "hex-3x3-uniform" and board_name(games.make("hex", size=7), "hex-uniform") == "hex-uniform"
    data = load_dataset(name)
    assert data.path == tmp_path / "hex-3x3-uniform.parquet"
    boards = {tuple(b.reshape(-1).tolist()) for b in np.asarray(data.states.board)}
    assert len(data) == len(boards) == 4520 and boards == _every_live_3x3()
    for moves, won, value in zip(data.moves, data.column("winning_moves"), data.column("value")):
        expected = winning_cells(board_after(moves, 3), 3)
        assert tuple(won) == expected and value == (1 if expected else -1), moves
    assert set(data.groups) == {"opening", "midgame", "endgame"}
    # Provenance: how it was built, by what, from which code.
    meta = data.meta
    assert meta["board"] == "3x3" and meta["counts"] == {"states": 4520} and meta["seed"] == 0
    assert "hex_solver" in meta["solver"] and meta["code_version"] and meta["built_on_first_use"]
    assert meta["game_params"]["size"] == 3
    # Reused after: a second load builds nothing.
    monkeypatch.setattr(datasets, "build_dataset", lambda *a, **k: pytest.fail("the cached set was rebuilt"))
    assert len(load_dataset(name)) == 4520


def test_hex_3x3_openings_are_every_two_ply_class_with_its_value(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.CACHE_ENV, str(tmp_path))
    data = load_dataset("hex-3x3-openings")
    classes = builders.hex_rotation_classes(games.make("hex", size=3), 2)
    assert sorted(data.moves) == sorted(classes) and len(data) == 36
    for moves, value, move in zip(data.moves, data.column("value"), data.column("winning_move")):
        expected = winning_cells(board_after(moves, 3), 3)
        assert value == (1 if expected else -1) and (move in expected if expected else move == -1), moves
    assert data.column("value")[:2] == [-1, 1]  # lost and won alternately while both last
    assert data.meta["counts"] == {"classes": 36, "won": 34, "lost": 2}


def test_a_board_without_sets_is_refused_naming_the_boards_that_have_them():
    gap = board_gap(games.make("hex", size=9))
    assert "9x9" in gap and "7x7" in gap and "3x3 to 6x6" in gap
    assert board_gap(games.make("hex", size=5)) is None and board_gap(games.make("hex", size=7)) is None
    with pytest.raises(DatasetError, match="no labelled Hex sets at 8x8"):
        load_dataset("hex-8x8-uniform")
    # Its suites: matches from every first move (no oracle sets), none of them auto.
    nine = games.make("hex", size=9)
    assert [(s.name, s.dataset) for s in suites_for(nine)] == [("hex-random", None), ("hex-h2h", None)]
    assert auto_suite_names(nine) is False


def test_suites_at_a_built_board_run_states_and_play_in_auto(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.CACHE_ENV, str(tmp_path))
    game = games.make("hex", size=4)
    suites = {s.name: (s.kind, s.dataset, s.default, s.auto) for s in suites_for(game)}
    assert suites["hex-4x4-uniform"] == ("states", "hex-4x4-uniform", True, True)
    assert suites["hex-4x4-play"] == ("play", "hex-4x4-openings", True, True)
    assert auto_suite_names(game) == ["hex-4x4-uniform", "hex-4x4-play"]
    # 7x7 keeps its auto: the labelled states only, once committed (play costs minutes there).
    monkeypatch.setattr("evaluation.suites.committed_file_present", lambda name: True)
    assert auto_suite_names(games.make("hex", size=7)) == ["hex-uniform"]
    runner = SuiteRunner(game, NET, suites=auto_suite_names(game), oracle_store=None)
    m = runner.evaluate(Learner(game, NET, device="cpu").get_weights())
    assert m["eval/hex-4x4-uniform/states"] == 4000 and 0 <= m["eval/hex-4x4-uniform/policy_regret"] <= 2
    assert 0 <= m["eval/hex-4x4-uniform/value_mae"] <= 2
    # Play: every one of the 120 two-ply classes, from both sides, every game settled.
    assert m["eval/hex-4x4-play/games"] == 240 and m["eval/hex-4x4-play/unsettled_games"] == 0
    assert 0 <= m["eval/hex-4x4-play/error_rate"] <= 1


# ------------------------------------------------------------ Connect Four


def _four(cols: tuple, width: int, height: int, player: int) -> bool:
    """Whether ``player`` has four in a row; ``cols`` holds each column's stones bottom up."""
    at = lambda c, r: 0 <= c < width and 0 <= r < len(cols[c]) and cols[c][r] == player  # noqa: E731
    return any(all(at(c + k * dc, r + k * dr) for k in range(4))
               for c in range(width) for r in range(height) for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)))


@functools.lru_cache(maxsize=None)
def _outcome(cols: tuple, width: int, height: int) -> int:
    """+1, 0 or -1 for the player to move, by plain negamax over the whole tree."""
    player = sum(map(len, cols)) % 2
    best = None
    for c in range(width):
        if len(cols[c]) == height:
            continue
        child = cols[:c] + (cols[c] + (player,),) + cols[c + 1:]
        value = 1 if _four(child, width, height, player) else -_outcome(child, width, height)
        best = value if best is None else max(best, value)
    return 0 if best is None else best


@pytest.mark.slow
def test_connect4_4x4_sets_agree_with_negamax_and_score_in_the_runner(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.CACHE_ENV, str(tmp_path))
    game = games.make("connect4", width=4, height=4)
    assert board_gap(game) is None and "7x5" in board_gap(games.make("connect4", width=7, height=5))
    data = load_dataset(board_name(game, "connect4-uniform"))
    assert data.name == "connect4-4x4-uniform" and data.meta["board"] == "4x4" and len(data) >= 1000
    assert set(data.groups) <= set(datasets.GROUPS)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(data), size=60, replace=False):
        moves = data.moves[i]
        cols = tuple(tuple(j % 2 for j, a in enumerate(moves) if a == c) for c in range(4))
        assert data.column("value")[i] == _outcome(cols, 4, 4), moves
    auto = auto_suite_names(game)
    assert auto is None  # Connect Four's defaults: the states suites and play
    runner = SuiteRunner(game, NET, oracle_store=None)
    assert [s.name for s in runner.suites] == ["connect4-4x4-uniform", "connect4-4x4-eps-optimal", "connect4-4x4-play"]
    m = runner.evaluate(Learner(game, NET, device="cpu").get_weights())
    openings = len(load_dataset("connect4-4x4-openings"))
    assert m["eval/connect4-4x4-play/games"] == 2 * openings and 0 <= m["eval/connect4-4x4-play/error_rate"] <= 1
    assert 0 <= m["eval/connect4-4x4-uniform/value_mae"] <= 2 and "eval/connect4-4x4-eps-optimal/policy_regret" in m
