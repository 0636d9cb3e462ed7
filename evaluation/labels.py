"""Exact labels of states: the record every exact metric reads, and how labels follow
from a known V* through one expansion.

Labels are undiscounted here unless a source knows when each game ends (Connect Four
scores do: ``Dataset.labels_at``); ``q*(s, a) = r(s, a) - V*(f(s, a))`` with V* = 0
past a move that ends the game.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from games import Game, one_step_q, take
from oracle_service.chomp_grundy import ChompTable


class LabelledStates(NamedTuple):
    """Non-terminal states with their exact values and exact action values."""

    states: tuple  # a game state of batch N
    v_star: np.ndarray  # float32[N], value for the player to move
    q_star: np.ndarray  # float32[N, A], r(s,a) - gamma V*(f(s,a)); -inf where illegal


def label_states(game: Game, states, v_star: Callable) -> LabelledStates:
    """Exact labels (undiscounted) from ``v_star(states) -> [N]``, the value of live
    states for the player to move; action values follow through one ``expand``."""
    exp = game.expand(states)
    live = (exp.legal & ~exp.done).reshape(-1)
    child_v = np.zeros(live.shape, np.float32)
    if live.any():
        child_v[live] = v_star(take(exp.children, live))
    return LabelledStates(states, np.asarray(v_star(states), np.float32), one_step_q(exp, child_v, 1.0))


def chomp_values(game: Game, table: ChompTable | None = None) -> Callable:
    """V* of Chomp positions from the Grundy table (``table``, else built for the board):
    the mover wins exactly when the Grundy number is not 0 (normal play, no draws)."""
    table = table or ChompTable(game.params["rows"], game.params["cols"])
    return lambda states: np.where(table.grundy_batch(states.profile) != 0, 1.0, -1.0).astype(np.float32)
