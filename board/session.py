"""One game on the board: the moves so far, who plays which side, and every ply's record
(the mover's reasoning, the oracle's view of the position it moved from, the mark).

:class:`Table` is what every game of one server shares: the game, the agent (and an
optional opponent for watching), the oracle and a cache of its analyses. :class:`Session`
is one person's game. Modes: ``human`` is the seat (0 first, 1 second) the person plays
against the agent, or None to watch the agent play itself (or the opponent, seat 1);
a replay shows a recorded game, ``cursor`` plies into it. Bad input raises
:class:`BadMove` with a message that names the problem; the state is then unchanged.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from board.grid import grid_of
from board.marks import MARKS, mark, oracle_view
from evaluation.oracles import HexOracle, HexUnsolvedError, Oracle, make_oracle
from games import Game, GameTable, IllegalMoveError


class BadMove(ValueError):
    """A move or request the game cannot take, with the reason for the person."""


HEX_SECONDS = 3.0  # the Hex solver's time for one position of a page


def hex_page_oracle(game: Game, *, store=None) -> Oracle:
    """Hex's oracle for pages (its entry in PAGE_ORACLES): a page waits for its
    answer, so a few seconds a position, and a position the solver does not settle in
    them is shown without the oracle's view."""
    return HexOracle(game, store=store, time_limit=HEX_SECONDS, retries=0)


# The games whose pages wait on an oracle other than their evaluation's: (game, *, store) -> Oracle.
PAGE_ORACLES: GameTable[Callable[..., Oracle]] = GameTable("page oracle", {"hex": hex_page_oracle})

class Table:
    """The game, its players and its oracle (None where the game has none)."""

    def __init__(self, game: Game, agent, *, opponent=None, oracle: Oracle | None = None, cache_size: int = 4096):
        self.game, self.agent, self.opponent, self.oracle = game, agent, opponent, oracle
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = cache_size

    @staticmethod
    def oracle_for(game: Game, store=None) -> Oracle | None:
        """The game's oracle for pages (its entry in PAGE_ORACLES, else its exact oracle)."""
        page_oracle = PAGE_ORACLES.get(game)
        try:
            if page_oracle is not None:
                return page_oracle(game, store=store)
            return make_oracle(game, store=store)
        except ValueError:  # Othello, Go, tic-tac-toe, Hex with the swap rule: no oracle here
            return None

    def analysis(self, moves: tuple):
        """The oracle's ``Analysis`` of the live position after ``moves`` (cached), or None
        where the (Hex) solver left it unknown within the board's limit."""
        if moves in self._cache:
            self._cache.move_to_end(moves)
            return self._cache[moves]
        try:
            found = self.oracle.analyze(self.game.from_moves([list(moves)]))
        except HexUnsolvedError:
            found = None
        self._cache[moves] = found
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return found

    def view(self, moves: tuple) -> dict | None:
        analysis = None if self.oracle is None else self.analysis(moves)
        if analysis is None:
            return None
        return oracle_view(self.game, self.oracle, analysis, 0, len(moves))


class Session:
    def __init__(self, table: Table, human: int | None = 0):
        self.table = table
        self.new(human)

    # ---- the position ---------------------------------------------------------

    @property
    def game(self) -> Game:
        return self.table.game

    def state(self, moves=None):
        return self.game.from_moves([self.moves if moves is None else list(moves)])

    def to_move(self) -> int:
        """The seat to move: plies alternate (passes are moves in every game here)."""
        return len(self.moves) % 2

    def done(self) -> bool:
        return bool(self.game.terminal(self.state())[0])

    def turn(self) -> str | None:
        """Who moves next: "human", "agent", "opponent", or None when the game is over
        or a replay is shown."""
        if self.replay is not None or self.done():
            return None
        seat = self.to_move()
        if self.human == seat:
            return "human"
        return "opponent" if self.human is None and seat == 1 and self.table.opponent is not None else "agent"

    # ---- commands -------------------------------------------------------------

    def new(self, human: int | None = 0) -> None:
        if human not in (0, 1, None):
            raise BadMove(f"human must be 0 (move first), 1 (move second) or null (watch), got {human!r}")
        self.human, self.moves, self.plies, self.replay, self.cursor, self.source = human, [], [], None, 0, None
        self.reward = 0.0
        if human == 1:
            self._play_agent()

    def move(self, action) -> None:
        """The person's ``action``, then the agent's reply."""
        if isinstance(action, bool) or not isinstance(action, int):
            raise BadMove(f"action must be an integer 0..{self.game.num_actions - 1}, got {action!r}")
        turn = self.turn()
        if self.replay is not None:
            raise BadMove("a replay is shown: start a new game (POST /api/new) to play")
        if turn is None:
            raise BadMove(f"the game is over: action {action} cannot be played; start a new game")
        if self.human is None:
            raise BadMove("you are watching: start a game with POST /api/new {\"human\": 0} (or 1) to play")
        if turn != "human":
            raise BadMove(f"it is the {turn}'s turn, not yours (you play seat {self.human})")
        self._play(action, "human")
        if self.turn() in ("agent", "opponent"):
            self._play_agent()

    def step(self) -> None:
        """One move of the side to move when no person plays it (watching)."""
        turn = self.turn()
        if turn not in ("agent", "opponent"):
            raise BadMove("nothing to step: " + ("the game is over" if turn is None else "it is your move"))
        self._play_agent()

    def undo(self) -> None:
        """Take back the person's last move and the agent's reply (one ply when watching)."""
        if self.replay is not None:
            raise BadMove("a replay is shown: step through it with POST /api/seek")
        if not self.moves:
            raise BadMove("nothing to undo: no move has been played")
        if self.human is None:
            self._truncate(len(self.moves) - 1)
            return
        humans = [i for i, p in enumerate(self.plies) if p["who"] == "human"]
        if not humans:
            raise BadMove("nothing to undo: the agent's opening move is not yours to take back")
        self._truncate(humans[-1])

    def load_replay(self, moves, source: str, who=None) -> None:
        """Show the recorded game ``moves``; every move is marked. ``who``: per ply, who
        played it ("agent" counts in the agent's marks; default "recorded")."""
        try:
            self.game.from_moves([list(moves)])
        except (IllegalMoveError, ValueError) as e:
            raise BadMove(f"the recorded game {source} is not a legal {self.game.name} game: {e}") from e
        self.new(None)
        for i, a in enumerate(moves):
            self._play(int(a), "recorded" if who is None else who[i])
        self.replay, self.cursor, self.source = list(self.moves), len(self.moves), source

    def seek(self, ply) -> None:
        if self.replay is None:
            raise BadMove("no replay is loaded (POST /api/replay)")
        if isinstance(ply, bool) or not isinstance(ply, int) or not 0 <= ply <= len(self.replay):
            raise BadMove(f"ply must be an integer 0..{len(self.replay)}, got {ply!r}")
        self.cursor = ply

    # ---- playing --------------------------------------------------------------

    def _truncate(self, n: int) -> None:
        self.moves, self.plies = self.moves[:n], self.plies[:n]
        self.reward = self.plies[-1]["reward"] if self.plies else 0.0

    def _play_agent(self) -> None:
        who = self.turn()
        player = self.table.opponent if who == "opponent" else self.table.agent
        action, info = player.think(self.state())
        self._play(action, who, info)

    def _play(self, action: int, who: str, info: dict | None = None) -> None:
        state = self.state()
        if not 0 <= action < self.game.num_actions:
            raise BadMove(f"action {action} is out of range: {self.game.name} has actions 0..{self.game.num_actions - 1}")
        if not self.game.legal(state)[0, action]:
            raise BadMove(f"action {action} ({self.game.action_name(action)}) "
                          f"{self.game.illegal_reason(state, action)}")
        _, reward, _ = self.game.step(state, np.array([action], np.int64))
        ply = {"ply": len(self.moves), "seat": self.to_move(), "who": who, "action": int(action),
               "name": self.game.action_name(action), "thinking": info, "reward": float(reward[0]),
               "oracle": None, "mark": None}
        if self.table.oracle is not None:
            key = tuple(self.moves)
            ply["oracle"] = self.table.view(key)
            analysis = self.table.analysis(key)
            ply["mark"] = None if analysis is None else mark(analysis, 0, int(action))
        self.moves.append(int(action))
        self.plies.append(ply)
        self.reward = ply["reward"]

    # ---- the page's state -----------------------------------------------------

    def to_json(self) -> dict:
        moves = self.moves if self.replay is None else self.replay[:self.cursor]
        plies = self.plies[:len(moves)]
        state = self.state(moves)
        done = bool(self.game.terminal(state)[0])
        legal = [] if done or self.replay is not None else [int(a) for a in np.flatnonzero(self.game.legal(state)[0])]
        grid = grid_of(self.game, state)
        result = None
        if done:
            last = plies[-1]
            result = "draw" if last["reward"] == 0 else {"winner": last["seat"], "who": last["who"]}
        agent_plies = [p for p in plies if p["who"] in ("agent", "opponent")]  # a replay's "agent" plies too
        position = None if done or self.table.oracle is None else self.table.view(tuple(moves))
        counts = {m: sum(p["mark"] == m for p in agent_plies) for m in MARKS}
        return {
            "game": self.game.name, "params": self.game.params, "num_actions": self.game.num_actions,
            "agent": self.table.agent.name,
            "opponent": None if self.table.opponent is None else self.table.opponent.name,
            "human": self.human, "turn": None if self.replay is not None else self.turn(),
            "to_move": len(moves) % 2, "moves": list(moves), "move_names": [p["name"] for p in plies],
            "legal": legal, "legal_names": {str(a): self.game.action_name(a) for a in legal},
            "done": done, "result": result,
            "board": None if grid is None else grid.to_json(), "text": self.game.render(state),
            "history": plies,
            "values": agent_plies[-1]["thinking"] if agent_plies else None,  # the agent's last move's reasoning
            "oracle": None if self.table.oracle is None else {
                "position": position, "marks": [p["mark"] for p in plies], "agent_marks": counts},
            "replay": None if self.replay is None else {"length": len(self.replay), "cursor": self.cursor,
                                                        "source": self.source},
        }
