"""Chomp Grundy tables: the ranking, the values against an independent slow mex, known
theory (strategy stealing, 2-row boards), winning moves through the engine's own rules,
and the disk cache."""

from __future__ import annotations

import itertools
from functools import cache
from math import comb

import numpy as np
import pytest

import games
from oracle_service.chomp_grundy import ChompTable

SMALL_BOARDS = [(r, c) for r in range(1, 5) for c in range(1, 6)]  # up to 4 x 5


def all_profiles(rows, cols):
    """Every position (row 0 >= 1), by brute force: non-increasing tuples in 0..cols."""
    return [tuple(sorted(t, reverse=True)) for t in itertools.combinations_with_replacement(range(cols + 1), rows)
            if max(t) >= 1]


def slow_grundy(rows, cols):
    """Pure-Python recursive mex, written from the rules with no ranking."""

    @cache
    def g(p):
        options = set()
        for r in range(rows):
            for c in range(p[r]):
                if (r, c) != (0, 0):
                    options.add(g(tuple(v if k < r else min(v, c) for k, v in enumerate(p))))
        m = 0
        while m in options:
            m += 1
        return m

    return g


@pytest.mark.parametrize("rows,cols", SMALL_BOARDS + [(3, 9), (7, 2), (6, 6)])
def test_ranking_is_a_bijection(rows, cols):
    t = ChompTable(rows, cols, use_disk=False)
    assert t.size == comb(rows + cols, rows)
    profiles = t.unrank(np.arange(t.size))  # [size, rows]
    assert (profiles[0] == 0).all()  # rank 0: the empty profile
    assert np.array_equal(t.rank(profiles[1:]), np.arange(1, t.size))
    assert sorted(map(tuple, profiles[1:].tolist())) == sorted(all_profiles(rows, cols))


@pytest.mark.parametrize("rows,cols", SMALL_BOARDS)
def test_grundy_matches_slow_mex_on_every_position(rows, cols):
    t = ChompTable(rows, cols, use_disk=False)
    slow = slow_grundy(rows, cols)
    profiles = all_profiles(rows, cols)
    assert t.grundy_batch(profiles).tolist() == [slow(p) for p in profiles]


def test_full_rectangle_is_a_first_player_win():
    # Strategy stealing: every board but 1 x 1 is an N-position.
    for rows, cols in itertools.product(range(1, 10), range(1, 10)):
        t = ChompTable(rows, cols, use_disk=False)
        full = [cols] * rows
        assert (t.grundy(full) == 0) == (rows * cols == 1), (rows, cols)
        assert bool(t.winning_actions(full)) == (rows * cols > 1)


def test_two_rows_p_positions_are_a_and_a_minus_one():
    cols = 12
    t = ChompTable(2, cols, use_disk=False)
    for a in range(1, cols + 1):
        for b in range(a + 1):
            assert (t.grundy([a, b]) == 0) == (b == a - 1), (a, b)


def check_moves_through_engine(rows, cols, profiles, t):
    """Winning actions are exactly the legal actions whose child (by the engine's
    `step`) has Grundy 0, and the Grundy number is the mex over the engine's children."""
    game = games.make("chomp", rows=rows, cols=cols)
    A = rows * cols
    live = [p for p in profiles if not (p[0] == 1 and (rows == 1 or p[1] == 0))]
    states = game.from_profiles(live)
    legal = game.legal(states)  # [N, A]
    win = t.winning_actions_batch(live)  # [N, A]
    grundy = t.grundy_batch(live)
    assert not (win & ~legal).any()
    for i, p in enumerate(live):
        actions = np.flatnonzero(legal[i])
        children, _, done = game.step(games.repeat(games.take(states, [i]), len(actions)), actions)
        child_g = t.grundy_batch(children.profile)
        assert (child_g[done] == 0).all()  # only P left: the opponent has lost
        assert np.array_equal(np.flatnonzero(win[i]), actions[child_g == 0]), p
        assert [divmod(a, cols) for a in np.flatnonzero(win[i])] == t.winning_moves(p)
        mex = min(set(range(A + 1)) - set(child_g.tolist()))
        assert grundy[i] == mex, p


@pytest.mark.parametrize("rows,cols", [(4, 5), (3, 7), (5, 3)])
def test_winning_moves_agree_with_engine_on_every_position(rows, cols):
    t = ChompTable(rows, cols, use_disk=False)
    check_moves_through_engine(rows, cols, all_profiles(rows, cols), t)


def test_winning_moves_agree_with_engine_on_9x10_sample():
    rows, cols = 9, 10
    t = ChompTable(rows, cols, use_disk=False)
    rng = np.random.default_rng(0)
    sample = t.unrank(rng.integers(1, t.size, 300)).tolist()
    check_moves_through_engine(rows, cols, sample + [[cols] * rows], t)


def test_large_board_fits_uint8():
    t = ChompTable(10, 11, use_disk=False)
    assert t.table.dtype == np.uint8 and t.table.shape == (comb(21, 10),)
    assert 0 < t.table.max() < 256


def test_disk_cache_is_written_once_and_reused(tmp_path):
    first = ChompTable(5, 6, cache_dir=tmp_path)
    path = tmp_path / "grundy_5x6.npy"
    assert path.exists()
    stamp = path.stat().st_mtime_ns
    second = ChompTable(5, 6, cache_dir=tmp_path)
    assert path.stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert np.array_equal(first.table, second.table)
    np.save(path, np.zeros(3, np.uint8))  # a stale file of the wrong size is rebuilt
    assert np.array_equal(ChompTable(5, 6, cache_dir=tmp_path).table, first.table)
    assert np.load(path).shape == first.table.shape
    path.write_bytes(b"not a table")  # so is a corrupt one
    assert np.array_equal(ChompTable(5, 6, cache_dir=tmp_path).table, first.table)
    assert np.array_equal(np.load(path), first.table)


@pytest.mark.parametrize("profile,problem", [
    ([3, 4, 1], "non-increasing"),
    ([0, 0, 0], "poisoned square"),
    ([5, 1, 0], "0..4"),
    ([4, 1], r"shape \[N, 3\]"),
])
def test_bad_profiles_raise(profile, problem):
    t = ChompTable(3, 4, use_disk=False)
    with pytest.raises(ValueError, match=problem):
        t.grundy(profile)
    with pytest.raises(ValueError, match=problem):
        t.winning_actions_batch([[4, 4, 4], profile] if len(profile) == 3 else [profile])
