"""Games between players over GTP, refereed by our rules.

A player is :class:`Local` (one of our policies, ``choose(states) -> int64[B]``, asked
once per ply for all the games it moves in) or :class:`Engine` (an outside GTP program,
one process per table, started on demand). :func:`play_games` plays a list of
:class:`Pairing` (an opening, the Black and the White player) on ``tables`` games at
once: each ply it asks every engine to move first (``genmove``; they think in their
own processes, side by side) and then collects the answers, so ``tables`` engines use
``tables`` cores.

Every answer is checked against ``games.make``'s rules before it is played, and every
move is told to the other engine (``play``). An engine that crashes, hangs past its
timeout, answers what is not a vertex, answers an illegal move or refuses a legal one
ends that game: its :class:`GameRecord` says which engine, the position (the moves,
the board) and the answer, its outcome is None, the engine's process is replaced and
the other games go on.

A game that ends is scored by our rules (Go: Tromp-Taylor area with komi; Othello:
discs), and every engine in it is asked ``final_score``; a winner that differs from
ours is kept as the record's ``disagreement``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import games
from gtp import vertices
from gtp.engine import EngineFailure, EngineRefused, GtpEngine
from gtp.protocol import colour_name


@dataclass
class Local:
    """One of our policies: ``choose(states) -> int64[B]`` over a batch of live states."""
    name: str
    choose: Callable


@dataclass
class Engine:
    """An outside engine: ``argv`` started once per table (and again after a failure), or
    ``start()`` called for a ``GtpEngine`` instead. ``timeout``: seconds for a ``genmove``;
    ``setup_timeout`` for every other command. The two seats of a game need two Engines."""
    name: str
    argv: Sequence[str] = ()
    timeout: float = 30.0
    setup_timeout: float = 10.0
    start: Callable[[], GtpEngine] | None = None
    _procs: dict = field(default_factory=dict, repr=False)

    def process(self, table: int, *, restart: bool = False) -> GtpEngine:
        """The process of ``table``: started if there is none (or, with ``restart``, if it
        has exited: at a game's start; mid-game a dead process must fail its game)."""
        proc = self._procs.get(table)
        if proc is None or (restart and not proc.alive):
            proc = self.start() if self.start else GtpEngine(self.argv, name=self.name, timeout=self.setup_timeout)
            self._procs[table] = proc
        return proc

    def discard(self, table: int) -> None:
        proc = self._procs.pop(table, None)
        if proc is not None:
            proc.kill()

    def close(self) -> None:
        for proc in self._procs.values():
            proc.close()
        self._procs.clear()


@dataclass(frozen=True)
class Pairing:
    opening: tuple  # actions played before the players take over
    black: object  # Local | Engine
    white: object


@dataclass
class GameRecord:
    game: str
    params: dict
    black: str
    white: str
    opening: list
    moves: list = field(default_factory=list)  # every action, the opening's included
    outcome: float | None = None  # for Black: 1 win, 0 draw, -1 loss; None: the game failed
    end: str = ""  # two passes | no moves left | game over | max length | resigned | failure
    score: float | None = None  # ours, for Black: Go area margin (komi in), Othello disc difference
    engine_scores: dict = field(default_factory=dict)  # engine name -> its final_score answer
    disagreement: str | None = None
    failure: dict | None = None  # engine, command, answer, problem, position, board
    seconds: float = 0.0

    @property
    def vertices(self) -> list[str]:
        game = games.make(self.game, **self.params)
        return [vertices.vertex(game, a, self.moves[:i]) for i, a in enumerate(self.moves)]

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("game", "params", "black", "white", "opening", "moves", "outcome",
                                              "end", "score", "engine_scores", "disagreement", "failure",
                                              "seconds")} | {"vertices": self.vertices}


def final_score_value(text: str) -> float | None:
    """Black's margin in a ``final_score`` answer (``B+3.5``, ``W+7``, ``0``), None if unreadable."""
    t = text.strip().upper()
    if t in ("0", "DRAW", "JIGO", "B+0", "W+0"):
        return 0.0
    try:
        if t.startswith("B+"):
            return float(t[2:].rstrip("."))
        if t.startswith("W+"):
            return -float(t[2:].rstrip("."))
    except ValueError:
        return None
    return None


def our_score(game, state) -> float | None:
    """Black's margin by our rules (Go: area with komi; Othello: discs), None for games
    without a score (their GTP facts have no ``black_margin``)."""
    black_margin = vertices.gtp_facts(game).black_margin
    return None if black_margin is None else games.resolve(black_margin)(game, state)


def othello_counts(state, margin: float) -> set[float]:
    """Black's margins that agree with ``margin`` (ours, the disc difference): itself, and
    with the empty squares added to the winner's discs."""
    empty = 64 - bin(int(state.player[0]) | int(state.opponent[0])).count("1")
    return {margin, margin + np.sign(margin) * empty}


class _Table:
    """One game in progress."""

    def __init__(self, index: int, game, pairing: Pairing):
        self.index, self.game, self.pairing = index, game, pairing
        self.players = (pairing.black, pairing.white)
        self.record = GameRecord(game.name, dict(game.params), pairing.black.name, pairing.white.name,
                                 [int(a) for a in pairing.opening])
        self.state = game.init(1)
        self.done = False
        self.start = time.perf_counter()

    @property
    def mover(self) -> int:
        return len(self.record.moves) % 2  # passes are moves: the colours alternate by ply

    def engines(self):
        return [(p, c) for c, p in enumerate(self.players) if isinstance(p, Engine)]

    def apply(self, action: int) -> None:
        """Play a checked legal ``action`` for the mover."""
        mover = self.mover
        self.state, reward, done = self.game.step(self.state, np.array([action], np.int64))
        self.record.moves.append(int(action))
        if done[0]:
            self.done = True
            r = float(reward[0])
            self.record.outcome = r if mover == 0 else -r
            self.record.end = self._end_reason()

    def _end_reason(self) -> str:
        moves, facts = self.record.moves, vertices.gtp_facts(self.game)
        passes = vertices.board_size(self.game) ** 2
        if facts.two_passes_end and len(moves) >= 2 and moves[-1] == moves[-2] == passes:
            return "two passes"
        return facts.end_reason

    def fail(self, engine: Engine | None, err: Exception | str, *, command: str = "", answer: str = "") -> None:
        moves = self.record.moves
        problem = err.problem if isinstance(err, EngineFailure) else str(err)
        self.record.failure = {
            "engine": engine.name if engine else "", "command": getattr(err, "command", command) or command,
            "answer": answer, "problem": problem,
            "position": " ".join(vertices.vertex(self.game, a, moves[:i]) for i, a in enumerate(moves)),
            "board": self.game.render_one(self.state, 0)}
        self.record.outcome, self.record.end, self.done = None, "failure", True
        if engine is not None:
            engine.discard(self.index)


def _vertex(table: _Table, action: int) -> str:
    return vertices.vertex(table.game, action, table.record.moves)


def _setup(table: _Table) -> None:
    """New board on each engine of the table, and the opening played on ours and theirs."""
    game = table.game
    size = vertices.board_size(game)
    for engine, _ in table.engines():
        try:
            proc = engine.process(table.index, restart=True)
            proc.command(f"boardsize {size}")
            proc.command("clear_board")
            if "komi" in game.params:  # Go's
                proc.command(f"komi {game.params['komi']:g}")
        except EngineFailure as e:
            table.fail(engine, e)
            return
    for a in table.record.opening:
        if not _tell(table, int(a), skip=None):
            return
        table.apply(int(a))
        if table.done:
            table.record.end = "the opening ends the game"
            return


def _tell(table: _Table, action: int, skip) -> bool:
    """``play`` the mover's ``action`` to every engine of the table but ``skip``; False
    (the game failed) when one refuses it or fails."""
    colour = colour_name(table.mover)
    word = _vertex(table, action)
    sent = []
    for engine, _ in table.engines():
        if engine is skip:
            continue
        try:
            engine.process(table.index).send(f"play {colour} {word}")
            sent.append(engine)
        except EngineFailure as e:
            table.fail(engine, e)
            return False
    for engine in sent:
        try:
            engine.process(table.index).receive()
        except EngineRefused as e:
            facts = vertices.gtp_facts(table.game)
            if facts.engines_skip_pass and facts.passes and action == vertices.board_size(table.game) ** 2:
                continue  # gtp-rhino takes no `play c pass`: it skips a player without a move itself
            table.fail(engine, f"refused a move legal under our rules: {e.problem}",
                       command=f"play {colour} {word}", answer=f"? {e.problem}")
            return False
        except EngineFailure as e:
            table.fail(engine, e)
            return False
    return True


def _finish(table: _Table) -> None:
    """Our score and each engine's ``final_score``, for Go and Othello."""
    rec = table.record
    rec.score = our_score(table.game, table.state)
    if rec.end in ("failure", "resigned") or rec.score is None:
        return
    for engine, _ in table.engines():
        try:
            text = engine.process(table.index).command("final_score")
        except EngineFailure as e:
            text = f"? {e.problem}"
        rec.engine_scores[engine.name] = text
        theirs = final_score_value(text)
        if theirs is None:
            continue
        # Go: GNU Go takes dead stones off before counting, Tromp-Taylor does not, so
        # only a different winner is a disagreement. Othello: the disc difference, or that
        # with the empty squares given to the winner (gtp-rhino's count, the tournament rule).
        if vertices.gtp_facts(table.game).engine_counts_empty:
            differs = theirs not in othello_counts(table.state, rec.score)
        else:
            differs = np.sign(theirs) != np.sign(rec.score)
        if differs:
            rec.disagreement = (f"{engine.name} scores {text}, our rules {'B' if rec.score > 0 else 'W'}"
                                f"+{abs(rec.score):g}" if rec.score else f"{engine.name} scores {text}, ours 0")


def _ask_engines(tables: list[_Table]) -> None:
    """One ``genmove`` to every engine whose turn it is, all sent before any is read."""
    asked = []
    for t in tables:
        engine = t.players[t.mover]
        command = f"genmove {colour_name(t.mover)}"
        try:
            engine.process(t.index).send(command)
            asked.append((t, engine, command))
        except EngineFailure as e:
            t.fail(engine, e)
    for t, engine, command in asked:
        try:
            answer = engine.process(t.index).receive(engine.timeout)
        except EngineFailure as e:
            t.fail(engine, e)
            continue
        if answer.strip().lower() == "resign":
            t.record.outcome = -1.0 if t.mover == 0 else 1.0
            t.record.end, t.done = "resigned", True
            continue
        try:
            action = vertices.action(t.game, answer, t.record.moves)
        except Exception as e:  # noqa: BLE001 - any unreadable answer is the engine's failure
            t.fail(engine, f"answered what is not a move of this board ({e})", command=command, answer=answer)
            continue
        if not t.game.legal(t.state)[0, action]:
            reason = t.game.illegal_reason(t.state, action)
            t.fail(engine, f"answered a move illegal under our rules: {answer} {reason}", command=command,
                   answer=answer)
            continue
        if _tell(t, action, skip=engine):
            t.apply(action)


def _ask_local(tables: list[_Table]) -> None:
    by_player: dict[int, list[_Table]] = {}
    for t in tables:
        by_player.setdefault(id(t.players[t.mover]), []).append(t)
    for group in by_player.values():
        player = group[0].players[group[0].mover]
        states = games.concat([t.state for t in group])
        chosen = np.asarray(player.choose(states), np.int64)
        group[0].game.check_actions(states, chosen, what=f"{player.name}: game")
        for t, a in zip(group, chosen):
            if _tell(t, int(a), skip=None):
                t.apply(int(a))


def play_games(game, pairings: Sequence[Pairing], *, tables: int = 1,
               on_record: Callable[[GameRecord], None] | None = None) -> list[GameRecord]:
    """Play every pairing to its end, ``tables`` at a time; records in pairing order.
    ``on_record(record)`` sees each as it ends (e.g. to write its SGF)."""
    if isinstance(game, str):
        game = games.make(game)
    queue = list(range(len(pairings)))
    records: list[GameRecord | None] = [None] * len(pairings)
    active: dict[int, _Table] = {}
    engines = {id(p): p for pr in pairings for p in (pr.black, pr.white) if isinstance(p, Engine)}

    def close(t: _Table) -> None:
        if not t.done:
            return
        _finish(t)
        t.record.seconds = time.perf_counter() - t.start
        records[t.index_in_list] = t.record
        if on_record is not None:
            on_record(t.record)
        del active[t.slot]

    try:
        while queue or active:
            for slot in range(tables):
                while slot not in active and queue:
                    i = queue.pop(0)
                    t = _Table(slot, game, pairings[i])
                    t.index_in_list, t.slot = i, slot
                    active[slot] = t
                    _setup(t)
                    close(t)
            live = list(active.values())
            _ask_engines([t for t in live if isinstance(t.players[t.mover], Engine)])
            _ask_local([t for t in live if not t.done and isinstance(t.players[t.mover], Local)])
            for t in live:
                close(t)
    finally:
        for e in engines.values():
            e.close()
    return records


def summary(records: Sequence[GameRecord], player: str) -> dict:
    """Counts for ``player`` (a name) over the records it played: wins, draws, losses,
    failures (games ended by an engine's failure, outside the score), disagreements."""
    out = {"games": 0, "wins": 0, "draws": 0, "losses": 0, "failures": 0, "disagreements": 0}
    for r in records:
        if player not in (r.black, r.white):
            continue
        out["games"] += 1
        out["disagreements"] += r.disagreement is not None
        if r.outcome is None:
            out["failures"] += 1
            continue
        mine = r.outcome if r.black == player else -r.outcome
        out["wins" if mine > 0 else "draws" if mine == 0 else "losses"] += 1
    return out
