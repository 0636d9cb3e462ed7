"""Exact values of F-Game nodes, by construction (no search): a thin layer over the engine.

An F-Game stores each node's value in its state (``games/fgame.py``), so the oracle
only replays a node's action path from the root and reads the engine's ``value``,
``child_values`` and ``optimal_actions``. Values are for the player to move at the
node, in {-1, 0, +1}. A path is a sequence of actions ``0 .. branching - 1``; one
that is out of range or continues past a leaf raises ``ValueError`` (the engine's
``IllegalMoveError``) naming the path's index and ply.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

import games


class FGamePathOracle:
    """Answers for one F-Game instance, ``games.make("fgame", depth=..., ...)``, about
    nodes given by their action paths: the service's and the command line's form
    (``evaluation.oracles.FGameOracle`` answers about engine states instead)."""

    def __init__(self, depth: int = 10, branching: int = 5, beta: float = 0.05, seed: int = 0):
        self.game = games.make("fgame", depth=depth, branching=branching, beta=beta, seed=seed)
        self.num_actions = self.game.num_actions

    def states(self, paths: Sequence[Sequence[int]]):
        """The nodes at the ends of ``paths`` (batch N = len(paths))."""
        return self.game.from_moves(paths)

    # ---- batches ----------------------------------------------------------------

    def values(self, paths: Sequence[Sequence[int]]) -> np.ndarray:
        """int8[N]: each node's exact value for the player to move (leaves too)."""
        return self.game.value(self.states(paths))

    def over(self, paths: Sequence[Sequence[int]]) -> np.ndarray:
        """bool[N]: the node is a leaf (the game has ended there)."""
        return self.game.terminal(self.states(paths))

    def child_values_batch(self, paths: Sequence[Sequence[int]]) -> np.ndarray:
        """int8[N, A]: each child's value for the player to move there; 0 rows at leaves."""
        return self.game.child_values(self.states(paths))

    def optimal_actions_batch(self, paths: Sequence[Sequence[int]]) -> np.ndarray:
        """bool[N, A]: the actions achieving the node's value; all False at leaves."""
        return self.game.optimal_actions(self.states(paths))

    # ---- one node ---------------------------------------------------------------

    def value(self, path: Sequence[int]) -> int:
        return int(self.values([path])[0])

    def child_values(self, path: Sequence[int]) -> list[int]:
        return self.child_values_batch([path])[0].tolist()

    def optimal_actions(self, path: Sequence[int]) -> list[int]:
        """Ascending optimal actions; empty at a leaf."""
        return np.flatnonzero(self.optimal_actions_batch([path])[0]).tolist()
