"""The Connect Four engine at every size: the sizes there are and the errors for the
others, random games against a plain grid, expand == stepping, the mirror symmetry,
move strings and rendering, and the preset (mirror-symmetrized) network on a small board."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from games.base import random_legal_actions, step_live
from games.connect4 import centre_first, check_size, moves_from_digits, moves_to_digits, sizes
from games.testing import assert_expand_matches_step

SIZES = [(4, 4), (5, 4), (6, 5), (4, 7), (9, 6), (8, 7), (7, 7)]


class Grid:
    """A plain ``height`` x ``width`` grid (row 0 = bottom); 1 = first player, 2 = second."""

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.cells = [[0] * width for _ in range(height)]
        self.ply, self.over = 0, False

    def legal(self):
        return [not self.over and self.cells[self.height - 1][c] == 0 for c in range(self.width)]

    def play(self, col):
        """(reward for the mover, done)."""
        row = next(r for r in range(self.height) if self.cells[r][col] == 0)
        p = 1 + self.ply % 2
        self.cells[row][col] = p
        self.ply += 1
        four = False
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < self.height and 0 <= c < self.width and self.cells[r][c] == p:
                    run += 1
                    r, c = r + sign * dr, c + sign * dc
            four = four or run >= 4
        self.over = four or self.ply == self.width * self.height
        return (1.0 if four else 0.0), self.over

    def encode(self):
        g = np.array(self.cells)
        me = 1 + self.ply % 2
        return np.stack([g == me, (g != me) & (g != 0)]).astype(np.float32)


def test_the_sizes_and_their_errors():
    assert len(sizes()) == 23 and (7, 6) in sizes() and (8, 7) in sizes() and (9, 7) not in sizes()
    for w, h in sizes():
        check_size(w, h)
    with pytest.raises(ValueError, match=r"width must be an integer in 4..9, got 3"):
        games.make("connect4", width=3)
    with pytest.raises(ValueError, match=r"height must be an integer in 4..7, got 8"):
        games.make("connect4", height=8)
    with pytest.raises(ValueError, match=r"9x7: \(height \+ 1\) \* width = 72 bits do not fit one uint64.*8x7"):
        games.make("connect4", width=9, height=7)
    with pytest.raises(ValueError, match="height must be an integer"):
        games.make("connect4", height=5.0)


@pytest.mark.parametrize("width, height", SIZES)
def test_metadata_follows_the_size(width, height):
    game = games.make("connect4", width=width, height=height)
    assert (game.width, game.height) == (width, height)
    assert game.num_actions == width and game.obs_shape == (2, height, width) and game.max_length == width * height
    assert game.params == {"width": width, "height": height}
    assert games.make("connect4", **game.params).params == game.params
    mirror = game.symmetries()[1]
    assert mirror.action.tolist() == list(range(width - 1, -1, -1))


def test_the_standard_board_is_the_default():
    game = games.make("connect4")
    assert (game.width, game.height, game.params, game.num_actions) == (7, 6, {}, 7)
    assert games.make("connect4", width=7, height=6).params == {}
    assert centre_first(7).tolist() == [3, 2, 4, 1, 5, 0, 6]
    assert centre_first(6).tolist() == [3, 2, 4, 1, 5, 0] and sorted(centre_first(9).tolist()) == list(range(9))


@pytest.mark.parametrize("width, height", SIZES)
def test_random_games_match_the_grid(width, height):
    """Every step of random games: reward, done, legal mask and encoding agree with the grid."""
    game = games.make("connect4", width=width, height=height)
    rng = np.random.default_rng(width * 10 + height)
    B = 150
    grids = [Grid(width, height) for _ in range(B)]
    state = game.init(B)
    wins = 0
    for _ in range(width * height):
        live = np.flatnonzero(~game.terminal(state))
        if len(live) == 0:
            break
        legal = game.legal(state)
        assert legal[live].tolist() == [grids[b].legal() for b in live]
        assert np.array_equal(game.encode(games.take(state, live)), np.stack([grids[b].encode() for b in live]))
        actions = random_legal_actions(legal, rng)
        state, reward, done = step_live(game, state, actions)
        for b in live:
            r, d = grids[b].play(int(actions[b]))
            assert (reward[b], done[b]) == (r, d), f"game {b}"
            wins += r == 1.0
    assert game.terminal(state).all() and wins > B // 4  # fours were found, not only full boards


@pytest.mark.parametrize("width, height", [(5, 4), (9, 6), (8, 7)])
def test_expand_and_the_mirror(width, height):
    game = games.make("connect4", width=width, height=height)
    rng = np.random.default_rng(1)
    lists = []
    for _ in range(120):
        grid, moves = Grid(width, height), []
        for _ in range(rng.integers(0, width * height + 1)):
            if grid.over:
                break
            a = int(rng.choice(np.flatnonzero(grid.legal())))
            grid.play(a)
            moves.append(a)
        lists.append(moves)
    state = game.from_moves(lists)
    assert state.over.any() and (~state.over).any()
    assert_expand_matches_step(game, state)
    mirror = game.symmetries()[1]
    mirrored = game.from_moves([[int(mirror.action[a]) for a in m] for m in lists])
    assert np.array_equal(game.encode(mirrored), mirror.obs(game.encode(state)))
    assert np.array_equal(game.legal(mirrored)[:, mirror.action], game.legal(state))
    assert np.array_equal(game.terminal(mirrored), game.terminal(state))


def test_move_strings_and_render_at_a_size():
    assert moves_from_digits("515", width=5) == [4, 0, 4]
    with pytest.raises(ValueError, match=r"bad character '6' at position 1; expected column digits 1..5"):
        moves_from_digits("16", width=5)
    assert moves_to_digits([8, 0], width=9) == "91"
    with pytest.raises(ValueError, match=r"out of range 0..4"):
        moves_to_digits([5], width=5)
    game = games.make("connect4", width=5, height=4)
    lines = game.render(game.from_moves([moves_from_digits("1555", width=5)])).splitlines()
    assert len(lines) == 4 + 2 and lines[-2].split() == list("12345")
    assert lines[-3].split() == ["1", "X", ".", ".", ".", "O"] and lines[-5].split() == ["3", ".", ".", ".", ".", "O"]
    with pytest.raises(games.IllegalMoveError, match=r"action 5 is out of range 0..4"):
        game.step(game.init(1), [5])


def test_the_preset_network_runs_on_5x4_and_is_mirror_invariant():
    """The preset Connect Four network (a mirror-symmetrized MLP, with a policy head as
    AlphaZero has it) built for 5x4 runs on encoded states; the value of a position and
    of its mirror image are equal, and the logits are mirrored."""
    from inference.networks import build_network, preset_network
    import dataclasses

    game = games.make("connect4", width=5, height=4)
    config = dataclasses.replace(preset_network("connect4"), width=32, head_width=32, policy_head=True)
    net = build_network(game, config).eval()
    lists = [moves_from_digits(m, width=5) for m in ["", "1", "12", "5542", "3331"]]
    mirror = game.symmetries()[1]
    obs = torch.from_numpy(game.encode(game.from_moves(lists)))  # [5, 2, 4, 5]
    obs_m = torch.from_numpy(game.encode(game.from_moves([[int(mirror.action[a]) for a in m] for m in lists])))
    with torch.no_grad():
        out, out_m = net(obs), net(obs_m)
    assert out.value.shape == (5,) and out.logits.shape == (5, 5)
    assert torch.allclose(out.value, out_m.value, atol=1e-6)
    assert torch.allclose(out_m.logits[:, mirror.action], out.logits, atol=1e-5)
    assert not torch.allclose(out.logits, out.logits[:, mirror.action])  # not mirror-symmetric by accident
