"""Go on a size x size board: captures, no suicide, positional superko, area scoring.

Board layout (9x9 shown), cell index ``p = row * size + col``; row 0 is the bottom
line, named "1", and columns are lettered A..T without I, as Go players write
(OpenSpiel numbers its Go actions the same way):

      A  B  C  D  E  F  G  H  J
   9 72 73 74 75 76 77 78 79 80  9
   8 63 ..                    8
   .                          .
   2  9 10 11 12 13 14 15 16 17  2
   1  0  1  2  3  4  5  6  7  8  1
      A  B  C  D  E  F  G  H  J

Actions are the cells ``0 .. size*size-1`` and pass ``= size*size``. Black moves
first; a placement captures the opponent's groups it leaves without liberties; a
placement that leaves its own group without liberties and captures nothing
(suicide) is illegal, and so is one that recreates any earlier whole-board position
of the game (positional superko, by Zobrist hashes). Pass is always legal. The game
ends after two consecutive passes or after ``max_length`` plies (passes included;
default ``2 * size * size``, as OpenSpiel) and is scored by area (Tromp-Taylor):
stones plus empty regions that reach only one colour, ``komi`` added to White. The
reward is for the player who made the last move: +1 win, -1 loss, 0 draw (possible
only with an integer komi).

State (leading batch axis B; N = size*size, L = max_length); the start is all zeros:
  board    int8[B, N]      0 empty, 1 black, 2 white
  to_play  int8[B]         0 black, 1 white (the colour to move is to_play + 1)
  passes   int8[B]         consecutive passes just played
  moves    int32[B]        plies played
  hashes   uint64[B, L+1]  Zobrist hash of the board after each ply; hashes[:, 0] is
                           the empty board (0), entries past ``moves`` are 0
  over     bool[B]
  and caches kept exact move by move, so that the legal mask needs no flood fill:
  bloom    uint64[B, K]    Bloom filter (2 probes) of hashes[:, 1:moves+1] (a placement
                           never empties the board), 64*K bits: the power of two
                           >= 8 * (L+1), so K = 32 on 9x9
  groups   uint64[B, N]    per cell, packed in one word (copying and selecting states
                           costs per array element):

      63          37 36            19 18          9 8          0
     +--------------+----------------+-------------+------------+
     | q: sum of    | s: sum of the  | n: pseudo-  | label: 1 + |
     | their squares| pseudo-liberty | liberty     | root cell, |
     |              | cells          | count       | 0 if empty |
     +--------------+----------------+-------------+------------+
      n, s, q are those of the group at its root cell and 0 elsewhere.

Pseudo-liberties count every (stone, empty neighbour) adjacency, so a cell next to
two stones of a group counts twice. A group is in atari (exactly one distinct
liberty) iff n * q == s**2: Cauchy-Schwarz holds with equality only when all the
cells are the same, and that cell, s / n, is the liberty. Unlike distinct
liberties, n, s and q follow every placement, merge and capture by local updates,
and they fit their bits on any board up to 19x19: a group has at most 684
pseudo-liberties (the grid's edges), so n < 2**10, s < 684 * 361 < 2**18 and
q < 684 * 361**2 < 2**27; the label is at most 361 < 2**9.

Encoding float32[B, 3, size, size], plane[r, c] for cell r*size+c: the mover's
stones, the opponent's stones, and a plane of ones when the mover is Black (komi
makes the value depend on the colour).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, square_board_symmetries
from games.descriptors import GameDescriptor, GtpFacts

COLUMNS = "ABCDEFGHJKLMNOPQRST"  # no I, as on Go boards
EMPTY, BLACK, WHITE = 0, 1, 2
BORDER = 3  # colour of the frame around the padded work board


class GoState(NamedTuple):
    board: np.ndarray  # int8[B, N]
    to_play: np.ndarray  # int8[B], 0 black, 1 white
    passes: np.ndarray  # int8[B]
    moves: np.ndarray  # int32[B]
    hashes: np.ndarray  # uint64[B, L+1]
    over: np.ndarray  # bool[B]
    bloom: np.ndarray  # uint64[B, K]
    groups: np.ndarray  # uint64[B, N], packed: see the module doc


# ------------------------------------------------------------------ kernels
# Speed notes, measured on 9x9 random play:
# - Random boards make flood fills slow through branch mispredictions, so the legal
#   mask is a few branch-free passes that LLVM vectorizes; their loops index with
#   uint64, as a signed index makes numba add a wrap-around test that blocks
#   vectorization.
# - Every call of a compiled function that takes arrays, and every row view, costs
#   atomic reference counting (about 10 ns an array), more than a 9x9 board's
#   work. So each kernel loops over its rows itself, and the one per-row helper
#   that takes arrays (_area_diff) runs once a game.
# - Expand fills np.empty arrays completely rather than writing into np.zeros ones:
#   malloc recycles freed blocks, while calloc's fresh zero pages cost a page fault
#   per 4 KiB (about 2 us here).


def _bloom_words(max_length: int) -> int:
    """Words of the Bloom filter: at least 8 bits a position (a false hit for
    about one probe in 20 when full), a power of two, so a mask picks a bit."""
    bits = 64
    while bits < 8 * (max_length + 1):
        bits *= 2
    return bits // 64


@njit(cache=True)
def _bloom_bits(h, mask):
    """(word, bit mask) of the two probes of hash h, bit numbers masked by mask."""
    b1 = np.int64(h & mask)
    b2 = np.int64((h >> np.uint64(32)) & mask)
    return (b1 >> 6, np.uint64(1) << np.uint64(b1 & 63),
            b2 >> 6, np.uint64(1) << np.uint64(b2 & 63))


# The fields of a ``groups`` word (see the module doc).
LABEL, LIBS = np.uint64(511), np.uint64(2**64 - 512)  # label bits, and the others
N_AT, S_AT, Q_AT = np.uint64(9), np.uint64(19), np.uint64(37)
N_MASK, S_MASK = np.uint64(2**10 - 1), np.uint64(2**18 - 1)


@njit(cache=True)
def _libs_word(n, s, q):
    """A groups word holding n, s and q. Negative values wrap around, so adding
    the word adds each field (which never leaves its range)."""
    return (np.uint64(n) << N_AT) + (np.uint64(s) << S_AT) + (np.uint64(q) << Q_AT)


@njit(cache=True)
def _legal_rows(board, to_play, moves, hashes, over, bloom, groups, size, zob, legal):
    """Fill ``legal[b]`` (N+1 actions) for every unfinished board b.

    Work rows: 0-4 padded boards of M = (size+2)**2 cells, where cell p sits at
    (p // size + 1) * W + p % size + 1 with W = size + 2; 5, 6 per cell:
      0 colours inside a BORDER frame       1 atari flags, 0 on the frame
      2 empty                               3 a placement next to it lives
      4 row 3 gathered from the four neighbours of padded cell W + index
      5 atari flag of each cell             6 opponent stone in atari, then the
                                              placement's Bloom filter hit
    """
    N, W = size * size, size + 2
    M = W * W
    work = np.zeros((7, M), np.int8)
    work[0] = BORDER
    newh = np.empty(N, np.uint64)  # hash after each placement
    one, Wu = np.uint64(1), np.uint64(W)
    mask = np.uint64(64 * bloom.shape[1] - 1)
    s32, m6, s6 = np.uint64(32), np.uint64(63), np.uint64(6)
    for b in range(board.shape[0]):
        if over[b]:
            continue
        c, t = to_play[b] + 1, moves[b]
        o = 3 - c
        for p in range(N):
            root = max(np.int64(groups[b, p] & LABEL), 1) - 1  # any cell if empty (unused)
            y = groups[b, root]
            n, s = np.int64((y >> N_AT) & N_MASK), np.int64((y >> S_AT) & S_MASK)
            work[5, p] = n * np.int64(y >> Q_AT) == s * s
        for r in range(size):
            src, dst = np.uint64(r * size), np.uint64((r + 1) * W + 1)
            for j in range(np.uint64(size)):
                work[0, dst + j] = board[b, src + j]
                work[1, dst + j] = work[5, src + j]
        # A placement next to x lives if x is empty, a friendly stone with another
        # liberty, or an opponent stone in atari (then the placement captures it).
        for x in range(M):
            v, a = work[0, x], work[1, x]
            work[2, x] = v == EMPTY
            work[3, x] = (v == EMPTY) | ((v == c) & (a == 0)) | ((v == o) & (a == 1))
        for x in range(np.uint64(M - 2 * W)):
            work[4, x] = work[2, x + Wu] & (work[3, x + Wu - one] | work[3, x + Wu + one]
                                            | work[3, x] | work[3, x + Wu + Wu])
        for r in range(size):
            src, dst = np.uint64(r * W + 1), np.uint64(r * size)
            for j in range(np.uint64(size)):
                legal[b, dst + j] = work[4, src + j] != 0
        h = hashes[b, t]
        for p in range(N):
            newh[p] = h ^ zob[c, p]
        # A placement on the one liberty of opponent groups in atari takes them; that
        # liberty is s / n, as all of the group's pseudo-liberties are that cell.
        # (Flags first, then a rarely taken branch: 4x faster than one loop.)
        for x in range(N):
            work[6, x] = (board[b, x] == o) & (work[5, x] != 0)
        for x in range(N):
            if work[6, x]:
                y = groups[b, np.int64(groups[b, x] & LABEL) - 1]
                n, s = np.int64((y >> N_AT) & N_MASK), np.int64((y >> S_AT) & S_MASK)
                newh[s // n] ^= zob[o, x]
        # Superko: only placements whose two Bloom bits are set are looked up for real.
        for p in range(N):
            x = newh[p]
            b1, b2 = x & mask, (x >> s32) & mask  # as _bloom_bits
            hit = (bloom[b, b1 >> s6] >> (b1 & m6)) & (bloom[b, b2 >> s6] >> (b2 & m6)) & one
            work[6, p] = legal[b, p] & (hit != 0)
        for p in range(N):
            if work[6, p]:
                for k in range(t + 1):
                    if hashes[b, k] == newh[p]:
                        legal[b, p] = False
                        break
        legal[b, N] = True


@njit(cache=True)
def _area_diff(board, i, nbr, deg, stack, mark, stamp):
    """Black's area minus White's on board i (Tromp-Taylor, before komi), by flood
    fills of the empty regions; ``mark[x] == stamp`` flags visited cells, so the mark
    array needs no clearing between calls. Returns (diff, next stamp)."""
    N = board.shape[1]
    diff = 0
    stamp += 1
    for p in range(N):
        v = board[i, p]
        if v == BLACK:
            diff += 1
        elif v == WHITE:
            diff -= 1
        elif mark[p] != stamp:
            mark[p] = stamp
            stack[0] = p
            top = 1
            size = 0
            touch = 0  # bit 1: reaches black, bit 2: reaches white
            while top > 0:
                top -= 1
                x = stack[top]
                size += 1
                for k in range(deg[x]):
                    y = nbr[x, k]
                    w = board[i, y]
                    if w == EMPTY:
                        if mark[y] != stamp:
                            mark[y] = stamp
                            stack[top] = y
                            top += 1
                    else:
                        touch |= w
            if touch == BLACK:
                diff += size
            elif touch == WHITE:
                diff -= size
    return diff, stamp


@njit(cache=True)
def _score_kernel(board, nbr, deg, komi, out):
    B, N = board.shape
    stack = np.empty(N, np.int64)
    mark = np.zeros(N, np.int64)
    stamp = 0
    for b in range(B):
        diff, stamp = _area_diff(board, b, nbr, deg, stack, mark, stamp)
        out[b] = diff - komi


@njit(cache=True)
def _play_rows(board, to_play, passes, moves, hashes, over, bloom, groups, rows, actions, nbr,
               deg, zob, komi, max_length, reward, done):
    """Play ``actions[k]`` (legal) on board ``rows[k]`` in place; ``reward`` and
    ``done`` are indexed by board. A placement keeps the group caches exact: it
    takes a pseudo-liberty from each neighbouring group, joins or merges friendly
    groups (relabelling the merged ones) and captures opponent groups left with no
    pseudo-liberty, whose stones become pseudo-liberties of their neighbours."""
    N = board.shape[1]
    mask = np.uint64(64 * bloom.shape[1] - 1)
    stack = np.empty(N, np.int64)
    mark = np.zeros(N, np.int64)  # visited stamps of the scoring flood fills
    stamp = 0
    for k in range(rows.shape[0]):
        i, p = rows[k], actions[k]
        c, t = to_play[i] + 1, moves[i]
        o = 3 - c
        h = hashes[i, t]
        if p == N:
            passes[i] += 1
        else:
            passes[i] = 0
            h ^= zob[c, p]
            board[i, p] = c
            keeper = p  # the root p joins: its first friendly neighbour's, or itself
            n = s = q = 0
            for e in range(deg[p]):
                r = nbr[p, e]
                v = board[i, r]
                if v == EMPTY:
                    n, s, q = n + 1, s + r, q + r * r
                else:  # p was a pseudo-liberty of r's group once for this adjacency
                    g = np.int64(groups[i, r] & LABEL) - 1
                    groups[i, g] += _libs_word(-1, -p, -p * p)
                    if v == c and keeper == p:
                        keeper = g
            groups[i, p] = np.uint64(keeper + 1)
            groups[i, keeper] += _libs_word(n, s, q)
            for e in range(deg[p]):  # merge the other friendly groups into the keeper
                r = nbr[p, e]
                g = np.int64(groups[i, r] & LABEL) - 1
                if board[i, r] != c or g == keeper:
                    continue
                groups[i, keeper] += groups[i, g] & LIBS
                groups[i, r] = np.uint64(keeper + 1)  # relabel g's stones (its root too)
                stack[0] = r
                top = 1
                while top > 0:
                    top -= 1
                    x = stack[top]
                    for j in range(deg[x]):
                        y = nbr[x, j]
                        if np.int64(groups[i, y] & LABEL) == g + 1:
                            groups[i, y] = np.uint64(keeper + 1)
                            stack[top] = y
                            top += 1
            for e in range(deg[p]):  # capture (n = 0 leaves s and q at 0 too)
                r = nbr[p, e]
                if board[i, r] != o:
                    continue
                root = np.int64(groups[i, r] & LABEL) - 1
                if np.int64((groups[i, root] >> N_AT) & N_MASK) != 0:
                    continue
                board[i, r] = EMPTY  # breadth-first; stack[:end] lists the stones
                stack[0] = r
                head, end = 0, 1
                while head < end:
                    x = stack[head]
                    head += 1
                    for j in range(deg[x]):
                        y = nbr[x, j]
                        if board[i, y] == o:
                            board[i, y] = EMPTY
                            stack[end] = y
                            end += 1
                for f in range(end):
                    x = stack[f]
                    groups[i, x] = 0
                    h ^= zob[o, x]
                    for j in range(deg[x]):  # x is a pseudo-liberty of each stone by it
                        y = nbr[x, j]
                        if board[i, y] != EMPTY:
                            root = np.int64(groups[i, y] & LABEL) - 1
                            groups[i, root] += _libs_word(1, x, x * x)
        hashes[i, t + 1] = h
        w1, m1, w2, m2 = _bloom_bits(h, mask)
        bloom[i, w1] |= m1
        bloom[i, w2] |= m2
        moves[i] = t + 1
        to_play[i] = o - 1
        if passes[i] >= 2 or t + 1 >= max_length:
            over[i] = True
            done[i] = True
            diff, stamp = _area_diff(board, i, nbr, deg, stack, mark, stamp)
            margin = diff - komi if c == BLACK else komi - diff  # the mover's
            reward[i] = 1.0 if margin > 0 else (-1.0 if margin < 0 else 0.0)


@njit(cache=True)
def _fill_children(board, to_play, passes, moves, hashes, over, bloom, groups, legal, cboard,
                   cto_play, cpasses, cmoves, chashes, cover, cbloom, cgroups):
    """Child row b*A + a becomes a copy of parent b where ``legal[b, a]``, else the
    initial state (all zeros). Every byte is written: the arrays come from np.empty
    (see the speed notes)."""
    B, A = legal.shape
    N, L1, K = board.shape[1], hashes.shape[1], bloom.shape[1]
    for b in range(B):
        for a in range(A):
            i = b * A + a
            if not legal[b, a]:  # (loops, not row views: see the speed notes)
                for x in range(N):
                    cboard[i, x] = 0
                    cgroups[i, x] = 0
                for x in range(L1):
                    chashes[i, x] = 0
                for x in range(K):
                    cbloom[i, x] = 0
                cto_play[i] = cpasses[i] = cmoves[i] = 0
                cover[i] = False
                continue
            t = moves[b]
            for x in range(N):
                cboard[i, x] = board[b, x]
                cgroups[i, x] = groups[b, x]
            for x in range(t + 1):
                chashes[i, x] = hashes[b, x]
            for x in range(t + 1, L1):
                chashes[i, x] = 0
            for x in range(K):
                cbloom[i, x] = bloom[b, x]
            cto_play[i] = to_play[b]
            cpasses[i] = passes[b]
            cmoves[i] = t
            cover[i] = over[b]


@njit(cache=True)
def _encode_kernel(board, to_play, out):
    """Write every cell of ``out[B, 3, size, size]`` (branch-free)."""
    size = out.shape[2]
    for b in range(board.shape[0]):
        c = to_play[b] + 1
        black = np.float32(c == BLACK)
        for r in range(size):
            for col in range(size):
                v = board[b, r * size + col]
                out[b, 0, r, col] = v == c
                out[b, 1, r, col] = v == 3 - c
                out[b, 2, r, col] = black


# --------------------------------------------------------------------- engine


def _neighbours(size: int) -> tuple[np.ndarray, np.ndarray]:
    """nbr int64[N, 4] (unused slots -1) and deg int64[N] of the grid graph."""
    N = size * size
    nbr = np.full((N, 4), -1, np.int64)
    deg = np.zeros(N, np.int64)
    for p in range(N):
        r, c = divmod(p, size)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < size and 0 <= cc < size:
                nbr[p, deg[p]] = rr * size + cc
                deg[p] += 1
    return nbr, deg


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


class Go(Game):
    """Go with positional superko and Tromp-Taylor area scoring (see the module doc).

    Parameters: ``size`` 2..19 (default 9); ``komi`` added to White's score (default
    7.0); ``max_length`` the number of plies, passes included, after which the game
    ends and is scored as it stands (default ``None``: ``2 * size * size``)."""

    def __init__(self, size: int = 9, komi: float = 7.0, max_length: int | None = None):
        if not _is_int(size) or not 2 <= size <= 19:
            raise ValueError(f"go: size must be an integer from 2 to 19, got {size!r}")
        try:
            komi = float(komi)
        except (TypeError, ValueError):
            raise ValueError(f"go: komi must be a finite number, got {komi!r}") from None
        if not np.isfinite(komi):
            raise ValueError(f"go: komi must be a finite number, got {komi!r}")
        if max_length is not None and (not _is_int(max_length) or max_length < 1):
            raise ValueError(f"go: max_length must be an integer >= 1 or None, got {max_length!r}")
        size = int(size)
        self.name = "go"
        self.params = {"size": size, "komi": komi, "max_length": max_length}
        self.size, self.komi = size, komi
        self.max_length = 2 * size * size if max_length is None else int(max_length)
        self.num_actions = size * size + 1
        self.obs_shape = (3, size, size)
        self._bloom_words = _bloom_words(self.max_length)
        self._nbr, self._deg = _neighbours(size)
        # Zobrist keys zob[colour, cell]; the row of EMPTY stays 0, so the empty
        # board hashes to 0.
        rng = np.random.default_rng(0x60 + size)
        self._zob = np.zeros((3, size * size), np.uint64)
        self._zob[1:] = rng.integers(0, 2**64, size=(2, size * size), dtype=np.uint64)

    # ---- rules

    def _fields(self) -> list[tuple[tuple, type]]:
        """(shape after the batch axis, dtype) of each GoState field."""
        N, L, K = self.size * self.size, self.max_length, self._bloom_words
        return [((N,), np.int8), ((), np.int8), ((), np.int8), ((), np.int32),
                ((L + 1,), np.uint64), ((), bool), ((K,), np.uint64), ((N,), np.uint64)]

    def _empty(self, batch: int, zero: bool = False) -> GoState:
        """A state of ``batch`` rows, uninitialised or all zeros (the start)."""
        new = np.zeros if zero else np.empty
        return GoState(*(new((batch, *tail), dt) for tail, dt in self._fields()))

    def _init(self, batch):
        return self._empty(batch, zero=True)

    def _legal(self, state):
        s = state
        legal = np.zeros((s.board.shape[0], self.num_actions), bool)
        _legal_rows(s.board, s.to_play, s.moves, s.hashes, s.over, s.bloom, s.groups, self.size,
                    self._zob, legal)
        return legal

    def _step(self, state, actions):
        s = GoState(*(np.array(f, copy=True) for f in state))  # the input stays as it was
        B = s.board.shape[0]
        reward = np.zeros(B, np.float32)
        done = np.zeros(B, bool)
        _play_rows(*s, np.arange(B), np.ascontiguousarray(actions, dtype=np.int64), self._nbr,
                   self._deg, self._zob, self.komi, self.max_length, reward, done)
        return s, reward, done

    def _expand(self, state):
        # Rows of illegal actions hold the initial state (all zeros): valid, and no
        # parent row to read.
        B, A = state.board.shape[0], self.num_actions
        legal = self.legal(state)  # [B, A]
        children = self._empty(B * A)
        _fill_children(*state, legal, *children)
        rows = np.flatnonzero(legal)  # child row b*A + a of each legal (b, a)
        reward = np.zeros(B * A, np.float32)
        done = np.zeros(B * A, bool)
        _play_rows(*children, rows, rows % A, self._nbr, self._deg, self._zob, self.komi,
                   self.max_length, reward, done)
        return Expansion(children, reward.reshape(B, A), done.reshape(B, A), legal)

    def _encode(self, state):
        out = np.empty((state.board.shape[0],) + self.obs_shape, np.float32)
        _encode_kernel(state.board, state.to_play, out)
        return out

    def terminal(self, state):
        return np.asarray(state.over, dtype=bool)

    def score(self, state) -> np.ndarray:
        """float64[B]: Black's Tromp-Taylor area minus White's, komi included."""
        out = np.empty(state.board.shape[0], np.float64)
        _score_kernel(state.board, self._nbr, self._deg, self.komi, out)
        return out

    # ---- presentation

    def action_name(self, action: int) -> str:
        action = int(action)
        if action == self.size * self.size:
            return "pass"
        row, col = divmod(action, self.size)
        return f"{COLUMNS[col]}{row + 1}"

    def render_one(self, state, i):
        size = self.size
        letters = "    " + " ".join(COLUMNS[:size])
        lines = [letters]
        for row in range(size - 1, -1, -1):
            cells = " ".join(".XO"[v] for v in state.board[i, row * size:(row + 1) * size])
            lines.append(f"{row + 1:>3} {cells} {row + 1}")
        lines.append(letters)
        mover = "X (black)" if state.to_play[i] == 0 else "O (white)"
        status = "game over" if state.over[i] else f"{mover} to play"
        lines.append(f"move {int(state.moves[i])}, {status}, komi {self.komi:g}")
        return "\n".join(lines)

    def symmetries(self):
        return square_board_symmetries(self.size, extra_actions=1)


def occupied(game: Go, state: GoState, action: int) -> bool:
    """Whether ``action`` names a point of the first board of ``state`` that holds a stone."""
    return action < game.size * game.size and bool(state.board[0, action])


def black_margin(game: Go, state: GoState) -> float:
    """Black's area margin, komi included, on the first board of ``state``."""
    return float(game.score(state)[0])


# Go's facts (games.descriptors): played over
# GTP as GNU Go plays it (two passes end a game; size and komi on its command line).
DESCRIPTOR = GameDescriptor(
    name="go", engine=Go,
    gtp=GtpFacts(letters=COLUMNS, passes=True, occupied=occupied, black_margin=black_margin,
                 end_reason="max length", two_passes_end=True, engine_params=("size", "komi"),
                 sgf_game=1, sgf_records=True, sgf_rules="Tromp-Taylor, positional superko", row0_at_bottom=True),
    network=dict(kind="conv", blocks=3, channels=64),  # AVI paper C.2
    preset={"actors.epsilon": 0.15, "learner.augment_symmetries": True},  # AVI paper C.2: Table 3, epsilon 0.15
)
