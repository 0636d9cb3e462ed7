"""The GTP v2 wire format: a command line is ``[id] name [args...]``; an answer is
``=[id] text`` (success) or ``?[id] text`` (failure), ended by an empty line.

Command lines are cleaned as the standard says: control characters other than tab and
newline removed, tabs made spaces, ``#`` comments dropped, empty lines ignored.
"""

from __future__ import annotations

from typing import NamedTuple


class GtpError(Exception):
    """A command that fails; its message is the text of the ``?`` answer."""


class Command(NamedTuple):
    id: str  # "" when the line has none
    name: str
    args: list[str]


def parse_command(line: str) -> Command | None:
    """The command of one input line, or None for a line with none (empty, a comment)."""
    line = "".join(ch for ch in line if ch in "\t\n" or ord(ch) >= 32 and ord(ch) != 127)
    line = line.split("#", 1)[0].replace("\t", " ").strip()
    if not line:
        return None
    words = line.split()
    ident = ""
    if words[0].isdigit():
        ident, words = words[0], words[1:]
        if not words:
            return None
    return Command(ident, words[0], words[1:])


def format_answer(ident: str, text: str, ok: bool = True) -> str:
    """``=id text\\n\\n`` or ``?id text\\n\\n``; a multi-line text keeps its lines."""
    text = text.rstrip("\n")
    return f"{'=' if ok else '?'}{ident}{' ' if text else ''}{text}\n\n"


def parse_answer(raw: str) -> tuple[bool, str]:
    """(success, text) of an answer as read (its lines up to the empty one)."""
    raw = raw.strip("\n")
    if not raw or raw[0] not in "=?":
        raise ValueError(f"not a GTP answer: {raw[:80]!r}")
    head, _, rest = raw[1:].partition("\n")
    head = head.lstrip("0123456789")
    text = head.strip() + ("\n" + rest if rest else "")
    return raw[0] == "=", text


COLOURS = {"b": 0, "black": 0, "w": 1, "white": 1}


def parse_colour(word: str) -> int:
    """0 for Black (the first player), 1 for White."""
    try:
        return COLOURS[word.lower()]
    except KeyError:
        raise GtpError(f"invalid color: {word}") from None


def colour_name(player: int) -> str:
    return "b" if player == 0 else "w"
