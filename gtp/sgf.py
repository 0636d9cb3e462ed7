"""A refereed game as SGF (FF[4], written by sgfmill), to replay it in a GUI (Sabaki,
quarry, GoGui): Go as GM[1] with its size and komi, Othello as GM[2] on 8x8 (SGF's
``aa`` is the top-left square, ``a1`` of ``gtp.vertices``). The root holds the
players, the result (``B+3.5``, ``W+12``, ``0``; ``Void`` for a failed game), the rules
(``RU[Tromp-Taylor, positional superko]`` for Go) and a comment with the record's
failure, engine scores and disagreement; the last opening move is commented ``end of
the opening``."""

from __future__ import annotations

from sgfmill import sgf

import games
from gtp.referee import GameRecord

# The built-in games whose refereed games are written as SGF, with their GM numbers.
SGF_GAMES = {d.name: d.gtp.sgf_game for d in games.every_descriptor() if d.gtp is not None and d.gtp.sgf_records}


def _result(rec: GameRecord) -> str:
    if rec.outcome is None:
        return "Void"
    if rec.end == "resigned":
        return "B+R" if rec.outcome > 0 else "W+R"
    if rec.score is not None and rec.score != 0 and (rec.score > 0) == (rec.outcome > 0):
        return f"{'B' if rec.score > 0 else 'W'}+{abs(rec.score):g}"
    return "0" if rec.outcome == 0 else "B+" if rec.outcome > 0 else "W+"


def record_sgf(rec: GameRecord) -> bytes:
    """The SGF of ``rec`` (Go or Othello)."""
    facts = games.descriptor(rec.game).gtp
    if facts is None or not facts.sgf_records:
        raise ValueError(f"no SGF for game {rec.game!r} (Go and Othello only)")
    size = int(rec.params.get("size", 8))
    game = sgf.Sgf_game(size=size)
    root = game.get_root()
    root.set_raw("GM", str(facts.sgf_game).encode())
    root.set("PB", rec.black)
    root.set("PW", rec.white)
    root.set("RE", _result(rec))
    if facts.sgf_rules:
        root.set("KM", float(rec.params.get("komi", 7.0)))
        root.set("RU", facts.sgf_rules)
    notes = [f"end: {rec.end}"]
    if rec.score is not None:
        notes.append(f"our score (Black's margin): {rec.score:g}")
    notes += [f"{name} final_score: {text}" for name, text in rec.engine_scores.items()]
    if rec.disagreement:
        notes.append(f"disagreement: {rec.disagreement}")
    if rec.failure:
        notes += [f"failure of {rec.failure['engine'] or 'the game'}: {rec.failure['problem']}",
                  f"command: {rec.failure['command']}", f"answer: {rec.failure['answer']}"]
    root.set("C", "\n".join(notes))
    cells = size * size
    for i, a in enumerate(rec.moves):
        node = game.extend_main_sequence()
        colour = "b" if i % 2 == 0 else "w"
        if a == cells:
            node.set_move(colour, None)
        else:
            row, col = divmod(int(a), size)
            # sgfmill counts rows from the bottom: Go's row 0 is the bottom, Othello's the top.
            node.set_move(colour, (row if facts.row0_at_bottom else size - 1 - row, col))
        if i == len(rec.opening) - 1:
            node.set("C", "end of the opening")
    return game.serialise()
