"""Chomp on a ``rows x cols`` rectangle of squares (default 9 x 10, the AZAL paper's board).

Square ``(r, c)`` is action ``r * cols + c``; row 0 is the top row and holds the
poisoned square P at column 0 (3 x 4 shown, actions in the squares)::

          c=0  1   2   3
    r=0    P   1   2   3        taking (1, 2) removes every (r', c') with
    r=1    4   5   6   7        r' >= 1 and c' >= 2:   P 1 2 3
    r=2    8   9  10  11                               4 5 . .
                                                       8 9 . .

A position is its profile: the number of squares left in each row, row 0 first,
non-increasing (the full board is ``[cols] * rows``). Taking ``(r, c)`` sets every
row ``r' >= r`` to ``min(len, c)``. P is never a legal action: the player who takes
the last square other than P wins (reward +1, done), since the opponent is left
with P alone, i.e. the profile ``[1, 0, ..., 0]``. The game is impartial, so the
encoding has one plane (squares left) and no mover/opponent split.

State, one row per batch element:
  profile  int8[B, rows]  squares left per row, non-increasing, profile[:, 0] >= 1
  moves    int16[B]       plies played since the state was built
  over     bool[B]        only P is left (the player to move has lost)
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from numba import njit

from games.base import Expansion, Game, Symmetry, identity_symmetry
from games.descriptors import GameDescriptor

MAX_SIDE = 16
MAX_FRAMES = 8


class ChompState(NamedTuple):
    profile: np.ndarray  # int8[B, rows], squares left per row
    moves: np.ndarray  # int16[B], plies played
    over: np.ndarray  # bool[B], only the poisoned square is left


class ChompFramesState(NamedTuple):
    """The state of ``frames=k > 1``: :class:`ChompState` and the k-1 earlier profiles."""

    profile: np.ndarray  # int8[B, rows], squares left per row
    moves: np.ndarray  # int16[B], plies played
    over: np.ndarray  # bool[B], only the poisoned square is left
    history: np.ndarray  # int8[B, k-1, rows], [:, j-1] = the profile j plies ago, 0 = none


# --------------------------------------------------------------------- kernels


@njit(cache=True)
def _chomp(profile, r, c):
    """Take square (r, c) of one profile in place; True if only P is left after it."""
    rows = profile.shape[0]
    for k in range(r, rows):
        if profile[k] <= c:  # rows below are no longer (non-increasing): nothing to cut
            break
        profile[k] = c
    return profile[0] == 1 and (rows == 1 or profile[1] == 0)


@njit(cache=True)
def _step_kernel(profile, moves, actions, cols):
    B = profile.shape[0]
    out = profile.copy()
    over = np.empty(B, np.bool_)  # [B]
    reward = np.zeros(B, np.float32)  # [B]
    for b in range(B):
        r, c = divmod(actions[b], cols)
        over[b] = _chomp(out[b], r, c)
        if over[b]:
            reward[b] = 1.0
    return out, moves + np.int16(1), over, reward


@njit(cache=True)
def _legal_kernel(profile, cols):
    B, rows = profile.shape
    legal = np.zeros((B, rows * cols), np.bool_)  # [B, A]
    for b in range(B):
        for r in range(rows):
            for c in range(profile[b, r]):
                legal[b, r * cols + c] = True
        legal[b, 0] = False  # the poisoned square
    return legal


@njit(cache=True)
def _expand_kernel(profile, moves, over, cols):
    B, rows = profile.shape
    A = rows * cols
    ch_profile = np.empty((B * A, rows), np.int8)
    ch_moves = np.empty(B * A, np.int16)
    ch_over = np.empty(B * A, np.bool_)
    reward = np.zeros((B, A), np.float32)  # [B, A]
    done = np.zeros((B, A), np.bool_)  # [B, A]
    legal = np.zeros((B, A), np.bool_)  # [B, A]
    for b in range(B):
        for a in range(A):
            row = b * A + a
            ch_profile[row] = profile[b]  # illegal rows keep this copy of the parent
            ch_moves[row] = moves[b]
            ch_over[row] = over[b]
            r, c = divmod(a, cols)
            if over[b] or a == 0 or c >= profile[b, r]:
                continue
            legal[b, a] = True
            ch_moves[row] += 1
            if _chomp(ch_profile[row], r, c):
                ch_over[row] = True
                done[b, a] = True
                reward[b, a] = 1.0
    return ch_profile, ch_moves, ch_over, reward, done, legal


@njit(cache=True)
def _expand_history_kernel(profile, history, legal):
    """Children's histories: the parent's profile, then its history less the oldest
    frame; illegal rows keep the parent's history (as ``_expand_kernel`` keeps its state)."""
    B, A = legal.shape
    K = history.shape[1]
    out = np.empty((B * A, K, history.shape[2]), np.int8)  # [B*A, k-1, rows]
    for b in range(B):
        for a in range(A):
            row = b * A + a
            if legal[b, a]:
                out[row, 0] = profile[b]
                out[row, 1:] = history[b, :K - 1]
            else:
                out[row] = history[b]
    return out


@njit(cache=True)
def _encode_kernel(frames, cols):
    """Planes of profiles ``frames`` int8[B, k, rows]: 1 where a square is left."""
    B, K, rows = frames.shape
    out = np.zeros((B, K, rows, cols), np.float32)  # [B, k, rows, cols]
    for b in range(B):
        for k in range(K):
            for r in range(rows):
                for c in range(frames[b, k, r]):
                    out[b, k, r, c] = 1.0
    return out


# ------------------------------------------------------------------- the game


class Chomp(Game):
    """Chomp on ``rows x cols`` (each 1..16, at least 2 squares; default 9 x 10),
    seen through the last ``frames`` boards (1..8, default 1).

    ``obs_shape = (frames, rows, cols)``: 1 where a square is left, plane j the
    board j plies ago. ``max_length = rows * cols - 1``: every move takes at least
    one square and P is never taken. ``params`` names ``frames`` only when it is not
    1, so single-frame games keep the identity (checkpoints, run configs) they had.
    """

    def __init__(self, rows: int = 9, cols: int = 10, frames: int = 1):
        for pname, v, top in (("rows", rows, MAX_SIDE), ("cols", cols, MAX_SIDE), ("frames", frames, MAX_FRAMES)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
                raise ValueError(f"chomp: parameter {pname} must be an integer in 1..{top}, got {v!r}")
        if rows * cols < 2:
            raise ValueError("chomp: parameters rows x cols must give at least 2 squares "
                             "(on 1 x 1 the game is over before it starts)")
        self.rows, self.cols, self.frames = int(rows), int(cols), int(frames)
        self.name = "chomp"
        self.params = {"rows": self.rows, "cols": self.cols}
        if self.frames != 1:
            self.params["frames"] = self.frames
        self.num_actions = self.rows * self.cols
        self.obs_shape = (self.frames, self.rows, self.cols)
        self.max_length = self.rows * self.cols - 1

    def _init(self, batch: int) -> ChompState | ChompFramesState:
        return self._with_history(np.full((batch, self.rows), self.cols, np.int8),
                                  np.zeros(batch, np.int16), np.zeros(batch, bool))

    def _with_history(self, profile, moves, over):
        """A state with no past: every earlier frame empty (see the module docstring)."""
        if self.frames == 1:
            return ChompState(profile, moves, over)
        return ChompFramesState(profile, moves, over,
                                np.zeros((len(profile), self.frames - 1, self.rows), np.int8))

    def terminal(self, state: ChompState) -> np.ndarray:
        return state.over.copy()

    def _legal(self, state: ChompState) -> np.ndarray:
        return _legal_kernel(state.profile, self.cols)

    def _step(self, state: ChompState | ChompFramesState, actions: np.ndarray):
        profile, moves, over, reward = _step_kernel(state.profile, state.moves, actions, self.cols)
        if self.frames == 1:
            return ChompState(profile, moves, over), reward, over.copy()
        # The board just left becomes frame 1; the oldest frame drops out.
        history = np.concatenate([state.profile[:, None], state.history[:, :-1]], axis=1)  # [B, k-1, rows]
        return ChompFramesState(profile, moves, over, history), reward, over.copy()

    def _expand(self, state: ChompState | ChompFramesState) -> Expansion:
        profile, moves, over, reward, done, legal = _expand_kernel(
            state.profile, state.moves, state.over, self.cols)
        if self.frames == 1:
            return Expansion(ChompState(profile, moves, over), reward, done, legal)
        history = _expand_history_kernel(state.profile, state.history, legal)
        return Expansion(ChompFramesState(profile, moves, over, history), reward, done, legal)

    def _encode(self, state: ChompState | ChompFramesState) -> np.ndarray:
        if self.frames == 1:
            return _encode_kernel(state.profile[:, None], self.cols)
        return _encode_kernel(np.concatenate([state.profile[:, None], state.history], axis=1), self.cols)

    # ---- profiles (the oracle's keys) -----------------------------------------

    def from_profiles(self, profiles: Sequence[Sequence[int]]) -> ChompState | ChompFramesState:
        """States for row-length profiles (row 0 first), each checked: ``rows``
        integers, non-increasing, within 0..cols, row 0 at least 1 (P is never
        taken). ``moves`` starts at 0; ``[1, 0, ...]`` gives a finished state. With
        ``frames > 1`` the earlier frames are empty: a profile carries no past (use
        ``from_moves`` for states with their history)."""
        profiles = list(profiles)
        if not profiles:
            raise ValueError("chomp: from_profiles needs at least one profile")
        out = np.empty((len(profiles), self.rows), np.int8)
        for i, p in enumerate(profiles):
            out[i] = self._check_profile(i, p)
        over = (out[:, 0] == 1) & ((out[:, 1] == 0) if self.rows > 1 else True)
        return self._with_history(out, np.zeros(len(profiles), np.int16), over)

    def profile_to_state(self, profile: Sequence[int]) -> ChompState | ChompFramesState:
        """The state (batch 1) of one profile; see :meth:`from_profiles`."""
        return self.from_profiles([profile])

    def _check_profile(self, i: int, profile) -> list[int]:
        where = f"chomp ({self.rows} x {self.cols}): profile {i} {list(profile)!r}"
        values = list(profile)
        if len(values) != self.rows:
            raise ValueError(f"{where}: needs {self.rows} row lengths, got {len(values)}")
        for v in values:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{where}: row lengths must be integers, got {v!r}")
        if any(not 0 <= v <= self.cols for v in values):
            raise ValueError(f"{where}: row lengths must lie in 0..{self.cols}")
        if values[0] < 1:
            raise ValueError(f"{where}: row 0 must keep the poisoned square (length >= 1)")
        if any(a < b for a, b in zip(values, values[1:])):
            raise ValueError(f"{where}: row lengths must be non-increasing")
        return values

    # ---- symmetry, names, drawing ---------------------------------------------

    def symmetries(self) -> list[Symmetry]:
        """Identity, plus the transpose (r, c) -> (c, r) on square boards, which
        fixes P and maps the game to itself; it transposes every frame (the last
        two axes). Rectangles have no other symmetry fixing P."""
        syms = [identity_symmetry(self.num_actions)]
        if self.rows == self.cols:
            r, c = np.divmod(np.arange(self.num_actions, dtype=np.int64), self.cols)
            syms.append(Symmetry("transpose", lambda obs: np.ascontiguousarray(np.swapaxes(obs, -1, -2)),
                                 c * self.cols + r))
        return syms

    def action_name(self, action: int) -> str:
        """``"r1c2"``: 0-based row and column of the square taken."""
        r, c = divmod(int(action), self.cols)
        return f"r{r}c{c}"

    def render_one(self, state: ChompState | ChompFramesState, i: int) -> str:
        """P = the poisoned square, # = a square left, . = a square taken; with
        ``frames > 1`` a last line lists the earlier profiles (``-`` = none)."""
        profile = state.profile[i]
        lines = ["     " + " ".join(f"{c:>2}" for c in range(self.cols))]
        for r in range(self.rows):
            cells = ["P" if (r, c) == (0, 0) else "#" if c < profile[r] else "." for c in range(self.cols)]
            lines.append(f"r{r:<2}  " + " ".join(f"{x:>2}" for x in cells))
        status = "over: the player to move has only P left and lost" if state.over[i] else "running"
        lines.append(f"profile {','.join(map(str, profile))}; ply {int(state.moves[i])}, {status}")
        if self.frames > 1:
            earlier = [",".join(map(str, p)) if p[0] else "-" for p in state.history[i].tolist()]
            lines.append(f"earlier profiles (1..{self.frames - 1} plies ago): {' | '.join(earlier)}")
        return "\n".join(lines)


# Chomp's facts (games.descriptors); its oracle, labels and drawing are kept by the
# packages that hold them, keyed by its name.
DESCRIPTOR = GameDescriptor(
    name="chomp", engine=Chomp,
    network=dict(kind="mlp", blocks=2, layers_per_block=2),
)
