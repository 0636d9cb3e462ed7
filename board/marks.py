"""The oracle's view of a position and the mark of a move, by evaluation's definitions.

:func:`oracle_view` turns one ``evaluation.oracles.Analysis`` row into what the page
shows: the exact value of every legal move and the oracle-best set. :func:`mark` grades
a move played from that position, with the tests ``evaluation.play.play_vs_oracle``
counts, so that the board agrees with the metrics:

- ``blunder``: from a won position (V* = 1) to a lost one (q* = -1), the move that
  ``blunder_rate`` counts;
- ``error``: any other move that gives up outcome (q* < V*: a win thrown to a draw, a
  draw to a loss), the rest of ``move_error_rate``;
- ``inaccuracy``: keeps the outcome but is outside the oracle-best set (Connect Four: a
  slower win or a quicker loss than the best score), the moves ``move_match_rate``
  misses without an outcome error;
- ``optimal``: in the oracle-best set, or any move where the oracle has no best set
  (a lost Chomp position, where every move loses).

Connect Four values are Pons scores (docs/design.md): 0 a draw, ``22 - s`` when the mover
wins with its ``s``-th stone, the negative of the opponent's winning score on a loss.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evaluation.oracles import Analysis, Oracle
from games import GameTable

MARKS = ("optimal", "inaccuracy", "error", "blunder")


def outcome_word(q: float) -> str:
    return "win" if q > 0 else "loss" if q < 0 else "draw"


def explain_score(game, score: float, plies: int) -> str:
    """A person's reading of a move's exact value in ``game`` (an engine); ``plies``: plies
    played before it (the game's entry in SCORE_READINGS, else the outcome)."""
    reading = SCORE_READINGS.get(game)
    return outcome_word(score) if reading is None else reading(game, score, plies)


def pons_reading(game, score: float, plies: int) -> str:
    """Connect Four's reading of a Pons score on ``game``'s board: which stone of whom wins
    (a win with a player's stone k scores cells / 2 + 1 - k)."""
    s = int(score)
    if s == 0:
        return "draw"
    last = game.width * game.height // 2 + 1  # 22 on 7x6
    mover_stones = plies // 2  # stones of the mover so far (the first player moves at even plies)
    if s > 0:
        stone = last - s
        return f"win with its stone {stone} ({stone - mover_stones} more of its moves)"
    stone = last + s  # the opponent's winning stone
    opponent_stones = (plies + 1) // 2
    return f"loss: the opponent wins with its stone {stone} ({stone - opponent_stones} more of its moves)"


# The games whose strong oracle's score a person reads as more than the outcome:
# (game, score, plies) -> the reading.
SCORE_READINGS: GameTable[Callable[..., str]] = GameTable("score reading", {"connect4": pons_reading})


def oracle_view(game, oracle: Oracle, analysis: Analysis, i: int, plies: int) -> dict:
    """Row ``i`` of ``analysis`` for the page: ``value`` (V*, the mover's outcome: 1, 0,
    -1), ``moves``: per legal action its exact ``q``, its ``score`` (Connect Four: the
    Pons score; else q), whether it is ``best`` and a readable ``text``."""
    moves = {}
    for a in np.flatnonzero(np.isfinite(analysis.q[i])):
        a = int(a)
        score = float(analysis.score[i, a]) if oracle.strong else float(analysis.q[i, a])
        moves[str(a)] = {"q": float(analysis.q[i, a]), "score": int(score) if oracle.strong else score,
                         "best": bool(analysis.best[i, a]),
                         "text": explain_score(game, score, plies) if oracle.strong else outcome_word(score)}
    best_score = max((m["score"] for m in moves.values()), default=None)
    return {"value": float(analysis.value[i]), "value_text": outcome_word(float(analysis.value[i])),
            "best_score": best_score, "labelled": bool(analysis.labelled[i]), "scores": oracle.strong,
            "moves": moves}


def mark(analysis: Analysis, i: int, action: int) -> str:
    """The mark of ``action`` played in row ``i`` of ``analysis`` (see the module doc)."""
    q, v = float(analysis.q[i, action]), float(analysis.value[i])
    if v > 0 and q < 0:
        return "blunder"
    if q < v:
        return "error"
    if analysis.labelled[i] and not analysis.best[i, action]:
        return "inaccuracy"
    return "optimal"
