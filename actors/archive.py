"""Archive starts (Go-Exploit, Trudel and Tesauro 2023): self-play games that begin at a
state visited earlier, not always at the initial position, so that the middle and end
of the game are played (and learned) as often as the opening.

A collector keeps a :class:`StateArchive`: a bounded uniform sample of the states it has
played (reservoir sampling, Vitter's Algorithm R, batched), from which each fresh game
starts with probability ``probability``. The archive draws from a generator of its own,
so that the collector's own random numbers are those of a collector without it.
"""

from __future__ import annotations

import numpy as np

import games
from games.base import State, batch_size


class StateArchive:
    """Up to ``capacity`` states, a uniform sample of all those given to :meth:`add`; the
    fresh starts of :meth:`starts` drawn from it with probability ``probability``."""

    def __init__(self, *, probability: float, capacity: int, seed):
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"StateArchive: probability must lie in [0, 1], got {probability}")
        if capacity < 1:
            raise ValueError(f"StateArchive: capacity must be >= 1, got {capacity}")
        self.probability, self.capacity = float(probability), int(capacity)
        self.rng = np.random.default_rng(seed)
        self.states: State | None = None  # batch ``capacity``, rows ``[:size]`` filled; made at the first add
        self.size = 0  # states held
        self.seen = 0  # states ever added (the reservoir's n)
        self.drawn = 0  # fresh starts that came from the archive

    def add(self, states: State) -> None:
        """Offer every row of ``states`` (non-terminal states that were played) to the
        reservoir: after n offers, each has been kept with probability capacity / n."""
        n = batch_size(states)
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
        self.seen += n
        self.size = min(self.seen, self.capacity)

    def starts(self, fresh: State, restart: np.ndarray) -> State:
        """The states to start from: ``fresh`` (batch B), with each row where
        ``restart[B]`` holds replaced, with probability ``probability``, by a state drawn
        uniformly from the archive (none while it is empty)."""
        restart = np.asarray(restart, bool)
        if self.size == 0 or self.probability == 0.0 or not restart.any():
            return fresh
        rows = np.flatnonzero(restart)
        chosen = rows[self.rng.random(len(rows)) < self.probability]
        if len(chosen) == 0:
            return fresh
        self.drawn += len(chosen)
        picks = self.rng.integers(0, self.size, len(chosen))
        return games.put(fresh, chosen, games.take(self.states, picks))

    # Resume support: the sample, its counts and the archive's generator.
    def get_state(self) -> dict:
        held = ({} if self.states is None else
                {name: np.asarray(f[:self.size]).copy() for name, f in zip(self.states._fields, self.states)})
        return {"states": held, "seen": self.seen, "drawn": self.drawn, "rng": self.rng.bit_generator.state}

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
