"""The game contract shared by every engine, and helpers over batched states.

A game is a small set of pure, batched functions over a state: a ``NamedTuple``
of numpy arrays whose first axis is the batch axis ``B``. Each engine writes only
its rules (the underscore methods); the public methods here enforce the shared
invariants once for every game:

- ``reward`` is for the player who just moved (negamax convention) and ``done``
  is a separate flag: they are never folded into one value;
- stepping an element whose game is over, or playing an action its legal mask
  forbids, raises :class:`IllegalMoveError` naming the batch element and action;
- ``legal`` is all False exactly for finished games and never empty otherwise
  (games where a player must pass expose an explicit pass action).
"""

from __future__ import annotations

import abc
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from numba import njit

State = Any  # a NamedTuple of numpy arrays, each with leading axis B


class IllegalMoveError(ValueError):
    """An action that the rules forbid, or a move in a game that is over."""


class Expansion(NamedTuple):
    """All children of every state of a batch, from one call to ``Game.expand``.

    ``children`` is a state of batch ``B * A``: the child of parent ``b`` through
    action ``a`` sits at row ``b * A + a``. Rows of illegal actions hold some valid
    state of no meaning; read them only where ``legal`` is True.
    """

    children: State  # batch B * A
    reward: np.ndarray  # float32[B, A], for the player who moved; 0 where illegal
    done: np.ndarray  # bool[B, A], False where illegal
    legal: np.ndarray  # bool[B, A]


class Symmetry(NamedTuple):
    """One element of a game's symmetry group, acting on encodings and actions.

    ``obs`` maps encoded boards ``float32[B, *obs_shape]`` to the encodings of the
    transformed positions; ``action[a]`` is the image of action ``a``, so a policy
    ``p[B, A]`` of the original maps to ``p_t[:, action] = p`` in the transformed one.
    The value of a position is invariant under every symmetry.
    """

    name: str
    obs: Callable[[np.ndarray], np.ndarray]
    action: np.ndarray  # int64[A], a permutation of range(A)


# ----------------------------------------------------------------- batched states


def batch_size(state: State) -> int:
    return int(np.asarray(state[0]).shape[0])


def take(state: State, index) -> State:
    """Rows ``index`` (an int array, slice or bool mask) of every field."""
    return type(state)(*(np.asarray(f)[index] for f in state))


def put(state: State, index, rows: State) -> State:
    """A copy of ``state`` whose rows ``index`` are replaced by ``rows``."""
    fields = []
    for f, r in zip(state, rows):
        f = np.array(f, copy=True)
        f[index] = r
        fields.append(f)
    return type(state)(*fields)


def where(mask: np.ndarray, a: State, b: State) -> State:
    """Row-wise select: rows of ``a`` where ``mask[B]`` is True, else rows of ``b``."""
    mask = np.asarray(mask, dtype=bool)
    out = []
    for fa, fb in zip(a, b):
        # Copy b and overwrite the selected rows: cheaper than an elementwise np.where
        # on wide fields (Go's hash history) when few rows are selected.
        field = np.array(fb, copy=True)
        field[mask] = np.asarray(fa)[mask]
        out.append(field)
    return type(a)(*out)


def concat(states: Sequence[State]) -> State:
    return type(states[0])(*(np.concatenate(fs, axis=0) for fs in zip(*states)))


def repeat(state: State, n: int) -> State:
    """Each row repeated ``n`` times in place: row ``b`` becomes rows ``b*n .. b*n+n-1``."""
    return type(state)(*(np.repeat(f, n, axis=0) for f in state))


def state_keys(state: State) -> list[bytes]:
    """One bytes key per row: the row's fields, byte for byte (equal states, equal keys)."""
    n = batch_size(state)
    if n == 0:
        return []
    rows = np.concatenate([np.ascontiguousarray(f).reshape(n, -1).view(np.uint8) for f in state], axis=1)
    return [r.tobytes() for r in rows]


def one_step_q(expansion: Expansion, child_values: np.ndarray, gamma: float) -> np.ndarray:
    """float32[B, A]: q(s, a) = r(s, a) - gamma V(f(s, a)), with V = 0 past a move that
    ends the game and -inf for illegal moves. ``child_values`` float32[B * A] or [B, A]
    holds V of each child for the player to move there; it is read only where the move
    is legal and the game goes on."""
    legal, done, reward = expansion.legal, expansion.done, expansion.reward
    child_v = np.asarray(child_values, np.float32).reshape(legal.shape)
    q = reward - gamma * np.where(done, 0.0, child_v)
    return np.where(legal, q, -np.inf).astype(np.float32)


def random_legal_actions(legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``legal[B, A]`` (0 where none)."""
    return _pick_kth_legal(np.ascontiguousarray(legal), rng.random(legal.shape[0]))


@njit(cache=True)
def _pick_kth_legal(legal, uniform):
    # One uniform draw per row picks the k-th legal action: the cost of random play
    # stays a few microseconds per batch, not a [B, A] array of draws and an argmax.
    B, A = legal.shape
    out = np.zeros(B, np.int64)
    for b in range(B):
        count = 0
        for a in range(A):
            count += legal[b, a]
        if count == 0:
            continue
        k = min(int(uniform[b] * count), count - 1)
        for a in range(A):
            if legal[b, a]:
                if k == 0:
                    out[b] = a
                    break
                k -= 1
    return out


# ------------------------------------------------------------ playing a batch


def step_live(game: "Game", state: State, actions, live=None, *, check: bool = True):
    """Play ``actions[B]`` in the games where ``live[B]`` holds (default: the games not
    over) and leave the others as they are: ``(state, reward float32[B], done bool[B])``
    over the whole batch, reward 0 and done False where no move was played."""
    actions = np.asarray(actions)
    B = batch_size(state)
    live = ~game.terminal(state) if live is None else np.asarray(live, bool)
    reward, done = np.zeros(B, np.float32), np.zeros(B, bool)
    if not live.any():
        return state, reward, done
    stepped, reward[live], done[live] = game.step(take(state, live), actions[live], check=check)
    return put(state, live, stepped), reward, done


class RandomPly(NamedTuple):
    """One ply of :func:`random_play`: the batch before it and the moves played in it."""

    state: State  # the batch before this ply
    moving: np.ndarray  # bool[B], the games that move in this ply (all False in the last one)
    actions: np.ndarray  # int64[B], the uniformly random legal move of each moving game


def random_play(game: "Game", state: State, rng: np.random.Generator, plies: int | None = None):
    """Uniformly random moves in every live game of ``state``, ply by ply, for ``plies``
    plies (default: until every game is over). Yields a :class:`RandomPly` before each
    ply, and last one for the state after the final ply, whose ``moving`` is all False.
    One draw of ``rng`` per ply and game, finished games included, so that a seed gives
    the same games whatever the consumer reads."""
    ply = 0
    while plies is None or ply < plies:
        live = ~game.terminal(state)
        if not live.any():
            break
        actions = random_legal_actions(game.legal(state), rng)
        yield RandomPly(state, live, actions)
        state, _, _ = step_live(game, state, actions, live, check=False)
        ply += 1
    B = batch_size(state)
    yield RandomPly(state, np.zeros(B, bool), np.zeros(B, np.int64))


# ----------------------------------------------------------------------- contract


class Game(abc.ABC):
    """Base class of every engine. Subclasses set the metadata and write the rules.

    Metadata (set in ``__init__`` of the subclass):
      name: the registry name; params: the keyword arguments that rebuild it;
      num_actions: A; obs_shape: shape of one encoded state;
      max_length: the longest game in plies (passes included).
    """

    name: str
    params: dict
    num_actions: int
    obs_shape: tuple
    max_length: int

    # ---- rules: each engine writes these, batched and unchecked ---------------

    @abc.abstractmethod
    def _init(self, batch: int) -> State: ...

    @abc.abstractmethod
    def _legal(self, state: State) -> np.ndarray:
        """bool[B, A]; may be anything for finished games (the wrapper clears it)."""

    @abc.abstractmethod
    def _step(self, state: State, actions: np.ndarray) -> tuple[State, np.ndarray, np.ndarray]:
        """(state, reward float32[B], done bool[B]) for legal actions of live games."""

    @abc.abstractmethod
    def _encode(self, state: State) -> np.ndarray: ...

    @abc.abstractmethod
    def terminal(self, state: State) -> np.ndarray:
        """bool[B]: the game of each element is over."""

    @abc.abstractmethod
    def render_one(self, state: State, i: int) -> str:
        """Text drawing of element ``i`` for people."""

    def symmetries(self) -> list[Symmetry]:
        """The symmetry group, identity first. Games with symmetries override this."""
        return [identity_symmetry(self.num_actions)]

    def _expand(self, state: State) -> Expansion:
        """Generic expansion by stepping every action of every state; engines with a
        compiled kernel override it."""
        B, A = batch_size(state), self.num_actions
        legal = self.legal(state)
        # Illegal (b, a) pairs are stepped with some legal action of b so that the
        # rules only ever see legal moves; finished parents are stepped not at all.
        first_legal = legal.argmax(axis=1)
        actions = np.where(legal, np.arange(A)[None, :], first_legal[:, None]).reshape(-1)
        live = np.repeat(legal.any(axis=1), A)
        children, reward, done = step_live(self, repeat(state, A), actions, live, check=False)
        flat_legal = legal.reshape(-1)
        reward[~flat_legal], done[~flat_legal] = 0.0, False
        return Expansion(children, reward.reshape(B, A), done.reshape(B, A), legal)

    # ---- the public, checked API ----------------------------------------------

    def init(self, batch: int) -> State:
        if int(batch) < 1:
            raise ValueError(f"{self.name}: batch size must be >= 1, got {batch}")
        return self._init(int(batch))

    def legal(self, state: State) -> np.ndarray:
        """bool[B, A]; all False exactly where the game is over."""
        mask = np.array(self._legal(state), dtype=bool, copy=True)
        mask[self.terminal(state)] = False
        return mask

    def step(self, state: State, actions, *, check: bool = True):
        """Play ``actions[B]``: returns ``(state, reward[B], done[B])``, the reward for
        the player who moved. With ``check`` (the default) every action is validated
        first; hot loops that pick actions from ``legal`` may pass ``check=False``."""
        actions = np.asarray(actions)
        batch_size(state)
        if check:
            self.check_actions(state, actions)
        return self._step(state, actions.astype(np.int64, copy=False))

    def check_actions(self, state: State, actions: np.ndarray, *, label=None, what="batch element") -> None:
        """Raise :class:`IllegalMoveError` for the first action the rules forbid.
        ``label(i)`` names element ``i`` in the message (its own index by default)."""
        B = batch_size(state)
        if actions.shape != (B,):
            raise ValueError(f"{self.name}: actions must have shape ({B},), got {actions.shape}")
        if not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"{self.name}: actions must be integers, got dtype {actions.dtype}")
        out_of_range = (actions < 0) | (actions >= self.num_actions)
        if out_of_range.any():
            self._raise_illegal(out_of_range, actions, f"is out of range 0..{self.num_actions - 1}",
                                label, what)
        over = self.terminal(state)
        if over.any():
            self._raise_illegal(over, actions, "was played in a game that is over", label, what)
        ok = self._legal(state)[np.arange(B), actions]
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            reason = self.illegal_reason(take(state, [i]), int(actions[i]))
            self._raise_illegal(~ok, actions, reason, label, what)

    def _raise_illegal(self, bad, actions, reason, label, what):
        i = int(np.flatnonzero(bad)[0])
        a = int(actions[i])
        label = label(i) if label is not None else i
        name = f" ({self.action_name(a)})" if 0 <= a < self.num_actions else ""
        raise IllegalMoveError(f"{self.name}: {what} {label}: action {a}{name} {reason}")

    def encode(self, state: State) -> np.ndarray:
        """float32[B, *obs_shape], from the point of view of the player to move."""
        return self._encode(state)

    def expand(self, state: State) -> Expansion:
        """Every child of every state at once, with rewards, done flags and legality."""
        return self._expand(state)

    def from_moves(self, move_lists: Sequence[Sequence[int]]) -> State:
        """The states reached by playing each list of actions from the start.

        Lists may differ in length. An illegal move raises :class:`IllegalMoveError`
        naming the batch element, the ply and the move."""
        move_lists = [list(m) for m in move_lists]
        B = len(move_lists)
        if B == 0:
            raise ValueError(f"{self.name}: from_moves needs at least one move list")
        state = self.init(B)
        longest = max(len(m) for m in move_lists)
        for ply in range(longest):
            moving = np.array([len(m) > ply for m in move_lists])
            actions = np.array([m[ply] if len(m) > ply else 0 for m in move_lists], dtype=np.int64)
            rows = np.flatnonzero(moving)
            # Checked here rather than by step_live, to name the move list and the ply.
            self.check_actions(take(state, rows), actions[rows], label=lambda i: f"{rows[i]}, ply {ply}",
                               what="move list")
            state, _, _ = step_live(self, state, actions, moving, check=False)
        return state

    def render(self, state: State, i: int = 0) -> str:
        return self.render_one(state, i)

    def illegal_reason(self, state: State, action: int) -> str:
        """Why ``action`` is illegal in the one-element ``state``; engines may be specific
        (e.g. "column 3 is full")."""
        return "is illegal here"

    def action_name(self, action: int) -> str:
        """A human name of an action; engines override it (e.g. ``d3`` or ``pass``)."""
        return str(action)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"games.make({self.name!r}{', ' if args else ''}{args})"


def identity_symmetry(num_actions: int) -> Symmetry:
    return Symmetry("identity", lambda obs: obs, np.arange(num_actions, dtype=np.int64))


def square_board_symmetries(size: int, extra_actions: int = 0) -> list[Symmetry]:
    """The 8 rotations and reflections of a ``size x size`` board whose encodings end
    with two board axes (``[..., size, size]``) and whose actions are
    ``row * size + col`` followed by ``extra_actions`` fixed ones (e.g. pass)."""
    idx = np.arange(size * size).reshape(size, size)
    out = []
    for k in range(4):
        for flip in (False, True):
            name = "identity" if k == 0 and not flip else f"rot{90 * k}" + ("_flip" if flip else "")

            def board(x, k=k, flip=flip):
                if flip:
                    x = x[..., ::-1]
                return np.ascontiguousarray(np.rot90(x, k, axes=(-2, -1)))

            # Where does the cell holding index i go? Transform the index grid and read
            # back: after the transform, position p holds original cell board(idx)[p].
            moved = board(idx).reshape(-1)
            action = np.empty(size * size + extra_actions, dtype=np.int64)
            action[moved] = np.arange(size * size)
            action[size * size:] = np.arange(size * size, size * size + extra_actions)
            out.append(Symmetry(name, board, action))
    return out
