"""Match suites against outside engines over GTP (``gtp.referee``): ``go-gnugo`` (GNU Go,
Chinese rules, komi 7) and ``othello-grhino`` (gtp-rhino), from the papers' openings
(Go: the 81 first moves, ``go-openings``; Othello: the 54 distinct positions after 3
plies, ``othello-openings``), each played twice, the agent Black in one and White in
the other.

Metrics: ``score`` in [-1, 1] (the agent's mean outcome over the games that ended),
``score_ci95`` (the half-width of its 95% Student-t interval over those games), the
counts ``wins``, ``draws``, ``losses``, ``games``, ``failures`` (games ended by the
engine's crash, hang or illegal answer: outside the score) and ``disagreements``
(games whose winner the engine's ``final_score`` names differently from our rules),
``engine_level``, and ``agent_moves``. ``tables`` games run at once, each engine in its
own process (so on ``tables`` cores); ``sgf_dir`` keeps each game's SGF and one JSON
line per game (``<suite>.jsonl``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from evaluation.metrics import mean_ci
from gtp.engines import ENGINES, engine_argv
from gtp.referee import Engine, Local, Pairing, play_games, summary
from gtp.sgf import record_sgf

# suite name -> (engine, its game)
ENGINE_SUITES = {"go-gnugo": "gnugo", "othello-grhino": "gtp-rhino"}


def engine_match(game, choose, suite: str, openings: list[list[int]], *, level: int | None = None,
                 tables: int | None = None, timeout: float = 60.0, sgf_dir=None) -> dict:
    """The agent ``choose`` against the suite's engine from every opening, both sides."""
    name = ENGINE_SUITES[suite]
    spec = ENGINES[name]
    level = spec.default_level if level is None else int(level)
    params = {"size": game.params["size"], "komi": game.params["komi"]} if game.name == "go" else {}
    engine = Engine(f"{name}-{level}", engine_argv(name, level=level, **params), timeout=timeout)
    moves = {"count": 0}

    def counted(states):
        moves["count"] += len(np.asarray(states[0]))
        return choose(states)

    agent = Local("agent", counted)
    pairings = [Pairing(tuple(o), agent, engine) for o in openings] + [Pairing(tuple(o), engine, agent)
                                                                      for o in openings]
    tables = tables or max(1, min(len(pairings), len(os.sched_getaffinity(0))))
    records = play_games(game, pairings, tables=tables)
    if sgf_dir is not None:
        sgf_dir = Path(sgf_dir)
        sgf_dir.mkdir(parents=True, exist_ok=True)
        with open(sgf_dir / f"{suite}.jsonl", "w") as f:
            for i, rec in enumerate(records):
                file = f"{suite}-{i:04d}-agent-{'black' if rec.black == 'agent' else 'white'}.sgf"
                (sgf_dir / file).write_bytes(record_sgf(rec))
                f.write(json.dumps(rec.as_dict() | {"sgf": file}) + "\n")
    counts = summary(records, "agent")
    outcomes = [r.outcome if r.black == "agent" else -r.outcome for r in records if r.outcome is not None]
    mean, half = mean_ci(outcomes) if outcomes else (float("nan"), float("nan"))
    return {"score": mean, "score_ci95": half, **counts, "engine_level": level, "agent_moves": moves["count"]}
