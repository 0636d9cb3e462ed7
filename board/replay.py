"""Recorded games the board can replay, from text:

- a game record (JSON): ``{"game": "connect4", "params": {}, "moves": [3, 3, 4]}``, a list
  of them, or one a line (JSON lines); ``index`` picks one of several. This is what
  :func:`evaluation_game` writes of the games ``python -m launch evaluate`` plays;
- a Connect Four solver move string of 1-based column digits (``4453``, the oracle command
  line's format);
- an SGF game (``(;GM[1]SZ[9];B[cd];W[ee]...)``): Go (``GM[1]``), Othello (``GM[2]``) and
  Hex (``GM[11]``); ``B[]`` or ``B[tt]`` is a pass.

:func:`evaluation_game` replays, move for move, a game of evaluation's play suite: the
agent against the oracle from one of the suite's openings (``evaluation.play.play`` with
the same players, which are deterministic), so the board shows what the metrics counted.
"""

from __future__ import annotations

import json
import re

import numpy as np

import games
from games import Game
from gtp.vertices import board_size

_SGF_MOVE = re.compile(r";\s*(B|W)\[([a-z]{0,2})\]")
_SGF_PROP = re.compile(r"\b(GM|SZ)\[([^\]]*)\]")
# SGF's GM number -> the built-in game (those whose GTP facts have one: Go, Othello, Hex).
_SGF_GAMES = {str(d.gtp.sgf_game): d.name for d in games.every_descriptor() if d.gtp is not None and d.gtp.sgf_game}


class ReplayError(ValueError):
    """Text that is no game record of the board's game."""


def _from_sgf(text: str, game: Game) -> list[int]:
    props = dict(_SGF_PROP.findall(text))
    if "GM" in props and _SGF_GAMES.get(props["GM"]) != game.name:
        raise ReplayError(f"the SGF is of game GM[{props['GM']}] "
                          f"({_SGF_GAMES.get(props['GM'], 'unknown here')}), not {game.name}")
    if game.name not in _SGF_GAMES.values():
        raise ReplayError(f"SGF replay is for go, othello and hex; this board plays {game.name}")
    size = board_size(game)
    if "SZ" in props and props["SZ"].strip() != str(size):
        raise ReplayError(f"the SGF's board is SZ[{props['SZ']}], this board's is {size}")
    moves = []
    for colour, coords in _SGF_MOVE.findall(text):
        if coords in ("", "tt"):
            moves.append(size * size)  # pass (Hex: the swap action)
            continue
        if len(coords) != 2:
            raise ReplayError(f"SGF move {colour}[{coords}] is not two letters")
        c, r = ord(coords[0]) - ord("a"), ord(coords[1]) - ord("a")
        if not (0 <= r < size and 0 <= c < size):
            raise ReplayError(f"SGF move {colour}[{coords}] is off the {size}x{size} board")
        moves.append(r * size + c)
    return moves


def _from_record(record, game: Game, where: str) -> list[int]:
    if not isinstance(record, dict) or not isinstance(record.get("moves"), list):
        raise ReplayError(f"{where}: a game record is a JSON object with a list 'moves'")
    if record.get("game", game.name) != game.name:
        raise ReplayError(f"{where}: the record is of game {record['game']!r}; this board plays {game.name!r}")
    params = record.get("params")
    if params is not None and params != {k: v for k, v in game.params.items() if k in params}:
        raise ReplayError(f"{where}: the record is of {record['game']} {params}, this board's is {game.params}")
    moves = record["moves"]
    bad = [m for m in moves if isinstance(m, bool) or not isinstance(m, int)]
    if bad:
        raise ReplayError(f"{where}: moves must be integer actions, got {bad[0]!r}")
    return moves


def parse_replay(text: str, game: Game, index: int = 0) -> list[int]:
    """The moves of the recorded game in ``text`` (see the module doc)."""
    text = text.strip()
    if not text:
        raise ReplayError("the replay is empty")
    if text.startswith("("):
        return _from_sgf(text, game)
    digits = games.descriptor(game).replay_digits  # Connect Four's solver strings: columns 1..7
    if digits and re.fullmatch(f"[{re.escape(digits)}]+", text):
        return [digits.index(ch) for ch in text]
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        try:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise ReplayError(f"the replay is neither a game record (JSON or JSON lines), an SGF, "
                              f"nor a Connect Four move string: {e}") from None
    if not 0 <= index < len(records):
        raise ReplayError(f"game {index} asked for; the replay holds {len(records)} game(s)")
    return _from_record(records[index], game, f"game {index}")


def play_suite_openings(game: Game) -> list[list[int]]:
    """The openings (move lists) of ``game``'s play suite against the oracle, in the suite's
    order: its dataset's (Connect Four's 568, Chomp's boards with datasets), else every
    first move that does not end the game (``evaluation.runner``'s first-ply starts)."""
    from evaluation.suites import suite_opening_moves, suites_for
    suite = next((s for s in suites_for(game) if s.kind == "play"), None)
    if suite is None:
        raise ReplayError(f"{game.name} has no play suite against an oracle (oracles: connect4, chomp, fgame)")
    return suite_opening_moves(game, suite)


def play_suite_game(game: Game, agent_choose, oracle, number: int) -> dict:
    """Game ``number`` of the play suite, numbered as ``play_vs_oracle`` plays them: games
    0..n-1 have the agent move first from opening 0..n-1, games n..2n-1 second."""
    openings = play_suite_openings(game)
    n = len(openings)
    if not 0 <= number < 2 * n:
        raise ReplayError(f"the {game.name} play suite has games 0..{2 * n - 1} ({n} openings, both sides); "
                          f"got {number}")
    record = evaluation_game(game, agent_choose, oracle, openings[number % n], number < n)
    record["source"] = (f"game {number} of evaluation's play suite: opening {number % n}, "
                        f"the agent {'first' if number < n else 'second'}")
    return record


def evaluation_game(game: Game, agent_choose, oracle, opening: list[int], agent_first: bool) -> dict:
    """The game record of evaluation's play suite from ``opening`` (a list of moves):
    ``agent_choose`` against ``oracle``, the agent moving first or second, exactly as
    ``evaluation.play.play_vs_oracle`` plays it."""
    from evaluation.play import game_record, play
    start = game.from_moves([opening])
    first = np.array([0 if agent_first else 1])
    result = play(game, start, (agent_choose, oracle.choose), first, names=("agent", "oracle"))
    return game_record(game, opening, result.actions[0], agent_first, result.outcome[0])
