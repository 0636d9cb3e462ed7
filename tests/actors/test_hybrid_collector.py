"""The hybrid collector (algorithms/hybrid.py) without Ray: AVI's rows, each with a policy
target that is the softmax of the one-step values over the legal moves, checked against
q computed here from the board by brute force (exact values) or by a fixed stand-in
network on encodings built here, not by the engine."""

from __future__ import annotations

import numpy as np
import pytest

import games
from algorithms.hybrid import HybridCollector, one_step_policy
from tictactoe_boards import FULL, makes_line, negamax, stones


def exact_value_fn(gamma: float):
    return lambda obs: np.array([negamax(*stones(o), gamma) for o in obs], np.float32)


def fixed_value_fn(seed=0):
    """A deterministic stand-in network: tanh of a fixed random projection of the encoding."""
    w = np.random.default_rng(seed).normal(size=18).astype(np.float32)
    return lambda obs: np.tanh(obs.reshape(len(obs), -1).astype(np.float32) @ w / 2).astype(np.float32)


def encoding(mine: int, theirs: int) -> np.ndarray:
    """The [2, 3, 3] planes of a position, the mover's stones first."""
    planes = np.zeros((2, 9), np.float32)
    planes[0, [c for c in range(9) if mine >> c & 1]] = 1
    planes[1, [c for c in range(9) if theirs >> c & 1]] = 1
    return planes.reshape(2, 3, 3)


def one_step_q(obs: np.ndarray, value_fn, gamma: float) -> np.ndarray:
    """q(s, a) = r - gamma V(child) of every cell of one encoding, -inf on occupied cells:
    a line wins (r = 1, no child), a full board draws, else the opponent moves next."""
    mine, theirs = stones(obs)
    q = np.full(9, -np.inf)
    for cell in range(9):
        if (mine | theirs) >> cell & 1:
            continue
        placed = mine | 1 << cell
        if makes_line(placed):
            q[cell] = 1.0
        elif placed | theirs == FULL:
            q[cell] = 0.0
        else:
            q[cell] = -gamma * float(value_fn(encoding(theirs, placed)[None])[0])
    return q


def softmax(q: np.ndarray, temperature: float) -> np.ndarray:
    legal = np.isfinite(q)
    if temperature == 0:
        out = np.zeros_like(q)
        out[int(np.argmax(q))] = 1.0
        return out
    e = np.exp((q[legal] - q[legal].max()) / temperature)
    out = np.zeros_like(q)
    out[legal] = e / e.sum()
    return out


@pytest.mark.parametrize("temperature", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("values", ["exact", "network"])
def test_the_policy_target_is_the_softmax_of_the_one_step_values(temperature, values):
    game, gamma = games.make("tictactoe"), 0.9
    value_fn = exact_value_fn(gamma) if values == "exact" else fixed_value_fn()
    collector = HybridCollector(game, 8, temperature=temperature, epsilon=1.0, gamma=gamma, seed=0)
    rows = collector.collect(value_fn, steps=12)
    assert rows["policy"].shape == (12 * 8, 9) and rows["policy"].dtype == np.float32
    for obs, target, policy in zip(rows["obs"], rows["target"], rows["policy"]):
        q = one_step_q(obs, value_fn, gamma)
        np.testing.assert_allclose(policy, softmax(q, temperature), atol=1e-6)
        assert target == pytest.approx(q.max(), abs=1e-6)  # AVI's value target, unchanged
    assert collector.games_finished > 0


def test_known_positions():
    """X (0, 1) against O (3, 4), X to move: 2 wins at once; every other move but 5 lets O
    win at 5, and 5 itself leads to a draw. Exact values, gamma 1."""
    game = games.make("tictactoe")
    state = game.from_moves([[0, 3, 1, 4]])
    collector = HybridCollector(game, 1, temperature=0.5, epsilon=0.0, gamma=1.0, seed=0)
    collector.state = state
    rows = collector.step(exact_value_fn(1.0))
    q = np.array([-np.inf, -np.inf, 1.0, -np.inf, -np.inf, 0.0, -1.0, -1.0, -1.0])
    np.testing.assert_allclose(rows["policy"][0], softmax(q, 0.5), atol=1e-6)
    assert rows["policy"][0][2] == pytest.approx(1 / (1 + np.exp(-2) + 3 * np.exp(-4)), abs=1e-6)
    assert one_step_policy(q[None].astype(np.float32), 0.0)[0].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]


def test_a_negative_temperature_is_refused():
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        HybridCollector(games.make("tictactoe"), 1, temperature=-0.1, epsilon=0.0, gamma=1.0, seed=0)
