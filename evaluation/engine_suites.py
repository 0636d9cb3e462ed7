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
``engine_level``, ``agent_moves``, and ``margin`` with ``margin_ci95``: the agent's mean
final margin by our count (Go: area points, komi in; Othello: discs) over the games that
ended, the measure that moves while the score is still -1. ``sgf_dir`` keeps each game's SGF and one JSON
line per game (``<suite>.jsonl``).

Where the games run: ``tables`` games at once, each engine in its own process (so on
``tables`` cores), in this process; or, with ``workers`` > 1 on a running Ray, the
games split into ``workers`` Ray tasks of one CPU per table, each with its own referee,
engines and copy of the agent (built there by ``make_choose``, a picklable factory,
since a policy holding a network is not shipped), so that a cluster's nodes share a
long match. The records come back in the games' order either way, so the metrics and
files are the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import games
from evaluation.metrics import mean_ci
from gtp.engines import ENGINES, engine_argv
from gtp.referee import Engine, Local, Pairing, play_games, summary
from gtp.sgf import record_sgf

# suite name -> (engine, its game)
ENGINE_SUITES = {"go-gnugo": "gnugo", "othello-grhino": "gtp-rhino"}


def _play(game, choose, suite: str, sides: list[tuple[tuple, bool]], level: int, tables: int | None,
          timeout: float) -> tuple[list, int]:
    """The records of the games ``sides`` (opening, whether the agent is Black) against the
    suite's engine at ``level``, in order, and the agent's moves."""
    name = ENGINE_SUITES[suite]
    params = {k: game.params[k] for k in games.descriptor(game).needs_gtp().engine_params}
    engine = Engine(f"{name}-{level}", engine_argv(name, level=level, **params), timeout=timeout)
    moves = {"count": 0}

    def counted(states):
        moves["count"] += len(np.asarray(states[0]))
        return choose(states)

    agent = Local("agent", counted)
    pairings = [Pairing(o, agent, engine) if black else Pairing(o, engine, agent) for o, black in sides]
    tables = tables or max(1, min(len(pairings), len(os.sched_getaffinity(0))))
    return play_games(game, pairings, tables=tables), moves["count"]


def _play_remote(game_name: str, game_params: dict, make_choose, suite, sides, level, tables, timeout):
    return _play(games.make(game_name, **game_params), make_choose(), suite, sides, level, tables, timeout)


def engine_match(game, choose, suite: str, openings: list[list[int]], *, level: int | None = None,
                 tables: int | None = None, timeout: float = 60.0, sgf_dir=None, workers: int = 1,
                 make_choose=None) -> dict:
    """The agent ``choose`` against the suite's engine from every opening, both sides;
    with ``workers`` > 1 (and ``make_choose``, which builds ``choose`` where it runs), on
    Ray tasks of ``tables`` tables each (default 1)."""
    spec = ENGINES[ENGINE_SUITES[suite]]
    level = spec.default_level if level is None else int(level)
    sides = [(tuple(o), True) for o in openings] + [(tuple(o), False) for o in openings]
    if workers > 1:
        if make_choose is None:
            raise ValueError("engine_match: workers > 1 needs make_choose, which builds the agent in each task")
        import ray

        per_task = tables or 1
        play = ray.remote(num_cpus=per_task)(_play_remote)
        # Game i goes to task i % workers: each task gets both colours and all phases of the list.
        chunks = [sides[w::workers] for w in range(min(workers, len(sides)))]
        results = ray.get([play.remote(game.name, dict(game.params), make_choose, suite, chunk, level, per_task,
                                       timeout) for chunk in chunks])
        records = [None] * len(sides)
        for w, (recs, _) in enumerate(results):
            records[w::len(chunks)] = recs
        agent_moves = sum(n for _, n in results)
    else:
        records, agent_moves = _play(game, choose, suite, sides, level, tables, timeout)
    if sgf_dir is not None:
        sgf_dir = Path(sgf_dir)
        sgf_dir.mkdir(parents=True, exist_ok=True)
        with open(sgf_dir / f"{suite}.jsonl", "w") as f:
            for i, rec in enumerate(records):
                file = f"{suite}-{i:04d}-agent-{'black' if rec.black == 'agent' else 'white'}.sgf"
                (sgf_dir / file).write_bytes(record_sgf(rec))
                f.write(json.dumps(rec.as_dict() | {"sgf": file}) + "\n")
    counts = summary(records, "agent")
    # Each ended game from the agent's side: its outcome, and its final margin (Go: area
    # points with komi; Othello: discs), which climbs while an early agent still loses
    # every game, where the score stays at -1.
    ended = [(r, 1 if r.black == "agent" else -1) for r in records if r.outcome is not None]
    mean, half = _mean_ci([side * r.outcome for r, side in ended])
    margin, margin_half = _mean_ci([side * r.score for r, side in ended if r.score is not None])
    return {"score": mean, "score_ci95": half, "margin": margin, "margin_ci95": margin_half, **counts,
            "engine_level": level, "agent_moves": agent_moves}


def _mean_ci(values: list) -> tuple[float, float]:
    """The mean and 95% half-width of ``values``; NaN for both when there are none."""
    return mean_ci(values) if values else (float("nan"), float("nan"))
