"""One of our policies as a GTP v2 engine: :class:`GtpServer` answers command lines
(:meth:`GtpServer.handle`) and :meth:`GtpServer.serve` runs it on a pair of streams
(stdin/stdout for ``python -m launch gtp``).

Commands: protocol_version, name, version, known_command, list_commands, boardsize,
clear_board, komi, play, genmove, undo, showboard, final_score, quit. Anything else,
or a bad argument, gets a GTP error (``? ...``) and the server goes on:
``unknown command``, ``invalid color``, ``invalid vertex`` (not a point of this board),
``illegal move`` (occupied, suicide, superko, a full column, ...), ``unacceptable
size`` (a board size the policy was not made for), ``cannot undo``.

The position is the list of moves played since ``clear_board`` (``undo`` drops the last);
the rules are ``games.make``'s. Colours alternate as our games do: a ``play`` or
``genmove`` for the player who is not to move first plays a pass for the one who is
(Go, where a pass is a move, unless that pass would end the game; Othello, where the
player to move must have no placement, the way gtp-rhino skips a player). ``komi``
changes the scoring of Go (the policy was trained with its own); the other games take
and ignore it, as GUIs send it to every engine. ``final_score``: Go's Tromp-Taylor area
with komi (``B+3``, ``W+7``, ``0``) at any point, Othello's disc difference, Connect Four
and Hex the winner (``B+1``/``W+1``/``0``) once the game is over. ``genmove`` on a
finished game answers ``pass`` in Go and Othello and an error in the others.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import games
from gtp import vertices
from gtp.protocol import GtpError, colour_name, format_answer, parse_colour, parse_command

COMMANDS = ("protocol_version", "name", "version", "known_command", "list_commands", "boardsize",
            "clear_board", "komi", "play", "genmove", "undo", "showboard", "final_score", "quit")


def _occupied(game, state, action: int) -> bool:
    """Whether ``action`` names a point that holds a stone or disc (Go, Othello, Hex: the
    game's GTP facts say how to tell)."""
    occupied = vertices.gtp_facts(game).occupied
    return occupied is not None and games.resolve(occupied)(game, state, action)


class GtpServer:
    """``game``: a ``games.Game`` (Go, Othello, Connect Four or Hex); ``choose(states) ->
    int64[B]`` the policy (``evaluation.policies``); ``name``, ``version`` as reported."""

    def __init__(self, game, choose: Callable, *, name: str = "selfplay", version: str = "1"):
        if games.descriptor(game).gtp is None:
            raise ValueError(f"no GTP engine for game {game.name!r}; GTP games: {', '.join(vertices.GAMES)}")
        self.game, self.choose, self.name, self.version = game, choose, name, version
        self.moves: list[int] = []
        self.state = game.init(1)
        self.quit = False

    # ---- the position -----------------------------------------------------------------

    @property
    def size(self) -> int:
        return vertices.board_size(self.game)

    @property
    def over(self) -> bool:
        return bool(self.game.terminal(self.state)[0])

    def _rebuild(self) -> None:
        self.state = self.game.from_moves([self.moves]) if self.moves else self.game.init(1)

    def _play(self, action: int, word: str) -> None:
        if self.over:
            raise GtpError("illegal move: the game is over")
        if not self.game.legal(self.state)[0, action]:
            if _occupied(self.game, self.state, action):
                raise GtpError(f"illegal move: {word} is occupied")
            raise GtpError(f"illegal move: {word} {self.game.illegal_reason(self.state, action)}")
        self.state, _, _ = self.game.step(self.state, np.array([action], np.int64))
        self.moves.append(int(action))

    def _align(self, colour: int) -> None:
        """Make ``colour`` the player to move, by a pass of the other where the rules allow."""
        if len(self.moves) % 2 == colour or self.over:
            return
        # A pass where the rules allow one (Othello: only without a placement), but not a
        # second in a row (Go: it would end the game).
        pass_action = self.size * self.size
        if (vertices.gtp_facts(self.game).passes and self.game.legal(self.state)[0, pass_action]
                and not (self.moves and self.moves[-1] == pass_action)):
            self._play(pass_action, "pass")
        else:
            raise GtpError(f"illegal move: it is {colour_name(1 - colour)}'s turn")

    # ---- the commands -------------------------------------------------------------------

    def handle(self, line: str) -> str | None:
        """The answer to one command line (None for a line without a command)."""
        cmd = parse_command(line)
        if cmd is None:
            return None
        handler = getattr(self, f"cmd_{cmd.name}", None) if cmd.name in COMMANDS else None
        if handler is None:
            return format_answer(cmd.id, "unknown command", ok=False)
        try:
            return format_answer(cmd.id, handler(*cmd.args))
        except GtpError as e:
            return format_answer(cmd.id, str(e), ok=False)
        except TypeError as e:
            if "positional argument" not in str(e):
                return format_answer(cmd.id, f"internal error: {type(e).__name__}: {e}", ok=False)
            return format_answer(cmd.id, f"syntax error: wrong number of arguments to {cmd.name}", ok=False)
        except Exception as e:  # noqa: BLE001 - an engine keeps serving; the error names the bug
            return format_answer(cmd.id, f"internal error: {type(e).__name__}: {e}", ok=False)

    def serve(self, stdin=None, stdout=None) -> None:
        """Answer every line of ``stdin`` on ``stdout`` until ``quit`` or the end of input."""
        stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
        for line in stdin:
            answer = self.handle(line)
            if answer is not None:
                stdout.write(answer)
                stdout.flush()
            if self.quit:
                break

    def cmd_protocol_version(self):
        return "2"

    def cmd_name(self):
        return self.name

    def cmd_version(self):
        return self.version

    def cmd_known_command(self, name):
        return "true" if name in COMMANDS else "false"

    def cmd_list_commands(self):
        return "\n".join(COMMANDS)

    def cmd_quit(self):
        self.quit = True
        return ""

    def cmd_boardsize(self, size):
        try:
            n = int(size)
        except ValueError:
            raise GtpError(f"syntax error: board size {size!r} is not an integer") from None
        if n != self.size:
            raise GtpError(f"unacceptable size: this engine plays {self.game.name} on size {self.size} only")
        self.cmd_clear_board()
        return ""

    def cmd_clear_board(self):
        self.moves = []
        self._rebuild()
        return ""

    def cmd_komi(self, value):
        try:
            komi = float(value)
        except ValueError:
            raise GtpError(f"syntax error: komi {value!r} is not a number") from None
        if "komi" in self.game.params and komi != self.game.params["komi"]:  # Go's
            self.game = games.make(self.game.name, **{**self.game.params, "komi": komi})
            self._rebuild()
        return ""

    def cmd_play(self, colour, word):
        c = parse_colour(colour)
        action = vertices.action(self.game, word, self.moves)
        self._align(c)
        if len(self.moves) % 2 != c:
            raise GtpError("illegal move: the game is over")
        self._play(action, word)
        return ""

    def cmd_genmove(self, colour):
        c = parse_colour(colour)
        if self.over:
            if vertices.gtp_facts(self.game).passes:
                return "pass"
            raise GtpError("the game is over")
        self._align(c)
        if self.over:
            return "pass"
        action = int(np.asarray(self.choose(self.state))[0])
        word = vertices.vertex(self.game, action, self.moves)
        self._play(action, word)
        return word

    def cmd_undo(self):
        if not self.moves:
            raise GtpError("cannot undo")
        self.moves.pop()
        self._rebuild()
        return ""

    def cmd_showboard(self):
        return "\n" + self.game.render_one(self.state, 0)

    def cmd_final_score(self):
        game, state = self.game, self.state
        black_margin = vertices.gtp_facts(game).black_margin
        if black_margin is not None:  # Go and Othello count a score; the others have a winner
            margin = games.resolve(black_margin)(game, state)
        else:
            if not self.over:
                raise GtpError("cannot score: the game is not over")
            # The last mover's reward: replay the final move.
            before = game.from_moves([self.moves[:-1]]) if len(self.moves) > 1 else game.init(1)
            _, reward, _ = game.step(before, np.array([self.moves[-1]], np.int64))
            margin = float(reward[0]) * (1 if (len(self.moves) - 1) % 2 == 0 else -1)
        return "0" if margin == 0 else f"{'B' if margin > 0 else 'W'}+{abs(margin):g}"
