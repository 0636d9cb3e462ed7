"""Vertex names of each game over GTP, both ways. Letters and ``pass`` are read in any case.

- Go (``size`` up to 19): the Go players' names, as GNU Go and every Go GUI: a column
  letter ``A``..``T`` without ``I`` (A at the left) and the row number, 1 at the bottom
  (``games/go.py``'s picture: ``A1`` is action 0); ``pass``.
- Othello: as gtp-rhino: ``a``..``h`` left to right, rows ``1``..``8`` from the top
  (``a1`` is action 0, ``d3`` action 19); ``pass`` (legal only when no disc can be placed).
- Connect Four: a column letter ``a``..``g`` on 7x6 (``a``.. on its other boards, left to right) and the row, 1 at the bottom,
  where the disc comes to rest (``d1`` is the first disc in the middle column). ``play``
  also takes the letter alone (``d``); the row, when given, must be the one the disc
  falls to. Answers name both (``d2``).
- Hex (``size`` up to 19): a column letter ``a``.. and the row number, row 1 being
  row 0 of ``games/hex.py`` (Black, the first player, joins row 1 to the last row);
  ``c4`` is action ``3 * size + 2``; ``swap`` where the game has the swap rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import games
from games import GtpFacts
from gtp.protocol import GtpError

# The built-in games played over GTP (their descriptors have GTP facts).
GAMES = tuple(d.name for d in games.every_descriptor() if d.gtp is not None)


def gtp_facts(game) -> GtpFacts:
    """``game``'s GTP facts (its descriptor's ``gtp``); GtpError for a game without."""
    facts = games.descriptor(game).gtp
    if facts is None:
        raise GtpError(f"no GTP vertices for game {game.name!r}")
    return facts


def board_size(game) -> int:
    """The side of ``game``'s board as ``boardsize`` tells it (Connect Four: its columns)."""
    facts = gtp_facts(game)
    if facts.columns is not None:
        return games.resolve(facts.columns)(game)[0]
    return facts.board_size or int(game.params["size"])


def drop_rows(game) -> int:
    """The rows of a column where a vertex is a column (Connect Four), else 0."""
    facts = gtp_facts(game)
    return games.resolve(facts.columns)(game)[1] if facts.drops else 0


def vertex(game, action: int, moves: Sequence[int] = ()) -> str:
    """The GTP name of ``action``; ``moves``: the actions played before it (Connect Four's row)."""
    action, facts, size = int(action), gtp_facts(game), board_size(game)
    if facts.drops:
        return f"{facts.letters[action]}{sum(1 for m in moves if int(m) == action) + 1}"
    if facts.passes and action == size * size:
        return "pass"
    if facts.swap and action == game.swap_action:
        return "swap"
    row, col = divmod(action, size)
    return f"{facts.letters[col]}{row + 1}"


def action(game, word: str, moves: Sequence[int] = ()) -> int:
    """The action that ``word`` names (GtpError ``invalid vertex`` when it names none of this
    board). Legality is the rules' business, not this function's."""
    text = word.strip()
    low = text.lower()
    facts, size = gtp_facts(game), board_size(game)
    bad = GtpError(f"invalid vertex: {word}")
    if facts.passes and low == "pass":
        return size ** 2
    if facts.swap and low == "swap":
        if game.swap_action is None:
            raise GtpError(f"invalid vertex: swap (this {game.name} game has no swap rule)")
        return game.swap_action
    if not text or not text[0].isalpha():
        raise bad
    letter, digits = low[0], text[1:]
    if digits and not digits.isdigit():
        raise bad
    col = facts.letters.lower().find(letter)
    if facts.drops:
        if col < 0 or col >= size or (digits and not 1 <= int(digits) <= drop_rows(game)):
            raise bad
        falls_to = sum(1 for m in moves if int(m) == col) + 1
        if digits and int(digits) != falls_to:
            raise GtpError(f"illegal move: a disc in column {letter} falls to row {falls_to}, not {digits}")
        return col
    if col < 0 or col >= size or not digits or not 1 <= int(digits) <= size:
        raise bad
    return (int(digits) - 1) * size + col
