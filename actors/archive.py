"""Archive starts (Go-Exploit, Trudeau and Bowling 2023): self-play games that begin at a
state visited earlier, not always at the initial position, so that the middle and end
of the game are played (and learned) as often as the opening.

A collector keeps a :class:`StateArchive`: a bounded uniform sample of the states it has
played (reservoir sampling, Vitter's Algorithm R, batched), from which each fresh game
starts with probability ``probability``. The archive draws from a generator of its own,
so that the collector's own random numbers are those of a collector without it.

An archive made with ``moves`` keeps, beside each state, the moves that reached it from
the initial position: AZAL's oracle reads a position from its moves, so a game started
from the archive carries the moves of its start (``starts_with_moves``).
"""

from __future__ import annotations

import numpy as np

import games
from games.base import State, batch_size


class StateArchive:
    """Up to ``capacity`` states, a uniform sample of all those given to :meth:`add`; the
    fresh starts of :meth:`starts` drawn from it with probability ``probability``."""

    def __init__(self, *, probability: float, capacity: int, seed, moves: int = 0):
        """``moves``: the most moves from the initial position to a state (the game's
        ``max_length``), to keep each state's moves beside it; 0: none kept."""
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"StateArchive: probability must lie in [0, 1], got {probability}")
        if capacity < 1:
            raise ValueError(f"StateArchive: capacity must be >= 1, got {capacity}")
        self.probability, self.capacity = float(probability), int(capacity)
        self.rng = np.random.default_rng(seed)
        self.states: State | None = None  # batch ``capacity``, rows ``[:size]`` filled; made at the first add
        # int16[capacity, moves]: each state's moves from the initial position, then -1 (moves > 0)
        self.moves = np.full((self.capacity, moves), -1, np.int16) if moves > 0 else None
        self.size = 0  # states held
        self.seen = 0  # states ever added (the reservoir's n)
        self.drawn = 0  # fresh starts that came from the archive

    def add(self, states: State, moves: np.ndarray | None = None) -> None:
        """Offer every row of ``states`` (non-terminal states that were played) to the
        reservoir: after n offers, each has been kept with probability capacity / n.
        ``moves``: int[n, >= 0] the moves that reached each state, -1 after the last
        (required when the archive keeps moves)."""
        n = batch_size(states)
        if (moves is None) != (self.moves is None):
            raise ValueError("StateArchive.add: moves must be given exactly when the archive keeps them "
                             f"(it keeps {'none' if self.moves is None else 'them'})")
        if moves is not None and moves.shape[1] > self.moves.shape[1]:
            raise ValueError(f"StateArchive.add: {moves.shape[1]} moves a state, at most {self.moves.shape[1]} kept")
        if self.states is None:
            self.states = games.repeat(games.take(states, [0]), self.capacity)
        # Offer i (0-based over the archive's life) fills slot i while there is room, else
        # replaces a uniform slot with probability capacity / (i + 1).
        offer = self.seen + np.arange(n)
        slot = np.where(offer < self.capacity, offer, self.rng.integers(0, offer + 1))
        keep = slot < self.capacity
        # Within one batch a later offer to the same slot wins, as if offered one by one:
        # the last occurrence of each slot is the one written.
        slots, last = np.unique(slot[keep][::-1], return_index=True)
        rows = np.flatnonzero(keep)[::-1][last]
        for field, new in zip(self.states, states):
            field[slots] = np.asarray(new)[rows]
        if self.moves is not None:
            self.moves[slots] = -1
            self.moves[slots, :moves.shape[1]] = moves[rows]
        self.seen += n
        self.size = min(self.seen, self.capacity)

    def starts(self, fresh: State, restart: np.ndarray) -> State:
        """The states to start from: ``fresh`` (batch B), with each row where
        ``restart[B]`` holds replaced, with probability ``probability``, by a state drawn
        uniformly from the archive (none while it is empty)."""
        rows, picks = self._draw(restart)
        return fresh if len(rows) == 0 else games.put(fresh, rows, games.take(self.states, picks))

    def starts_with_moves(self, fresh: State, restart: np.ndarray) -> tuple[State, np.ndarray]:
        """:meth:`starts` (the same draws), and int16[B, moves]: the moves from the
        initial position to each start, -1 after the last (a fresh start has none)."""
        if self.moves is None:
            raise ValueError("StateArchive.starts_with_moves: this archive keeps no moves (made with moves=0)")
        rows, picks = self._draw(restart)
        moves = np.full((len(np.asarray(restart)), self.moves.shape[1]), -1, np.int16)
        if len(rows) == 0:
            return fresh, moves
        moves[rows] = self.moves[picks]
        return games.put(fresh, rows, games.take(self.states, picks)), moves

    def _draw(self, restart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``restart`` that start from the archive and the slots they start from."""
        restart = np.asarray(restart, bool)
        none = np.zeros(0, np.int64)
        if self.size == 0 or self.probability == 0.0 or not restart.any():
            return none, none
        rows = np.flatnonzero(restart)
        chosen = rows[self.rng.random(len(rows)) < self.probability]
        if len(chosen) == 0:
            return none, none
        self.drawn += len(chosen)
        return chosen, self.rng.integers(0, self.size, len(chosen))

    # Resume support: the sample, its counts and the archive's generator.
    def get_state(self) -> dict:
        held = ({} if self.states is None else
                {name: np.asarray(f[:self.size]).copy() for name, f in zip(self.states._fields, self.states)})
        saved = {"states": held, "seen": self.seen, "drawn": self.drawn, "rng": self.rng.bit_generator.state}
        if self.moves is not None:
            saved["moves"] = self.moves[:self.size].copy()
        return saved

    def set_state(self, saved: dict, like: State) -> None:
        """``like``: a state of the collector's game (its type and field shapes)."""
        held = saved["states"]
        self.seen, self.drawn = int(saved["seen"]), int(saved["drawn"])
        self.size = min(self.seen, self.capacity)
        self.rng.bit_generator.state = saved["rng"]
        self.states = None
        if held:
            kept = type(like)(*(np.asarray(held[name]) for name in like._fields))
            if batch_size(kept) != self.size:
                raise ValueError(f"StateArchive.set_state: {batch_size(kept)} states saved, "
                                 f"{self.size} expected (capacity {self.capacity}, {self.seen} seen)")
            self.states = games.repeat(games.take(kept, [0]), self.capacity)
            for field, saved_field in zip(self.states, kept):
                field[:self.size] = saved_field
        if self.moves is not None:
            if "moves" not in saved:
                raise ValueError("StateArchive.set_state: the saved archive has no moves, and this one keeps them "
                                 "(AZAL's archive): it cannot restart games whose moves the oracle reads")
            self.moves[:] = -1
            self.moves[:self.size, :saved["moves"].shape[1]] = saved["moves"]
