"""Hex on a ``size x size`` rhombus, with an optional swap rule.

Cell ``(r, c)`` is action ``r * size + c``; rows are drawn with growing indentation,
so the six neighbours of a cell are its left/right cells and two cells in each of
the rows above and below (size 4 shown)::

        a  b  c  d                 neighbours of (r, c):
     1   .  .  .  .                  (r-1, c)  (r-1, c+1)
      2   .  .  .  .              (r, c-1)  [r, c]  (r, c+1)
       3   .  .  .  .                  (r+1, c-1)  (r+1, c)
        4   .  .  .  .

Black ("x", the first player) joins the top row (row 0) to the bottom row
(row size-1); White ("o", the second player) joins the left column to the right
one. A filled board always holds exactly one such chain, so there are no draws, and
the game ends on the move that completes a chain (the mover wins, reward +1).

Swap rule (``swap=True``): at ply 1 only, White may answer Black's first stone with
the extra action ``size * size`` ("swap") instead of placing a stone. The swap
removes Black's stone at ``(r, c)`` and puts a White stone at ``(c, r)``, its mirror
image across the long diagonal (the line through a1 and the opposite corner).
Colours keep their goals, and Black moves next. The mirror maps a top-bottom chain
to a left-right one, so White owns exactly the position Black had built: this is
the usual "swap sides" rule with the players keeping their colours. The swap is one
ply, so the player to move is always Black after an even number of plies.

State, one row per batch element:
  board   int8[B, size, size]  0 empty, 1 Black, 2 White
  moves   int16[B]             plies played (a swap counts as one)
  winner  int8[B]              0 while the game runs, else 1 (Black) or 2 (White)

Win detection floods the new stone's group (step) or labels the mover's groups
once per parent and ORs the edge flags of the groups around each empty cell
(expand), so nothing beyond the board is kept between moves.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, Symmetry, identity_symmetry
from games.descriptors import GameDescriptor, GtpFacts

EMPTY, BLACK, WHITE = 0, 1, 2
_LETTERS = "abcdefghijklmnopqrs"  # column names, a..s for the 19 columns of the largest board
_NEIGHBOUR_STEPS = ((-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0))


class HexState(NamedTuple):
    board: np.ndarray  # int8[B, size, size], 0 empty / 1 Black / 2 White
    moves: np.ndarray  # int16[B], plies played
    winner: np.ndarray  # int8[B], 0 running / 1 Black won / 2 White won


@functools.lru_cache(maxsize=None)
def _tables(size: int):
    """Per-size lookup tables, built once per board size.

    neighbours int64[N, 6]: neighbour cells of each cell, -1 where off the board.
    edges      int64[3, N]: edge bits of each cell for colour 1 (bit 0 top row,
               bit 1 bottom row) and colour 2 (bit 0 left column, bit 1 right
               column); row 0 is unused so a colour indexes it directly.
    mirror     int64[N]:    cell (r, c) -> (c, r), the swap's reflection.
    rot180     int64[N]:    cell (r, c) -> (size-1-r, size-1-c).
    """
    n = size * size
    neighbours = np.full((n, 6), -1, np.int64)
    edges = np.zeros((3, n), np.int64)
    mirror, rot180 = np.empty(n, np.int64), np.empty(n, np.int64)
    for r in range(size):
        for c in range(size):
            p = r * size + c
            for k, (dr, dc) in enumerate(_NEIGHBOUR_STEPS):
                if 0 <= r + dr < size and 0 <= c + dc < size:
                    neighbours[p, k] = (r + dr) * size + c + dc
            edges[BLACK, p] = (r == 0) | (r == size - 1) << 1
            edges[WHITE, p] = (c == 0) | (c == size - 1) << 1
            mirror[p] = c * size + r
            rot180[p] = (size - 1 - r) * size + (size - 1 - c)
    return neighbours, edges, mirror, rot180


# --------------------------------------------------------------------- kernels


@njit(cache=True)
def _group_edges(board, start, colour, neighbours, edges, seen, stamp, stack):
    """Edge bits (3 = both sides) of the ``colour`` group through cell ``start`` of
    one flat board. ``seen[p] == stamp`` marks visited cells, so ``seen`` is never
    cleared: each call passes a fresh stamp. Stops as soon as both sides are reached."""
    flags = 0
    top = 0
    stack[0] = start
    seen[start] = stamp
    while top >= 0:
        p = stack[top]
        top -= 1
        flags |= edges[colour, p]
        if flags == 3:
            return 3
        for k in range(6):
            q = neighbours[p, k]
            if q >= 0 and board[q] == colour and seen[q] != stamp:
                seen[q] = stamp
                top += 1
                stack[top] = q
    return flags


# Allocates nothing, so it runs without numba's reference counting (_nrt=False): the Hex
# solver calls it at every node of its search (oracle_service/jit.py has the measurement).
@njit(cache=True, _nrt=False)
def label_groups(board, colour, neighbours, edges, label, flags, stack, first):
    """Number the groups of ``colour`` on a flat board ``first``, ``first + 1``, ...: each
    stone's ``label[p]`` (the caller fills ``label`` with -1 first) and each group's edge
    bits ``flags[g]`` (bit 0 and bit 1: the colour's two edges, ``edges[colour, p]``);
    ``stack`` is scratch of the board's size. Returns the next free number."""
    g = first
    for p in range(board.shape[0]):
        if board[p] == colour and label[p] < 0:
            top = 0
            stack[0] = p
            label[p] = g
            f = 0
            while top >= 0:
                q = stack[top]
                top -= 1
                f |= edges[colour, q]
                for k in range(6):
                    s = neighbours[q, k]
                    if s >= 0 and board[s] == colour and label[s] < 0:
                        label[s] = g
                        top += 1
                        stack[top] = s
            flags[g] = f
            g += 1
    return g


@njit(cache=True)
def _step_kernel(board, moves, winner, actions, neighbours, edges, mirror):
    """board int8[B, N] (flat); actions int64[B] legal for live games."""
    B, N = board.shape
    out_board = board.copy()
    out_moves = moves + np.int16(1)
    out_winner = winner.copy()
    reward = np.zeros(B, np.float32)  # [B]
    done = np.zeros(B, np.bool_)  # [B]
    seen = np.zeros(N, np.int64)
    stack = np.empty(N, np.int64)
    for b in range(B):
        a = actions[b]
        if a == N:  # swap: Black's only stone becomes White's, mirrored
            for p in range(N):
                if out_board[b, p] == BLACK:
                    out_board[b, p] = EMPTY
                    out_board[b, mirror[p]] = WHITE
                    break
            continue  # one stone cannot touch both sides of a board of size >= 2
        colour = BLACK + (moves[b] & 1)
        out_board[b, a] = colour
        if _group_edges(out_board[b], a, colour, neighbours, edges, seen, b + 1, stack) == 3:
            out_winner[b] = colour
            reward[b] = 1.0
            done[b] = True
    return out_board, out_moves, out_winner, reward, done


@njit(cache=True)
def _expand_kernel(board, moves, winner, neighbours, edges, mirror, swap):
    """All children of flat boards int8[B, N]; A = N + swap, child (b, a) at row b*A+a."""
    B, N = board.shape
    A = N + 1 if swap else N
    ch_board = np.empty((B * A, N), np.int8)
    ch_moves = np.empty(B * A, np.int16)
    ch_winner = np.empty(B * A, np.int8)
    reward = np.zeros((B, A), np.float32)  # [B, A]
    done = np.zeros((B, A), np.bool_)  # [B, A]
    legal = np.zeros((B, A), np.bool_)  # [B, A]
    label = np.empty(N, np.int64)  # group index of each mover's stone, -1 elsewhere
    group_flags = np.empty(N, np.int64)  # edge bits of each group
    stack = np.empty(N, np.int64)
    for b in range(B):
        for a in range(A):  # every row starts as a copy of the parent (kept where illegal)
            row = b * A + a
            ch_board[row] = board[b]
            ch_moves[row] = moves[b]
            ch_winner[row] = winner[b]
        if winner[b] != 0:
            continue
        colour = BLACK + (moves[b] & 1)
        # Label the mover's groups once; a new stone joins the groups around it.
        label[:] = -1
        label_groups(board[b], colour, neighbours, edges, label, group_flags, stack, 0)
        for a in range(N):
            if board[b, a] != EMPTY:
                continue
            row = b * A + a
            legal[b, a] = True
            flags = edges[colour, a]
            for k in range(6):
                q = neighbours[a, k]
                if q >= 0 and label[q] >= 0:
                    flags |= group_flags[label[q]]
            ch_board[row, a] = colour
            ch_moves[row] += 1
            if flags == 3:
                ch_winner[row] = colour
                reward[b, a] = 1.0
                done[b, a] = True
        if swap and moves[b] == 1:
            row = b * A + N
            legal[b, N] = True
            ch_moves[row] += 1
            for p in range(N):
                if board[b, p] == BLACK:
                    ch_board[row, p] = EMPTY
                    ch_board[row, mirror[p]] = WHITE
    return ch_board, ch_moves, ch_winner, reward, done, legal


@njit(cache=True)
def _encode_kernel(board, moves, colour_plane):
    """float32[B, 2 (+1), N]: mover's stones, opponent's stones (, 1s if White moves)."""
    B, N = board.shape
    out = np.zeros((B, 3 if colour_plane else 2, N), np.float32)
    for b in range(B):
        mover = BLACK + (moves[b] & 1)
        for p in range(N):
            v = board[b, p]
            if v == mover:
                out[b, 0, p] = 1.0
            elif v != EMPTY:
                out[b, 1, p] = 1.0
        if colour_plane and mover == WHITE:
            out[b, 2, :] = 1.0
    return out


@njit(cache=True)
def _winners_kernel(board, neighbours, edges):
    """Who owns a side-to-side chain on flat boards int8[B, N]: bit 0 Black, bit 1 White."""
    B, N = board.shape
    out = np.zeros(B, np.int8)
    seen = np.zeros(N, np.int64)
    stack = np.empty(N, np.int64)
    stamp = 0
    for b in range(B):
        for colour in (BLACK, WHITE):
            # Every chain touches the first side, so flooding from its cells finds it;
            # one stamp per (board, colour) lets each group be flooded once.
            stamp += 1
            for p in range(N):
                if board[b, p] == colour and edges[colour, p] & 1 and seen[p] != stamp:
                    if _group_edges(board[b], p, colour, neighbours, edges, seen, stamp, stack) == 3:
                        out[b] |= colour
                        break
    return out


# ------------------------------------------------------------------- the game


class Hex(Game):
    """Hex on a ``size x size`` board (2..19), Black first, optional swap rule.

    ``obs_shape = (2, size, size)``: channel 0 the stones of the player to move,
    channel 1 the opponent's (the paper's 7x7x2 input). With ``swap=True`` a third
    plane, all ones when White is to move, is added: after a swap the stone counts
    no longer tell whose turn it is (ply 1 and ply 2 after a swap both show one
    opponent stone and no own stone), and the two players have different goals.
    """

    def __init__(self, size: int = 7, swap: bool = False):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 2 <= size <= 19:
            raise ValueError(f"hex: parameter size must be an integer in 2..19, got {size!r}")
        if not isinstance(swap, (bool, np.bool_)):
            raise ValueError(f"hex: parameter swap must be True or False, got {swap!r}")
        self.size, self.swap = int(size), bool(swap)
        self.name = "hex"
        self.params = {"size": self.size, "swap": self.swap}
        self.cells = self.size * self.size
        self.num_actions = self.cells + (1 if self.swap else 0)
        self.swap_action = self.cells if self.swap else None
        self.obs_shape = (3 if self.swap else 2, self.size, self.size)
        self.max_length = self.cells + (1 if self.swap else 0)
        self._neighbours, self._edges, self._mirror, self._rot180 = _tables(self.size)

    def _flat(self, state: HexState) -> np.ndarray:
        return state.board.reshape(-1, self.cells)  # [B, N], a view

    def _init(self, batch: int) -> HexState:
        return HexState(np.zeros((batch, self.size, self.size), np.int8),
                        np.zeros(batch, np.int16), np.zeros(batch, np.int8))

    def terminal(self, state: HexState) -> np.ndarray:
        return state.winner != 0

    def _legal(self, state: HexState) -> np.ndarray:
        empty = self._flat(state) == EMPTY  # [B, N]
        if not self.swap:
            return empty
        return np.concatenate([empty, (state.moves == 1)[:, None]], axis=1)  # [B, N+1]

    def _step(self, state: HexState, actions: np.ndarray):
        board, moves, winner, reward, done = _step_kernel(
            self._flat(state), state.moves, state.winner, actions,
            self._neighbours, self._edges, self._mirror)
        return HexState(board.reshape(-1, self.size, self.size), moves, winner), reward, done

    def _expand(self, state: HexState) -> Expansion:
        board, moves, winner, reward, done, legal = _expand_kernel(
            self._flat(state), state.moves, state.winner,
            self._neighbours, self._edges, self._mirror, self.swap)
        children = HexState(board.reshape(-1, self.size, self.size), moves, winner)
        return Expansion(children, reward, done, legal)

    def _encode(self, state: HexState) -> np.ndarray:
        obs = _encode_kernel(self._flat(state), state.moves, self.swap)
        return obs.reshape(-1, *self.obs_shape)

    # ---- boards from outside (oracle positions, tests) ------------------------

    def winners(self, boards) -> np.ndarray:
        """int8[B] for boards int[B, size, size] (0/1/2): 1 if Black has a top-bottom
        chain, 2 if White has a left-right chain, 0 if neither (3 would mean both,
        which the geometry of Hex rules out)."""
        boards = self._check_boards(boards)
        return _winners_kernel(boards.reshape(-1, self.cells), self._neighbours, self._edges)

    def from_boards(self, boards) -> HexState:
        """States for boards int[B, size, size] (0 empty, 1 Black, 2 White) reached
        without a swap: Black has as many stones as White or one more, and the player
        to move follows from the counts. A board with a chain must have its winner as
        the player who moved last (the game stops on the winning stone)."""
        boards = self._check_boards(boards)
        black = (boards == BLACK).reshape(len(boards), -1).sum(axis=1)
        white = (boards == WHITE).reshape(len(boards), -1).sum(axis=1)
        winner = _winners_kernel(boards.reshape(-1, self.cells), self._neighbours, self._edges)
        for i in range(len(boards)):
            if not 0 <= black[i] - white[i] <= 1:
                raise ValueError(f"hex: board {i} has {black[i]} Black and {white[i]} White stones; "
                                 f"Black (first player) must have as many as White or one more")
            last = BLACK if black[i] > white[i] else WHITE
            if winner[i] not in (0, last):
                raise ValueError(f"hex: board {i} has a chain for {'Black' if winner[i] == 1 else 'White'}"
                                 f" but {'Black' if last == BLACK else 'White'} moved last")
        return HexState(boards.astype(np.int8), (black + white).astype(np.int16), winner)

    def _check_boards(self, boards) -> np.ndarray:
        boards = np.asarray(boards)
        if boards.ndim != 3 or boards.shape[1:] != (self.size, self.size):
            raise ValueError(f"hex: boards must have shape (B, {self.size}, {self.size}), got {boards.shape}")
        if not np.isin(boards, (EMPTY, BLACK, WHITE)).all():
            raise ValueError("hex: board cells must be 0 (empty), 1 (Black) or 2 (White)")
        return np.ascontiguousarray(boards, dtype=np.int8)

    # ---- symmetry, names, drawing ---------------------------------------------

    def symmetries(self) -> list[Symmetry]:
        """Identity and the 180-degree rotation (r, c) -> (size-1-r, size-1-c), which
        keeps both players' goals (top and bottom trade places, as do left and right).
        The swap action maps to itself."""
        action = np.arange(self.num_actions, dtype=np.int64)
        action[: self.cells] = self._rot180
        rotate = Symmetry("rot180", lambda obs: np.ascontiguousarray(obs[..., ::-1, ::-1]), action)
        return [identity_symmetry(self.num_actions), rotate]

    def action_name(self, action: int) -> str:
        """``"c4"``: column letter then 1-based row; ``"swap"`` for the swap action."""
        action = int(action)
        if action == self.swap_action:
            return "swap"
        r, c = divmod(action, self.size)
        return f"{_LETTERS[c]}{r + 1}"

    def render_one(self, state: HexState, i: int) -> str:
        """x = Black (joins top and bottom), o = White (joins left and right)."""
        board, moves, winner = state.board[i], int(state.moves[i]), int(state.winner[i])
        letters = " ".join(_LETTERS[: self.size])
        lines = ["    " + letters]
        for r in range(self.size):
            cells = " ".join(".xo"[v] for v in board[r])
            lines.append(" " * r + f"{r + 1:>2}  {cells}  {r + 1}")
        lines.append(" " * (self.size + 3) + letters)
        if winner:
            status = f"{'x (Black)' if winner == BLACK else 'o (White)'} won"
        else:
            status = f"{'x (Black)' if moves % 2 == 0 else 'o (White)'} to move"
        lines.append(f"ply {moves}, {status}")
        return "\n".join(lines)


def occupied(game: Hex, state: HexState, action: int) -> bool:
    """Whether ``action`` names a cell of the first board of ``state`` that holds a stone."""
    return action != game.swap_action and bool(state.board[0].reshape(-1)[action])


# The preset's changes at the boards other than the paper's 7x7 (launch.config.preset_config,
# chosen by game_params), from six AVI runs of 768 updates on 5x5 (docs/training.md): 32
# collection steps per iteration (four times the iterations, fresher values) with epsilon
# 0.1 scored best or near it on every metric, the paper's network kept (128 wide was no
# better); the differences are within one seed's noise. Play against the solver, a second
# a run on these boards, comes every 4th evaluation, so the final weights' keeps its time.
# A replay of the last 8 iterations' rows, as Connect Four's small boards: AVI's targets
# are those of the weights that collected them, and a million rows keep them hundreds of
# iterations stale (3x3 and 5x5 side by side, docs/training.md).
_BOARD_PRESET = {"actors.collect_steps": 32, "actors.epsilon": 0.1, "evaluation.play_every": 4,
                 "replay.capacity": 32768}
_PRESETS_AT = {size: _BOARD_PRESET for size in (3, 4, 5, 6)}


def preset_at(params: dict) -> dict:
    """The preset's changes on the board ``params`` makes (its ``size``); none at 7x7."""
    return dict(_PRESETS_AT.get(params.get("size", 7), {}))


# Hex's facts (games.descriptors): played over GTP with the swap rule, written as SGF.
DESCRIPTOR = GameDescriptor(
    name="hex", engine=Hex,
    gtp=GtpFacts(letters=_LETTERS, swap=True, occupied=occupied, sgf_game=11),
    network=dict(kind="mlp", blocks=2, layers_per_block=2, symmetrize=True),  # AVI paper C.1
    preset_at=preset_at,
)
