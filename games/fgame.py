"""F-Games: synthetic game trees with known minimax values (avi-paper, Appendix F).

The tree is built top-down so that every node's value is known without search.
Values lie in {-1, 0, +1} (n = 1) and are always for the player to move at the node;
mu is uniform over them and the root's value is +1 (the first player wins):

    root (depth 0, v = +1, never a leaf)
     |-- a = k  (the node's special child)  value -v          -> max_a -v_a >= v
     |-- a != k                              value ~ mu | x >= -v  -> -v_a <= v
     ...                                    so v = max_a(-v_a): negamax holds exactly.

A non-root node at depth < h is a leaf with probability beta (it keeps its value);
every node at depth h is a leaf. Playing into a leaf with value v_child ends the game
with reward -v_child for the mover.

Laziness: no tree is stored. Each node has a 64-bit key folded over its action path
with the splitmix64 finaliser, and every random draw of the node is a hash of its key:

    key(root)     = mix(seed ^ ROOT_SALT)
    key(path + a) = mix(key(path) + (a + 1) * GOLDEN)
    special child index of a node   = below(mix(key ^ SPECIAL_SALT), b)
    value draw of a (non-special) node = -v_parent + below(mix(key ^ VALUE_SALT), 2 + v_parent)
    the node is an early leaf         <=> unit(mix(key ^ LEAF_SALT)) < beta

where below(x, n) = ((x >> 32) * n) >> 32 (bias <= n / 2**32) and unit(x) = (x >> 11) / 2**53.
So a node's key costs O(depth) mixes from the root; the state also carries the
node's value, so a step needs only the parent's key and one level of draws.

State (leading batch axis B; depth D = h):
    path   int8[B, D]   actions played so far, -1 beyond `length`
    length int16[B]     plies played = depth of the current node
    value  int8[B]      exact value of the current node for the player to move
    over   bool[B]      the current node is a leaf
Encoding (C.3): float32[B, D, b + 1], row t the one-hot of the t-th action, or of the
"unknown" token (index b) for the future plies; the sequence is the whole state.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game
from games.descriptors import GameDescriptor

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_ROOT_SALT = np.uint64(0x2545F4914F6CDD1D)
_SPECIAL_SALT = np.uint64(0x5851F42D4C957F2D)
_VALUE_SALT = np.uint64(0xD6E8FEB86659FD93)
_LEAF_SALT = np.uint64(0xA0761D6478BD642F)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32, _S11 = (np.uint64(s) for s in (30, 27, 31, 32, 11))

_MAX_DEPTH, _MAX_BRANCHING = 127, 127  # path and length fit int8 / int16


class FGameState(NamedTuple):
    path: np.ndarray  # int8[B, D], -1 padded
    length: np.ndarray  # int16[B]
    value: np.ndarray  # int8[B], for the player to move
    over: np.ndarray  # bool[B]


@njit(cache=True, inline="always")
def _mix(z):
    """splitmix64 finaliser: a bijection of uint64 with full avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def _below(x, n):
    return np.int64(((x >> _S32) * np.uint64(n)) >> _S32)


@njit(cache=True, inline="always")
def _child_key(key, a):
    return _mix(key + np.uint64(a + 1) * _GOLDEN)


@njit(cache=True)
def _key_of(root, path_row, length):
    """The node key at the end of a path: O(length) mixes."""
    key = root
    for t in range(length):
        key = _child_key(key, path_row[t])
    return key


@njit(cache=True, inline="always")
def _child(key, value, special, a, child_depth, depth, beta):
    """(value for the mover at the child, child is a leaf) of child a of a node."""
    ckey = _child_key(key, a)
    if a == special:
        child_value = -value
    else:  # uniform over {x >= -value}: 2 + value choices starting at -value
        child_value = -value + _below(_mix(ckey ^ _VALUE_SALT), 2 + value)
    leaf = child_depth >= depth or (_mix(ckey ^ _LEAF_SALT) >> _S11) * (1.0 / 9007199254740992.0) < beta
    return child_value, leaf


@njit(cache=True)
def _step_kernel(path, length, value, over, actions, root, branching, depth, beta):
    B = path.shape[0]
    new_path, new_length = path.copy(), length.copy()
    new_value, new_over = value.copy(), over.copy()
    reward, done = np.zeros(B, np.float32), np.zeros(B, np.bool_)
    for i in range(B):
        if over[i]:  # the wrapper never steps finished games; stay put, memory-safe
            continue
        L = np.int64(length[i])
        key = _key_of(root, path[i], L)
        special = _below(_mix(key ^ _SPECIAL_SALT), branching)
        a = actions[i]
        child_value, leaf = _child(key, np.int64(value[i]), special, a, L + 1, depth, beta)
        new_path[i, L], new_length[i] = a, L + 1
        new_value[i], new_over[i] = child_value, leaf
        if leaf:
            reward[i], done[i] = -child_value, True
    return new_path, new_length, new_value, new_over, reward, done


@njit(cache=True)
def _expand_kernel(path, length, value, over, root, branching, depth, beta):
    B, A = path.shape[0], branching
    child_path = np.empty((B * A, path.shape[1]), np.int8)
    child_length = np.empty(B * A, np.int16)
    child_value, child_over = np.empty(B * A, np.int8), np.empty(B * A, np.bool_)
    reward, done, legal = np.zeros((B, A), np.float32), np.zeros((B, A), np.bool_), np.zeros((B, A), np.bool_)
    for i in range(B):
        L = np.int64(length[i])
        for a in range(A):  # every row starts as the parent; live parents then move
            row = i * A + a
            child_path[row] = path[i]
            child_length[row], child_value[row], child_over[row] = length[i], value[i], over[i]
        if over[i]:
            continue
        key = _key_of(root, path[i], L)
        special = _below(_mix(key ^ _SPECIAL_SALT), branching)
        for a in range(A):
            row = i * A + a
            v, leaf = _child(key, np.int64(value[i]), special, a, L + 1, depth, beta)
            child_path[row, L], child_length[row] = a, L + 1
            child_value[row], child_over[row] = v, leaf
            legal[i, a] = True
            if leaf:
                reward[i, a], done[i, a] = -v, True
    return child_path, child_length, child_value, child_over, reward, done, legal


@njit(cache=True)
def _child_values_kernel(path, length, value, over, root, branching, depth, beta):
    B = path.shape[0]
    out = np.zeros((B, branching), np.int8)  # [B, A], 0 for finished states
    for i in range(B):
        if over[i]:
            continue
        L = np.int64(length[i])
        key = _key_of(root, path[i], L)
        special = _below(_mix(key ^ _SPECIAL_SALT), branching)
        for a in range(branching):
            out[i, a] = _child(key, np.int64(value[i]), special, a, L + 1, depth, beta)[0]
    return out


@njit(cache=True)
def _encode_kernel(path, length, branching):
    B, D = path.shape
    obs = np.zeros((B, D, branching + 1), np.float32)  # [B, D, b + 1]
    for i in range(B):
        for t in range(D):
            obs[i, t, path[i, t] if t < length[i] else branching] = 1.0
    return obs


def _check_int(name, x, lo, hi):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not lo <= x <= hi:
        raise ValueError(f"fgame: {name} must be an integer in {lo}..{hi}, got {x!r}")
    return int(x)


class FGame(Game):
    """A lazily generated F-Game of height ``depth`` and branching factor ``branching``:
    premature-leaf probability ``beta``, tree instance ``seed`` (see the module header)."""

    def __init__(self, depth: int = 10, branching: int = 5, beta: float = 0.05, seed: int = 0):
        depth = _check_int("depth", depth, 1, _MAX_DEPTH)
        branching = _check_int("branching", branching, 2, _MAX_BRANCHING)
        seed = _check_int("seed", seed, 0, 2**64 - 1)
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0.0 <= beta <= 1.0:
            raise ValueError(f"fgame: beta must be a number in [0, 1], got {beta!r}")
        self.name = "fgame"
        self.params = {"depth": depth, "branching": branching, "beta": float(beta), "seed": seed}
        self.num_actions, self.obs_shape, self.max_length = branching, (depth, branching + 1), depth
        self._depth, self._branching, self._beta = depth, branching, float(beta)
        self._root = np.uint64(_mix(np.uint64(seed) ^ _ROOT_SALT))

    def _tree(self):
        """The kernels' tree arguments after the state: root key, b, h, beta."""
        return self._root, self._branching, self._depth, self._beta

    def _init(self, batch):
        return FGameState(np.full((batch, self._depth), -1, np.int8), np.zeros(batch, np.int16),
                          np.ones(batch, np.int8), np.zeros(batch, bool))

    def terminal(self, state):
        return np.array(state.over, dtype=bool)

    def _legal(self, state):
        # Every action is legal at an inner node.
        return np.broadcast_to(~state.over[:, None], (len(state.over), self._branching))  # [B, A]

    def _step(self, state, actions):
        *fields, reward, done = _step_kernel(*state, actions, *self._tree())
        return FGameState(*fields), reward, done

    def _expand(self, state):
        *children, reward, done, legal = _expand_kernel(*state, *self._tree())
        return Expansion(FGameState(*children), reward, done, legal)

    def _encode(self, state):
        return _encode_kernel(state.path, state.length, self._branching)

    # ---- exact values, for the oracle service -----------------------------------

    def value(self, state) -> np.ndarray:
        """int8[B]: the exact value of each node for the player to move (leaves too)."""
        return np.array(state.value, dtype=np.int8)

    def child_values(self, state) -> np.ndarray:
        """int8[B, A]: each child's exact value for the player to move there; 0 in rows
        of finished states, which have no children."""
        return _child_values_kernel(*state, *self._tree())

    def optimal_actions(self, state) -> np.ndarray:
        """bool[B, A]: the children whose negated value is the node's value (all False
        in finished states)."""
        best = -self.child_values(state).astype(np.int16) == state.value[:, None]  # [B, A]
        best[state.over] = False
        return best

    def action_name(self, action):
        return str(int(action))

    def render_one(self, state, i):
        L = int(state.length[i])
        moves = " ".join(str(int(a)) for a in state.path[i, :L]) or "(root)"
        value = int(state.value[i])
        outcome = {1: "win", 0: "draw", -1: "loss"}[value]
        status = "over (leaf)" if state.over[i] else "to play"
        return (f"F-Game h={self._depth} b={self._branching} seed={self.params['seed']}\n"
                f"path:   {moves}\n"
                f"length: {L}/{self._depth}, {status}\n"
                f"value:  {value:+d} ({outcome} for the player to move)")


# F-Games' facts (games.descriptors); their values are known by construction.
DESCRIPTOR = GameDescriptor(
    name="fgame", engine=FGame,
    network=dict(kind="mlp", blocks=2, layers_per_block=2),  # AVI paper C.3
    preset={"actors.num_envs": 4096, "learner.epochs_per_iteration": 1.0},  # AVI paper Table 5
    # AlphaZero's Table 6 is AlphaZero's (algorithms/alphazero.py).
)
