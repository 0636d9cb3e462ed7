"""Exact oracles behind one batched interface, for play and trace evaluation.

An oracle answers, for a batch of live states, an :class:`Analysis`: the exact value
of every move (``q``, undiscounted: +1 win, 0 draw, -1 loss for the mover), a finer
``score`` that ranks moves of equal outcome (how the oracle plays), and the
oracle-best move set. It also plays: :meth:`Oracle.choose` picks the first best move
in a fixed preference order, so games against an oracle are deterministic.

- :class:`Connect4Oracle` (strong): Pons scores (quickest win, slowest loss) from the
  oracle service's replicas when given its client, else from the service's worker in
  this process; either way read from and written back to the shared solved-position
  store (``oracle_service.store``), since early positions take seconds to minutes.
- :class:`ChompOracle`: Grundy numbers; a winning move (to a Grundy-0 child) when one
  exists, else the move that takes fewest squares (delays the loss). Only states with
  a nonzero Grundy number have a best move set (AZAL: ``labelled``).
- :class:`FGameOracle`: values by construction; ties broken by action index.
- :class:`HexOracle` (weak, AVI paper 4.1 and E.2): win or loss of every move from the
  Hex solver (``oracle_service.hex_solver``), through the oracle service's replicas or
  a worker in this process, and the same store. ``q`` is +1 for a winning move and -1
  for any other, and ``score`` is ``q``: a weak oracle does not rank moves of the same
  outcome, so where every move loses it plays the first legal cell of a fixed
  preference order (the centre first), and where several win, the first winning one.
  Only won states have a best move set (``labelled``), as for Chomp.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from games import Game, GameTable, take
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_engines import DEFAULT_ENGINE
from oracle_service.connect4_solver import Board, win_score
from oracle_service.hex_service import HexValue, hex_move_order, hex_preference_order
from oracle_service.service import OracleWorker
from oracle_service.store import HexSolved, NullStore, open_store


class Analysis(NamedTuple):
    value: np.ndarray  # float32[B], V*(s) for the mover in {-1, 0, 1}
    q: np.ndarray  # float32[B, A], r(s, a) - V*(f(s, a)); -inf where illegal
    score: np.ndarray  # float32[B, A], finer ranking of moves (oracle's play); -inf where illegal
    best: np.ndarray  # bool[B, A], the oracle-best move set (moves of maximal score)
    labelled: np.ndarray  # bool[B], the best move set is defined (AZAL's labelled plies)


def _first_best(best: np.ndarray, order: np.ndarray) -> np.ndarray:
    """int64[B]: the first action of ``order`` that is in ``best[B, A]``."""
    ranked = best[:, order]  # [B, A] in preference order
    return order[ranked.argmax(axis=1)].astype(np.int64)


class Judged(NamedTuple):
    """The oracle's verdict on one chosen move per state (play against the oracle)."""

    value: np.ndarray  # float32[B], V*(s) for the mover
    q: np.ndarray  # float32[B], q*(s, a) of the chosen move
    best: np.ndarray  # bool[B], the chosen move is in the oracle-best set
    labelled: np.ndarray  # bool[B], the state has a best move set
    known: np.ndarray  # bool[B], the oracle settled the state and the move (else the rest means nothing)


class PastDeadline(Exception):
    """An oracle was asked after its ``deadline``: the evaluation that asked is given up."""


# Positions per request while a deadline is set: a cold early Connect Four position costs
# seconds, so a batch of thousands asked at once could run minutes past the deadline.
DEADLINE_CHUNK = 64


class Oracle:
    game: Game
    for_game: str  # the registry name of the one game this oracle answers for
    strong: bool  # ranks moves of equal outcome (Connect Four), else only outcomes
    order: np.ndarray  # int64[A], preference among equally good moves
    # A time.time() after which a solver-backed oracle refuses more work (PastDeadline),
    # checked between requests of DEADLINE_CHUNK positions; None: no limit.
    deadline: float | None = None

    def _in_chunks(self, ask, items: list) -> list:
        """``ask(items)``'s answers, asked in chunks while a deadline is set."""
        if self.deadline is None:
            return ask(items)
        answers = []
        for i in range(0, len(items), DEADLINE_CHUNK):
            if time.time() >= self.deadline:
                raise PastDeadline
            answers += ask(items[i:i + DEADLINE_CHUNK])
        return answers

    def _check_game(self, game: Game) -> None:
        """An oracle's answers are about its own game's rules: another game is a mistake."""
        if game.name != self.for_game:
            raise ValueError(f"{type(self).__name__} needs the {self.for_game} game, got {game!r}")

    def analyze(self, states) -> Analysis:  # pragma: no cover - interface
        raise NotImplementedError

    def choose(self, states) -> np.ndarray:
        """int64[B]: the oracle's move in each live state."""
        a = self.analyze(states)
        return _first_best(a.score == a.score.max(axis=1, keepdims=True), self.order)

    def values(self, states) -> np.ndarray:
        """float32[B]: V*(s) for the mover of each live state."""
        return self.analyze(states).value

    def judge(self, states, actions) -> Judged:
        """The verdict on ``actions[B]`` (legal) in ``states``: what play against the
        oracle counts. An oracle that can answer it more cheaply than by analysing every
        move (the weak Hex oracle) does so."""
        a = self.analyze(states)
        i, actions = np.arange(len(actions)), np.asarray(actions, np.int64)
        return Judged(a.value, a.q[i, actions], a.best[i, actions], a.labelled, np.ones(len(actions), bool))

    def unsettled(self, states) -> np.ndarray:
        """bool[B]: states this oracle could not settle (its play there is not perfect);
        an exact oracle settles every one."""
        return np.zeros(len(self.game.legal(states)), bool)


def _best_of(score: np.ndarray, legal: np.ndarray) -> np.ndarray:
    top = np.where(legal, score, -np.inf).max(axis=1, keepdims=True)  # [B, 1]
    return legal & (score == top)


class Connect4Oracle(Oracle):
    """Strong Connect Four oracle. ``client``: an ``oracle_service.service.OracleClient``
    whose replicas answer (through their store, shared with training's labels and other
    evaluations); without one, an ``OracleWorker`` in this process answers the same
    queries the same way (look up the store, solve the misses, write them back), with
    ``store``: None (solve everything), a store object, or a path / URL for
    ``oracle_service.store.open_store`` ("default" = its default), and ``engine`` (a name of
    ``oracle_service.connect4_engines.ENGINES``; the client's replicas have their own)."""

    for_game, strong = "connect4", True

    def __init__(self, game: Game, *, store=None, client=None, tt_log2_size: int = 24, engine: str = DEFAULT_ENGINE):
        self._check_game(game)
        self.game = game
        self.client = client
        self.service_queries = 0  # positions sent to the oracle service
        self.worker = None
        # Another board than 7x6: its own solver here, searched to the end (the books, the
        # store's keys and the service's engines are 7x6's); small boards solve in milliseconds.
        self.board = {"width": game.width, "height": game.height}
        self.order = _centre_first(game.num_actions)
        self.board_solver, self._board_solves = None, 0
        if (game.num_actions, game.max_length) != (7, 42):
            from oracle_service.connect4_solver import Connect4Solver

            self.client = None
            self.board_solver = Connect4Solver(min(tt_log2_size, 22), width=self.board["width"],
                                               height=self.board["height"])
            return
        if client is None:
            if isinstance(store, str):
                store = open_store(None if store == "default" else store)
            # No seeding from the store (seed_depth 0): its reads, 56 per position at
            # depth 2, would slow evaluations of thousands of positions.
            self.worker = OracleWorker(NullStore() if store is None else store, tt_log2_size=tt_log2_size,
                                       seed_depth=0, engine=engine)
        self.answerer = client or self.worker  # connect4_solve(positions) -> list[Answer]

    @property
    def solves(self) -> int:
        """Positions solved in this process (store misses; 0 on the service)."""
        if self.board_solver is not None:
            return self._board_solves
        return 0 if self.worker is None else self.worker.stats()["solved"]

    @property
    def solver(self):
        """This process's ``Connect4Solver`` (None on the service)."""
        if self.board_solver is not None:
            return self.board_solver
        return None if self.worker is None else self.worker.solver

    def child_scores(self, states) -> np.ndarray:
        """int16[B, 7]: the Pons score of each move for the mover (``win_score`` for an
        immediate win, 0 for filling the board, minus the child's score otherwise);
        -128 for a full column."""
        exp = self.game.expand(states)
        B, A = exp.legal.shape
        out = np.full((B, A), -128, np.int16)
        wins = exp.legal & exp.done & (exp.reward > 0)
        out = np.where(wins, win_score(np.asarray(states.moves, np.int64), **self.board)[:, None], out).astype(np.int16)
        out[exp.legal & exp.done & (exp.reward <= 0)] = 0  # the 42nd stone, no four: a draw
        live = (exp.legal & ~exp.done).reshape(-1)  # [B * A]
        if live.any():
            children = take(exp.children, live)
            out.reshape(-1)[live] = -self.solve_states(children)
        return out

    def solve_states(self, states) -> np.ndarray:
        """int64[N]: Pons scores of live states, from the oracle service when there is a
        client, else from this process's worker (or, on another board, its solver)."""
        if self.board_solver is not None:
            self._board_solves += len(states.moves)
            solve = self.board_solver.solve_states
            return np.array(self._in_chunks(lambda rows: solve(states.current[rows], states.mask[rows],
                                                               states.moves[rows]).tolist(),
                                            list(range(len(states.moves)))), np.int64)
        boards = [Board(int(c), int(m)) for c, m in zip(states.current, states.mask)]
        answers = self._in_chunks(self.answerer.connect4_solve, boards)
        if self.client is not None:
            self.service_queries += len(boards)
        bad = [(i, a.error) for i, a in enumerate(answers) if not a.ok]
        if bad:  # engine states are valid positions: this is a bug, not bad input
            raise RuntimeError(f"the oracle refused {len(bad)} of {len(boards)} connect4 states, "
                               f"the first (item {bad[0][0]}): {bad[0][1]}")
        return np.array([a.value for a in answers], np.int64)

    def analyze(self, states) -> Analysis:
        scores = self.child_scores(states).astype(np.float32)  # [B, A]
        legal = scores > -128
        score = np.where(legal, scores, -np.inf).astype(np.float32)
        q = np.where(legal, np.sign(scores), -np.inf).astype(np.float32)
        return Analysis(q.max(axis=1), q, score, _best_of(score, legal), np.ones(len(q), bool))


def _centre_first(width: int) -> np.ndarray:
    """int64[width]: the columns from the centre out, the oracle's preference among equal
    moves (the left one first at equal distance: on an even width the mirror of the
    solver's search order, ``games.connect4.centre_first``)."""
    return np.array(sorted(range(width), key=lambda c: (abs(2 * c - (width - 1)), c)), np.int64)


class ChompOracle(Oracle):
    """Grundy-number oracle of one Chomp board (tables from ``ChompTable``)."""

    for_game, strong = "chomp", False

    def __init__(self, game: Game, table=None):
        self._check_game(game)
        self.game = game
        self.table = table or ChompTable(game.params["rows"], game.params["cols"])
        self.order = np.arange(game.num_actions, dtype=np.int64)

    def grundy(self, states) -> np.ndarray:
        return self.table.grundy_batch(states.profile).astype(np.int64)

    def analyze(self, states) -> Analysis:
        exp = self.game.expand(states)
        B, A = exp.legal.shape
        live = (exp.legal & ~exp.done).reshape(-1)
        child_g = np.ones(B * A, np.int64)
        if live.any():
            child_g[live] = self.grundy(take(exp.children, live))
        # Taking the last square besides P wins at once (done, reward +1).
        win = exp.legal & (exp.done | (child_g.reshape(B, A) == 0))
        q = np.where(exp.legal, np.where(win, 1.0, -1.0), -np.inf).astype(np.float32)
        # Losing anyway: prefer the move that leaves the most squares (the longest game).
        left = exp.children.profile.reshape(B, A, -1).sum(axis=2, dtype=np.int64)  # [B, A]
        score = np.where(win, 1.0, -1.0 + left / (2.0 * A))
        score = np.where(exp.legal, score, -np.inf).astype(np.float32)
        value = q.max(axis=1)
        best = np.where(value[:, None] > 0, win, False)  # only winning moves are "best"
        return Analysis(value, q, score, best, value > 0)


class FGameOracle(Oracle):
    """F-Game oracle: exact child values from the engine."""

    for_game, strong = "fgame", False

    def __init__(self, game: Game):
        self._check_game(game)
        self.game = game
        self.order = np.arange(game.num_actions, dtype=np.int64)

    def analyze(self, states) -> Analysis:
        legal = self.game.legal(states)
        q = np.where(legal, -self.game.child_values(states).astype(np.float32), -np.inf).astype(np.float32)
        return Analysis(q.max(axis=1), q, q, _best_of(q, legal), legal.any(axis=1))


class HexUnsolvedError(RuntimeError):
    """Hex positions the solver left unknown at every limit tried; the message lists them."""


class HexOracle(Oracle):
    """Weak Hex oracle (see the module doc). ``client``: an ``OracleClient`` whose replicas
    solve; without one an ``OracleWorker`` in this process does, with ``store`` as for
    :class:`Connect4Oracle` (None: keep nothing). A query runs under ``node_limit`` and
    ``time_limit`` (seconds); positions it leaves unknown are asked again with both limits
    ``growth`` times larger, up to ``retries`` times, then :meth:`solve_states` raises
    :class:`HexUnsolvedError` naming them (or, with ``strict=False``, answers None). Solved
    positions are also kept here (``cache_size`` of them), since play and its hook ask for
    the same ones."""

    for_game, strong = "hex", False

    def __init__(self, game: Game, *, store=None, client=None, node_limit: int | None = None,
                 time_limit: float | None = 60.0, retries: int = 2, growth: float = 10.0,
                 cache_size: int = 1_000_000, lenient: bool = False):
        self._check_game(game)
        if game.params.get("swap"):
            raise ValueError(f"no exact oracle for Hex with the swap rule ({game!r}): the Hex solver plays "
                             f"without it")
        self.game, self.size = game, game.params["size"]
        self.client = client
        self.order = hex_preference_order(self.size)
        self.limits = {"node_limit": node_limit, "time_limit": time_limit}
        self.retries, self.growth = retries, growth
        # lenient: play goes on past a state left unknown (value 0, a fallback move), and
        # the games through it are counted apart (play_vs_oracle), instead of raising.
        self.lenient = lenient
        self.service_queries = 0  # positions sent to the oracle service
        self.unknown_queries = 0  # answers "unknown" (then retried with larger limits)
        self._cache: dict[bytes, HexSolved] = {}  # full records (every winning cell)
        self._values: dict[bytes, HexValue] = {}  # value-only answers
        self._cache_size = cache_size
        self.worker = None
        if client is None:
            if isinstance(store, str):
                store = open_store(None if store == "default" else store)
            # A small Connect Four table: this worker answers Hex only.
            self.worker = OracleWorker(NullStore() if store is None else store, tt_log2_size=10, seed_depth=0)
        self.answerer = client or self.worker  # hex_solve(size, positions, ...) -> list[Answer]

    def _ask(self, boards: list[np.ndarray], scale: float, value_only: bool) -> list:
        limits = {k: None if v is None else (type(v)(v * scale) if isinstance(v, int) else v * scale)
                  for k, v in self.limits.items()}
        answers = self._in_chunks(lambda chunk: self.answerer.hex_solve(self.size, chunk, value_only=value_only,
                                                                         **limits), boards)
        if self.client is not None:
            self.service_queries += len(boards)
        bad = [(i, a.error) for i, a in enumerate(answers) if not a.ok]
        if bad:  # engine states are valid live positions: this is a bug, not bad input
            raise RuntimeError(f"the oracle refused {len(bad)} of {len(boards)} hex states, "
                               f"the first (item {bad[0][0]}): {bad[0][1]}")
        return [a.value for a in answers]

    def _known(self, key: bytes, value_only: bool):
        record = self._cache.get(key)
        if value_only:
            return self._values.get(key) if record is None else HexValue.of(record, self.size)
        return record

    def solve_states(self, states, *, strict: bool = True, value_only: bool = False) -> list:
        """The solver's answer for the side to move of each live state, retried under
        larger limits where unknown (see the class doc): ``HexSolved`` (value and every
        winning cell), or with ``value_only`` ``HexValue`` (value and one winning cell,
        a single proof)."""
        boards = np.asarray(states.board, np.int8)  # [B, size, size]
        keys = [b.tobytes() for b in boards]
        todo = [i for i, k in enumerate(keys) if self._known(k, value_only) is None]
        todo = list({keys[i]: i for i in reversed(todo)}.values())[::-1]  # one query per position
        cache = self._values if value_only else self._cache
        scale = 1.0
        for attempt in range(self.retries + 1):
            if not todo:
                break
            answers = self._ask([boards[i] for i in todo], scale, value_only)
            left = []
            for i, a in zip(todo, answers):
                if a is None:
                    left.append(i)
                else:
                    if len(cache) >= self._cache_size:
                        cache.clear()
                    cache[keys[i]] = a
            self.unknown_queries += len(left)
            todo, scale = left, scale * self.growth
        out = [self._known(k, value_only) for k in keys]
        if todo and strict:
            shown = "; ".join(",".join(map(str, hex_move_order(boards[i]))) for i in todo[:5])
            raise HexUnsolvedError(f"the Hex solver left {len(todo)} of {len(boards)} positions unknown at every "
                                   f"limit up to {scale / self.growth:g} x {self.limits}; the first (played "
                                   f"cells, Black's then White's alternately): {shown}")
        return out

    def values(self, states) -> np.ndarray:
        """float32[B]: V* for the mover; 0 where the solver left the state unknown
        (raises instead unless the oracle is ``lenient``)."""
        answers = self.solve_states(states, value_only=True, strict=not self.lenient)
        return np.array([0.0 if a is None else a.value for a in answers], np.float32)

    def choose(self, states) -> np.ndarray:
        """A winning cell where the mover wins (one proof, not every winning cell), else
        the first legal cell of the preference order (also where the state is unknown,
        for a ``lenient`` oracle: see :meth:`unsettled`)."""
        answers = self.solve_states(states, value_only=True, strict=not self.lenient)
        legal = self.game.legal(states)
        fallback = _first_best(legal, self.order)
        return np.array([a.move if a is not None and a.value > 0 else f for a, f in zip(answers, fallback)],
                        np.int64)

    def unsettled(self, states) -> np.ndarray:
        keys = [b.tobytes() for b in np.asarray(states.board, np.int8)]
        return np.array([self._known(k, True) is None for k in keys], bool)  # (a full record answers it too)

    def judge(self, states, actions) -> Judged:
        """From two value-only proofs, the state's and the chosen move's child's: a weak
        oracle's best moves are exactly its winning ones, so this is what
        :meth:`analyze` would say of ``actions``, without proving every other move."""
        actions = np.asarray(actions, np.int64)
        value = self.values(states)
        after, reward, done = self.game.step(states, actions)
        q = np.asarray(reward, np.float32).copy()  # a move that completes a chain wins: +1
        live = ~np.asarray(done)
        known = value != 0
        if live.any():
            rows = np.flatnonzero(live)
            child = self.values(take(after, rows))
            q[rows] = -child
            known[rows] &= child != 0
        return Judged(value, q, (value > 0) & (q > 0), value > 0, known)

    def analyze(self, states) -> Analysis:
        legal = self.game.legal(states)  # [B, A]
        B, A = legal.shape
        win = np.zeros((B, A), bool)
        for i, record in enumerate(self.solve_states(states)):
            win[i, list(record.winning)] = True
        q = np.where(legal, np.where(win, 1.0, -1.0), -np.inf).astype(np.float32)
        value = q.max(axis=1)
        best = win & (value[:, None] > 0)  # only winning moves are "best"; a lost state has none
        return Analysis(value, q, q.copy(), best, value > 0)


# The games' oracles (ORACLES, below): each takes the game and the options of
# make_oracle, and ignores those it has no use for.

def connect4_oracle(game: Game, *, store=None, client=None, engine: str = DEFAULT_ENGINE) -> Oracle:
    return Connect4Oracle(game, store=store, client=client, engine=engine)


def chomp_oracle(game: Game, **_options) -> Oracle:
    return ChompOracle(game)


def fgame_oracle(game: Game, **_options) -> Oracle:
    return FGameOracle(game)


def hex_oracle(game: Game, *, store=None, client=None, **_options) -> Oracle:
    # 60 s a position, then once 600 s: an evaluation does not wait hours on one; a game
    # through a position still unknown is counted apart, not the end of the suite.
    return HexOracle(game, store=store, client=client, time_limit=60.0, retries=1, lenient=True)


class OracleEntry(NamedTuple):
    """A game's exact oracle, as ORACLES keeps it."""

    make: Callable[..., Oracle]  # (game, *, store, client, engine) -> the oracle
    service: bool = False  # it asks the oracle service (a run starts it for the evaluator)
    weak: bool = False  # it knows who wins, not when: its labels are +-1 at any gamma


# The games with an exact oracle here; the others (Othello, Go, tic-tac-toe) are
# evaluated by matches.
ORACLES: GameTable[OracleEntry] = GameTable("exact oracle", {
    "connect4": OracleEntry(connect4_oracle, service=True),  # the Pons solver, in the service
    "hex": OracleEntry(hex_oracle, service=True, weak=True),  # the Hex solver, in the service
    "chomp": OracleEntry(chomp_oracle),  # Grundy tables, in the evaluator's process
    "fgame": OracleEntry(fgame_oracle),  # values by construction
})


def oracle_is_weak(game: Game | str) -> bool:
    """Whether the game's oracle knows who wins, not when (Hex's): its labels are +-1."""
    entry = ORACLES.get(game)
    return entry is not None and entry.weak


def oracle_in_service(game: Game | str) -> bool:
    """Whether the game's oracle asks the oracle service (a run starts it for the evaluator)."""
    entry = ORACLES.get(game)
    return entry is not None and entry.service


def make_oracle(game: Game, *, store=None, client=None, engine: str = DEFAULT_ENGINE) -> Oracle:
    """The exact oracle of ``game`` (its entry in ORACLES); ValueError for games
    without one (Othello, Go, Hex with the swap rule). ``client`` (an ``OracleClient``):
    Connect Four and Hex positions are solved by the oracle service (Chomp and F-Games are
    answered here: tables and values by construction); ``engine``: the Connect Four engine
    of an oracle in this process."""
    entry = ORACLES.get(game)
    if entry is None:
        raise ValueError(f"no exact oracle for {game.name!r} here (oracles: {', '.join(ORACLES.names())}); "
                         f"use match-based evaluation (head-to-head) instead")
    return entry.make(game, store=store, client=client, engine=engine)
