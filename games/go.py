"""Go on a size x size board: captures, no suicide, positional superko, area scoring.

Board layout (9x9 shown), cell index ``p = row * size + col``; row 0 is the bottom
line, named "1", and columns are lettered A..T without I, as Go players write:

      A  B  C  D  E  F  G  H  J
   9 72 73 74 75 76 77 78 79 80  9
   8 63 ..                    8
   .                          .
   2  9 10 11 12 13 14 15 16 17  2
   1  0  1  2  3  4  5  6  7  8  1
      A  B  C  D  E  F  G  H  J

Actions are the cells ``0 .. size*size-1`` and pass ``= size*size``. Black moves
first; a placement captures the opponent's groups it leaves without liberties;
a placement that leaves its own group without liberties and captures nothing
(suicide) is illegal, and so is one that recreates any earlier whole-board position
of the game (positional superko, checked with Zobrist hashes). Pass is always legal.
The game ends after two consecutive passes or after ``max_length`` plies (passes
included; default ``2 * size * size``, as OpenSpiel), and is scored by area
(Tromp-Taylor): stones plus empty regions that reach only one colour, ``komi``
added to White. The reward is for the player who made the last move: +1 win,
-1 loss, 0 draw (a draw needs an integer komi).

State (leading batch axis B, N = size*size, L = max_length):
  board   int8[B, N]       0 empty, 1 black, 2 white
  to_play int8[B]          colour to move (1 or 2)
  passes  int8[B]          consecutive passes just played
  moves   int32[B]         plies played
  hashes  uint64[B, L+1]   Zobrist hash of the board after each ply, hashes[:, 0] is
                           the empty board (0); entries past ``moves`` are 0
  over    bool[B]

Encoding float32[B, 3, size, size], plane[r, c] for cell r*size+c: the mover's
stones, the opponent's stones, and a plane of ones when the mover is Black (komi
makes the value depend on the colour).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from games.base import Expansion, Game, square_board_symmetries

COLUMNS = "ABCDEFGHJKLMNOPQRST"  # no I, as on Go boards
EMPTY, BLACK, WHITE = 0, 1, 2


class GoState(NamedTuple):
    board: np.ndarray  # int8[B, N]
    to_play: np.ndarray  # int8[B]
    passes: np.ndarray  # int8[B]
    moves: np.ndarray  # int32[B]
    hashes: np.ndarray  # uint64[B, L+1]
    over: np.ndarray  # bool[B]
    group: np.ndarray  # int16[B, N]
    libs: np.ndarray  # int16[B, N]
    lib_sum: np.ndarray  # int32[B, N]
    lib_sq: np.ndarray  # int32[B, N]


# ------------------------------------------------------------------ kernels
# Groups are kept up to date move by move instead of being flood-filled for every
# legal mask: flood fills over random boards are dominated by branch mispredictions,
# while the legal mask below is two branch-free passes over the board.
#
# Pseudo-liberties: a group's pseudo-liberties count each (stone, empty neighbour)
# adjacency, so a cell next to two stones of the group counts twice. With
# n = count, s = sum of the cells and q = sum of their squares, the group is in
# atari (exactly one distinct liberty) iff n * q == s * s (Cauchy-Schwarz with
# equality: all the cells are the same), and a placement keeps every count exact
# with local updates only.


@njit(cache=True)
def _in_atari(libs, lib_sum, lib_sq, g):
    return np.int64(libs[g]) * np.int64(lib_sq[g]) == np.int64(lib_sum[g]) * np.int64(lib_sum[g])


@njit(cache=True)
def _add_libs(libs, lib_sum, lib_sq, g, n, s, q):
    libs[g] += n
    lib_sum[g] += s
    lib_sq[g] += q


@njit(cache=True)
def _play(row, group, libs, lib_sum, lib_sq, p, c, nbr, deg, zob, stack):
    """Place colour c on the empty cell p of one board, merging and capturing, and
    keep group and pseudo-liberties exact. Returns the XOR of the Zobrist keys of
    every stone added or removed. ``stack`` is int64[N] scratch."""
    o = 3 - c
    h = zob[p, c]
    row[p] = c
    keeper = p  # the root the new stone joins: its first friendly neighbour's, or itself
    n = 0
    s = 0
    q = 0
    for k in range(deg[p]):
        r = nbr[p, k]
        v = row[r]
        if v == EMPTY:
            n += 1
            s += r
            q += r * r
        else:  # p was a pseudo-liberty of the group on r once for this adjacency
            g = group[r]
            _add_libs(libs, lib_sum, lib_sq, g, -1, -p, -p * p)
            if v == c and keeper == p:
                keeper = g
    group[p] = keeper
    _add_libs(libs, lib_sum, lib_sq, keeper, n, s, q)
    # Merge the other friendly groups into the keeper: relabel their stones.
    for k in range(deg[p]):
        r = nbr[p, k]
        g = group[r]
        if row[r] != c or g == keeper:
            continue
        _add_libs(libs, lib_sum, lib_sq, keeper, libs[g], lib_sum[g], lib_sq[g])
        libs[g] = 0
        lib_sum[g] = 0
        lib_sq[g] = 0
        group[r] = keeper
        stack[0] = r
        top = 1
        while top > 0:
            top -= 1
            x = stack[top]
            for j in range(deg[x]):
                y = nbr[x, j]
                if group[y] == g:  # an empty cell is its own group, never g
                    group[y] = keeper
                    stack[top] = y
                    top += 1
    # Capture the opponent's neighbouring groups left without pseudo-liberties.
    for k in range(deg[p]):
        r = nbr[p, k]
        if row[r] != o:
            continue
        g = group[r]
        if libs[g] != 0:
            continue
        libs[g] = 0
        lib_sum[g] = 0
        lib_sq[g] = 0
        # Breadth-first over the group; stack[:end] ends up listing its stones.
        row[r] = EMPTY
        stack[0] = r
        head, end = 0, 1
        while head < end:
            x = stack[head]
            head += 1
            for j in range(deg[x]):
                y = nbr[x, j]
                if row[y] == o:
                    row[y] = EMPTY
                    stack[end] = y
                    end += 1
        for i in range(end):
            x = stack[i]
            group[x] = x
            h ^= zob[x, o]
            for j in range(deg[x]):  # x is now a pseudo-liberty of each adjacent stone
                y = nbr[x, j]
                if row[y] != EMPTY:
                    _add_libs(libs, lib_sum, lib_sq, group[y], 1, x, x * x)
    return h


@njit(cache=True)
def _captured_hash(row, group, libs, lib_sum, lib_sq, ghash, p, o, nbr, deg):
    """XOR of the Zobrist keys of the opponent stones a placement on p would take;
    ``ghash[g]`` is that XOR for the group rooted at g."""
    h = np.uint64(0)
    for k in range(deg[p]):
        r = nbr[p, k]
        if row[r] != o:
            continue
        g = group[r]
        if not _in_atari(libs, lib_sum, lib_sq, g):
            continue
        dup = False  # the same group seen through an earlier neighbour
        for j in range(k):
            if row[nbr[p, j]] == o and group[nbr[p, j]] == g:
                dup = True
        if not dup:
            h ^= ghash[g]
    return h


@njit(cache=True)
def _in_history(hist, t, h):
    for i in range(t + 1):
        if hist[i] == h:
            return True
    return False


@njit(cache=True)
def _legal_row(row, group, libs, lib_sum, lib_sq, c, hist, t, size, nbr, deg, zob,
               pv, pa, bloom, ghash, legal, newh):
    """Fill ``legal[N+1]`` and ``newh[N]`` (the hash after each legal placement) for
    one board. ``pv``/``pa`` are int8[(size+2)**2] scratch boards with a border of 3
    (colour) and 0 (atari); ``bloom`` uint64[64] and ``ghash`` uint64[N] are scratch."""
    W = size + 2
    o = 3 - c
    # A 4096-bit Bloom filter (two probes) of the earlier positions: a placement is
    # compared with the full history only when both of its bits are set.
    bloom[:] = 0
    for i in range(t + 1):
        x = hist[i]
        b1 = np.int64(x & np.uint64(4095))
        b2 = np.int64((x >> np.uint64(12)) & np.uint64(4095))
        bloom[b1 >> 6] |= np.uint64(1) << np.uint64(b1 & 63)
        bloom[b2 >> 6] |= np.uint64(1) << np.uint64(b2 & 63)
    ghash[:] = 0
    for r in range(size):
        for col in range(size):
            p = r * size + col
            pp = (r + 1) * W + col + 1
            pv[pp] = row[p]
            pa[pp] = _in_atari(libs, lib_sum, lib_sq, group[p])
            ghash[group[p]] ^= zob[p, row[p]]  # zob[p, EMPTY] is 0
    h = hist[t]
    for r in range(size):
        for col in range(size):
            p = r * size + col
            pp = (r + 1) * W + col + 1
            # Legal before superko: an empty neighbour, a friendly group that keeps
            # another liberty, or an opponent group whose last liberty is p.
            ok = False
            cap = False
            for d in (-1, 1, -W, W):
                v = pv[pp + d]
                a = pa[pp + d]
                ok |= (v == EMPTY) | ((v == c) & (a == 0)) | ((v == o) & (a == 1))
                cap |= (v == o) & (a == 1)
            ok &= pv[pp] == EMPTY
            nh = h ^ zob[p, c]
            if ok & cap:
                nh ^= _captured_hash(row, group, libs, lib_sum, lib_sq, ghash, p, o, nbr, deg)
            b1 = np.int64(nh & np.uint64(4095))
            b2 = np.int64((nh >> np.uint64(12)) & np.uint64(4095))
            seen = (((bloom[b1 >> 6] >> np.uint64(b1 & 63)) & (bloom[b2 >> 6] >> np.uint64(b2 & 63)))
                    & np.uint64(1)) != 0
            if ok & seen:
                ok = not _in_history(hist, t, nh)
            legal[p] = ok
            newh[p] = nh
    legal[size * size] = True


@njit(cache=True)
def _scratch(size):
    W = size + 2
    pv = np.full(W * W, 3, np.int8)
    pa = np.zeros(W * W, np.int8)
    N = size * size
    return pv, pa, np.zeros(64, np.uint64), np.zeros(N, np.uint64), np.empty(N, np.uint64)


@njit(cache=True)
def _legal_kernel(board, group, libs, lib_sum, lib_sq, to_play, moves, hashes, over, size,
                  nbr, deg, zob, legal):
    B = board.shape[0]
    pv, pa, bloom, ghash, newh = _scratch(size)
    for b in range(B):
        if over[b]:
            continue
        _legal_row(board[b], group[b], libs[b], lib_sum[b], lib_sq[b], to_play[b], hashes[b],
                   moves[b], size, nbr, deg, zob, pv, pa, bloom, ghash, legal[b], newh)


@njit(cache=True)
def _area_diff(row, nbr, deg, stack, mark, stamp):
    """Black's area minus White's (Tromp-Taylor, before komi); returns (diff, stamp)."""
    N = row.shape[0]
    diff = 0
    stamp += 1  # one stamp for every empty region: a region is never re-entered
    for p in range(N):
        v = row[p]
        if v == BLACK:
            diff += 1
        elif v == WHITE:
            diff -= 1
        elif mark[p] != stamp:
            mark[p] = stamp
            stack[0] = p
            n = 1
            size = 0
            touch = 0  # bit 1: reaches black, bit 2: reaches white
            while n > 0:
                n -= 1
                q = stack[n]
                size += 1
                for k in range(deg[q]):
                    r = nbr[q, k]
                    w = row[r]
                    if w == EMPTY:
                        if mark[r] != stamp:
                            mark[r] = stamp
                            stack[n] = r
                            n += 1
                    else:
                        touch |= w
            if touch == BLACK:
                diff += size
            elif touch == WHITE:
                diff -= size
    return diff, stamp


@njit(cache=True)
def _outcome(row, mover, komi, nbr, deg, stack, mark, stamp):
    """Reward of the finished board for colour ``mover``; returns (reward, stamp)."""
    diff, stamp = _area_diff(row, nbr, deg, stack, mark, stamp)
    score = diff - komi  # Black's margin
    if mover == WHITE:
        score = -score
    r = np.float32(0.0)
    if score > 0:
        r = np.float32(1.0)
    elif score < 0:
        r = np.float32(-1.0)
    return r, stamp


@njit(cache=True)
def _score_kernel(board, nbr, deg, komi, out):
    B, N = board.shape
    stack = np.empty(N, np.int64)
    mark = np.zeros(N, np.int64)
    stamp = 0
    for b in range(B):
        diff, stamp = _area_diff(board[b], nbr, deg, stack, mark, stamp)
        out[b] = diff - komi


@njit(cache=True)
def _after_move(board, to_play, passes, moves, hashes, over, i, c, t, h, komi, max_length,
                nbr, deg, stack, mark, stamp):
    """Book-keeping shared by step and expand once row i's board holds the move of
    colour c at ply t (hash h after it): returns (reward, done, stamp)."""
    hashes[i, t + 1] = h
    moves[i] = t + 1
    to_play[i] = 3 - c
    if passes[i] >= 2 or t + 1 >= max_length:
        over[i] = True
        r, stamp = _outcome(board[i], c, komi, nbr, deg, stack, mark, stamp)
        return r, True, stamp
    return np.float32(0.0), False, stamp


@njit(cache=True)
def _step_kernel(board, to_play, passes, moves, hashes, over, group, libs, lib_sum, lib_sq,
                 actions, nbr, deg, zob, komi, max_length, reward, done):
    """Play ``actions[B]`` in place on copies of the state fields."""
    B, N = board.shape
    stack = np.empty(N, np.int64)
    mark = np.zeros(N, np.int64)
    stamp = 0
    for b in range(B):
        a = actions[b]
        c = to_play[b]
        t = moves[b]
        h = hashes[b, t]
        if a == N:
            passes[b] += 1
        else:
            passes[b] = 0
            h ^= _play(board[b], group[b], libs[b], lib_sum[b], lib_sq[b], a, c, nbr, deg, zob,
                       stack)
        reward[b], done[b], stamp = _after_move(board, to_play, passes, moves, hashes, over, b,
                                                c, t, h, komi, max_length, nbr, deg, stack,
                                                mark, stamp)


@njit(cache=True)
def _expand_kernel(board, to_play, passes, moves, hashes, over, group, libs, lib_sum, lib_sq,
                   size, nbr, deg, zob, komi, max_length,
                   cboard, cto_play, cpasses, cmoves, chashes, cover, cgroup, clibs,
                   clib_sum, clib_sq, reward, done, legal):
    """Every child of every parent: child of b via a at row b*A + a. Rows of illegal
    actions (and all rows of finished parents) are copies of the parent. ``chashes``
    arrives zeroed, so only the used prefix of each history is written."""
    B, N = board.shape
    A = N + 1
    pv, pa, bloom, ghash, newh = _scratch(size)
    stack = np.empty(N, np.int64)
    mark = np.zeros(N, np.int64)
    stamp = 0
    for b in range(B):
        t = moves[b]
        c = to_play[b]
        for a in range(A):
            i = b * A + a
            cboard[i] = board[b]
            cgroup[i] = group[b]
            clibs[i] = libs[b]
            clib_sum[i] = lib_sum[b]
            clib_sq[i] = lib_sq[b]
            cto_play[i] = c
            cpasses[i] = passes[b]
            cmoves[i] = t
            chashes[i, : t + 1] = hashes[b, : t + 1]
            cover[i] = over[b]
        if over[b]:
            continue
        _legal_row(board[b], group[b], libs[b], lib_sum[b], lib_sq[b], c, hashes[b], t, size,
                   nbr, deg, zob, pv, pa, bloom, ghash, legal[b], newh)
        for a in range(A):
            if not legal[b, a]:
                continue
            i = b * A + a
            h = hashes[b, t]
            if a == N:
                cpasses[i] += 1
            else:
                cpasses[i] = 0
                h ^= _play(cboard[i], cgroup[i], clibs[i], clib_sum[i], clib_sq[i], a, c, nbr,
                           deg, zob, stack)
            reward[b, a], done[b, a], stamp = _after_move(
                cboard, cto_play, cpasses, cmoves, chashes, cover, i, c, t, h, komi,
                max_length, nbr, deg, stack, mark, stamp)


@njit(cache=True)
def _encode_kernel(board, to_play, out):
    B, N = board.shape
    size = out.shape[2]
    for b in range(B):
        c = to_play[b]
        for p in range(N):
            v = board[b, p]
            if v != EMPTY:
                out[b, 0 if v == c else 1, p // size, p % size] = 1.0
        if c == BLACK:
            out[b, 2] = 1.0


# --------------------------------------------------------------------- engine


def _neighbours(size: int) -> tuple[np.ndarray, np.ndarray]:
    """nbr int64[N, 4] (padded with -1) and deg int64[N] of the grid graph."""
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


class Go(Game):
    """Go with positional superko and Tromp-Taylor area scoring (see the module doc).

    Parameters: ``size`` 2..19 (default 9); ``komi`` added to White's score
    (default 7.0); ``max_length`` the number of plies, passes included, after which
    the game ends and is scored (default ``None``: ``2 * size * size``)."""

    def __init__(self, size: int = 9, komi: float = 7.0, max_length: int | None = None):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 2 <= size <= 19:
            raise ValueError(f"go: size must be an integer from 2 to 19, got {size!r}")
        try:
            komi = float(komi)
        except (TypeError, ValueError):
            raise ValueError(f"go: komi must be a finite number, got {komi!r}") from None
        if not np.isfinite(komi):
            raise ValueError(f"go: komi must be a finite number, got {komi!r}")
        size = int(size)
        if max_length is None:
            max_length = 2 * size * size
        elif (isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer))
              or max_length < 1):
            raise ValueError(f"go: max_length must be an integer >= 1 or None, got {max_length!r}")
        self.name = "go"
        self.size, self.komi, self.max_length = size, komi, int(max_length)
        self.params = {"size": size, "komi": komi, "max_length": max_length}
        self.num_actions = size * size + 1
        self.obs_shape = (3, size, size)
        self._nbr, self._deg = _neighbours(size)
        # Zobrist keys by cell and colour (column 0, empty, stays 0 and is never used).
        rng = np.random.default_rng(20240917 + size)
        self._zob = np.zeros((size * size, 3), np.uint64)
        self._zob[:, 1:] = rng.integers(0, 2**64, size=(size * size, 2), dtype=np.uint64)

    # ---- rules

    def _init(self, batch):
        N = self.size * self.size
        return GoState(
            board=np.zeros((batch, N), np.int8),
            to_play=np.full(batch, BLACK, np.int8),
            passes=np.zeros(batch, np.int8),
            moves=np.zeros(batch, np.int32),
            hashes=np.zeros((batch, self.max_length + 1), np.uint64),
            over=np.zeros(batch, bool),
            group=np.tile(np.arange(N, dtype=np.int16), (batch, 1)),
            libs=np.zeros((batch, N), np.int16),
            lib_sum=np.zeros((batch, N), np.int32),
            lib_sq=np.zeros((batch, N), np.int32),
        )

    def _legal(self, state):
        legal = np.zeros((state.board.shape[0], self.num_actions), bool)
        _legal_kernel(state.board, state.group, state.libs, state.lib_sum, state.lib_sq,
                      state.to_play, state.moves, state.hashes, state.over, self.size,
                      self._nbr, self._deg, self._zob, legal)
        return legal

    def _step(self, state, actions):
        s = GoState(*(np.array(f, copy=True) for f in state))
        B = s.board.shape[0]
        reward = np.zeros(B, np.float32)
        done = np.zeros(B, bool)
        _step_kernel(*s, np.ascontiguousarray(actions, dtype=np.int64), self._nbr, self._deg,
                     self._zob, self.komi, self.max_length, reward, done)
        return s, reward, done

    def _expand(self, state):
        B, A = state.board.shape[0], self.num_actions
        C, N = B * A, A - 1
        children = GoState(
            board=np.empty((C, N), np.int8),
            to_play=np.empty(C, np.int8),
            passes=np.empty(C, np.int8),
            moves=np.empty(C, np.int32),
            hashes=np.zeros((C, self.max_length + 1), np.uint64),
            over=np.empty(C, bool),
            group=np.empty((C, N), np.int16),
            libs=np.empty((C, N), np.int16),
            lib_sum=np.empty((C, N), np.int32),
            lib_sq=np.empty((C, N), np.int32),
        )
        reward = np.zeros((B, A), np.float32)
        done = np.zeros((B, A), bool)
        legal = np.zeros((B, A), bool)
        _expand_kernel(*state, self.size, self._nbr, self._deg, self._zob, self.komi,
                       self.max_length, *children, reward, done, legal)
        return Expansion(children, reward, done, legal)

    def _encode(self, state):
        out = np.zeros((state.board.shape[0],) + self.obs_shape, np.float32)
        _encode_kernel(state.board, state.to_play, out)
        return out

    def terminal(self, state):
        return np.asarray(state.over, dtype=bool)

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
        mover = "X (black)" if state.to_play[i] == BLACK else "O (white)"
        status = "game over" if state.over[i] else f"{mover} to play"
        lines.append(f"move {int(state.moves[i])}, {status}, komi {self.komi:g}")
        return "\n".join(lines)

    def symmetries(self):
        return square_board_symmetries(self.size, extra_actions=1)

    def score(self, state) -> np.ndarray:
        """float64[B]: Black's Tromp-Taylor area minus White's, komi included."""
        out = np.empty(state.board.shape[0], np.float64)
        _score_kernel(state.board, self._nbr, self._deg, self.komi, out)
        return out
