"""Vertex names of each game over GTP, both ways. Letters and ``pass`` are read in any case.

- Go (``size`` up to 19): the Go players' names, as GNU Go and every Go GUI: a column
  letter ``A``..``T`` without ``I`` (A at the left) and the row number, 1 at the bottom
  (``games/go.py``'s picture: ``A1`` is action 0); ``pass``.
- Othello: as gtp-rhino: ``a``..``h`` left to right, rows ``1``..``8`` from the top
  (``a1`` is action 0, ``d3`` action 19); ``pass`` (legal only when no disc can be placed).
- Connect Four: a column letter ``a``..``g`` (left to right) and the row, 1 at the bottom,
  where the disc comes to rest (``d1`` is the first disc in the middle column). ``play``
  also takes the letter alone (``d``); the row, when given, must be the one the disc
  falls to. Answers name both (``d2``).
- Hex (``size`` up to 19): a column letter ``a``.. and the row number, row 1 being
  row 0 of ``games/hex.py`` (Black, the first player, joins row 1 to the last row);
  ``c4`` is action ``3 * size + 2``; ``swap`` where the game has the swap rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from gtp.protocol import GtpError

GO_COLUMNS = "ABCDEFGHJKLMNOPQRST"
LETTERS = "abcdefghijklmnopqrs"
GAMES = ("go", "othello", "connect4", "hex")


def _size(game) -> int:
    return {"othello": 8, "connect4": 7}.get(game.name) or int(game.params["size"])


def vertex(game, action: int, moves: Sequence[int] = ()) -> str:
    """The GTP name of ``action``; ``moves``: the actions played before it (Connect Four's row)."""
    action = int(action)
    name = game.name
    if name == "go":
        size = _size(game)
        if action == size * size:
            return "pass"
        row, col = divmod(action, size)
        return f"{GO_COLUMNS[col]}{row + 1}"
    if name == "othello":
        if action == 64:
            return "pass"
        row, col = divmod(action, 8)
        return f"{LETTERS[col]}{row + 1}"
    if name == "connect4":
        return f"{LETTERS[action]}{sum(1 for m in moves if int(m) == action) + 1}"
    if name == "hex":
        if action == game.swap_action:
            return "swap"
        row, col = divmod(action, _size(game))
        return f"{LETTERS[col]}{row + 1}"
    raise GtpError(f"no GTP vertices for game {name!r}")


def action(game, word: str, moves: Sequence[int] = ()) -> int:
    """The action that ``word`` names (GtpError ``invalid vertex`` when it names none of this
    board). Legality is the rules' business, not this function's."""
    text = word.strip()
    low = text.lower()
    name = game.name
    bad = GtpError(f"invalid vertex: {word}")
    if name in ("go", "othello") and low == "pass":
        return _size(game) ** 2
    if name == "hex" and low == "swap":
        if game.swap_action is None:
            raise GtpError("invalid vertex: swap (this Hex game has no swap rule)")
        return game.swap_action
    if not text or not text[0].isalpha():
        raise bad
    letter, digits = low[0], text[1:]
    if digits and not digits.isdigit():
        raise bad
    if name == "go":
        size = _size(game)
        col = GO_COLUMNS.lower().find(letter)
        if col < 0 or col >= size or not digits or not 1 <= int(digits) <= size:
            raise bad
        return (int(digits) - 1) * size + col
    if name in ("othello", "hex"):
        size = _size(game)
        col = LETTERS.find(letter)
        if col < 0 or col >= size or not digits or not 1 <= int(digits) <= size:
            raise bad
        return (int(digits) - 1) * size + col
    if name == "connect4":
        col = LETTERS.find(letter)
        if col < 0 or col >= 7 or (digits and not 1 <= int(digits) <= 6):
            raise bad
        if digits and int(digits) != sum(1 for m in moves if int(m) == col) + 1:
            raise GtpError(f"illegal move: a disc in column {letter} falls to row "
                           f"{sum(1 for m in moves if int(m) == col) + 1}, not {digits}")
        return col
    raise GtpError(f"no GTP vertices for game {name!r}")
