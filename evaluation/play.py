"""Complete games: against an exact oracle, self-play traces, and head-to-head matches.

All games of a suite run in lockstep: each ply, every live game whose mover is player
``p`` is answered by one batched call of player ``p``'s ``choose(states) -> int64[B]``.

- :func:`play_vs_oracle` (AVI paper 4.2): the agent plays every opening from both
  sides against a perfect oracle. error rate: games whose outcome for the agent is
  worse than the opening's theoretical value for it; blunder rate: games in which
  the agent made at least one move from a won position (V* = 1) to a lost one
  (q* = -1). Also the per-move oracle-match and outcome-error rates.
- :func:`self_play_traces` (AZAL 4): the agent plays itself from each start, every ply
  annotated by the oracle (:class:`evaluation.metrics.Trace`).
- :func:`head_to_head` (AVI 4.3): mean score in [-1, 1] of A against B over every
  opening played twice with the roles exchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import games
from evaluation.metrics import Trace, trace_metrics
from games import Game, take


class Games(NamedTuple):
    outcome: np.ndarray  # float32[G], for player 0: 1 win, 0 draw, -1 loss
    actions: list  # per game, the moves played from its start


def play(game: Game, starts, players, first: np.ndarray, *, hook: Callable | None = None,
         names=("player 0", "player 1")) -> Games:
    """Play every start to the end. ``players[p](states) -> int64[B]``; ``first[G]`` is the
    player to move at each start. ``hook(rows, states, movers, actions)`` sees every ply
    before it is played (rows: game indices). An illegal move raises naming the player."""
    G = len(first)
    state = starts
    mover = np.asarray(first, np.int64).copy()
    alive = ~game.terminal(state)
    outcome = np.zeros(G, np.float32)
    history = [[] for _ in range(G)]
    while alive.any():
        rows = np.flatnonzero(alive)
        sub = take(state, rows)
        actions = np.zeros(rows.size, np.int64)
        for p in (0, 1):
            m = mover[rows] == p
            if m.any():
                chosen = np.asarray(players[p](take(sub, m)))
                game.check_actions(take(sub, m), chosen.astype(np.int64),
                                   label=lambda i, r=rows[m]: f"{int(r[i])}", what=f"{names[p]}: game")
                actions[m] = chosen
        if hook is not None:
            hook(rows, sub, mover[rows], actions)
        played = np.zeros(G, np.int64)
        played[rows] = actions
        # The players' moves were checked above, naming the player: no second check.
        state, reward, done = games.step_live(game, state, played, alive, check=False)
        for i, a in zip(rows, actions):
            history[i].append(int(a))
        ended = np.flatnonzero(done)
        outcome[ended] = np.where(mover[ended] == 0, reward[ended], -reward[ended])
        alive[ended] = False
        mover[rows] = 1 - mover[rows]
    return Games(outcome, history)


class PlayedGame(NamedTuple):
    """One game of :func:`play_vs_oracle`."""

    opening: int  # the index of its opening
    agent_first: bool
    actions: list  # the moves after the opening
    agent_outcome: float  # -1, 0 or 1 for the agent
    error: bool  # the agent gave up outcome over the game (a lower result than the opening's value)
    blunder: bool  # the agent made a move that gives up outcome
    unsettled: bool  # through a position the oracle left unknown: counted in no rate


def game_record(game: Game, opening: list[int], actions: list[int], agent_first: bool, agent_outcome: float,
                **extra) -> dict:
    """A game against the oracle as JSON-ready data (the board replays it: ``board/replay.py``):
    ``moves`` from the initial position, ``who`` played each (opening, agent, oracle),
    ``opening_plies``, ``agent_seat`` (0: the player who moves first in the game) and
    ``agent_outcome``, plus ``extra``."""
    moves = [int(a) for a in opening] + [int(a) for a in actions]
    seat = (len(opening) + (0 if agent_first else 1)) % 2
    who = ["opening" if i < len(opening) else "agent" if i % 2 == seat else "oracle" for i in range(len(moves))]
    return {"game": game.name, "params": game.params, "moves": moves, "who": who, "opening_plies": len(opening),
            "agent_seat": seat, "agent_outcome": float(agent_outcome), **extra}


def play_vs_oracle(game: Game, agent, oracle, openings, games_out: list | None = None) -> dict:
    """The agent (player 0) against ``oracle`` from every opening, agent first then oracle
    first. Returns error_rate and blunder_rate with their counts (error_games,
    blunder_games, out of games), score (mean outcome for the agent), unsettled_games
    (games through a position the oracle left unknown, a weak solver's limit: left out
    of games and of every rate, not the end of the suite), move_match_rate
    (oracle-best moves over labelled agent moves), move_error_rate (moves that give up
    outcome, q* < V*) and agent_moves. ``games_out``, when given, receives one
    :class:`PlayedGame` per game, in play order (games 0..n-1 the agent first from opening
    0..n-1, then second)."""
    n = len(np.asarray(openings[0]))
    starts = games.concat([openings, openings])
    first = np.repeat([0, 1], n)
    opening_value = oracle.values(openings)  # [n] for the mover at the opening
    theory = np.concatenate([opening_value, -opening_value])  # [2n] for the agent
    blunders = np.zeros(2 * n, np.int64)
    # Games through a position the oracle could not settle (a weak solver's limit): its
    # play there, the opening's theory or a move's verdict is not exact, so they are left
    # out of the rates and counted.
    unsettled = np.concatenate([oracle.unsettled(openings)] * 2)
    counts = {"moves": 0, "labelled": 0, "matched": 0, "outcome_errors": 0}

    def hook(rows, states, movers, actions):
        mine = movers == 0
        if (~mine).any():  # the oracle's own states, asked when it chose its move
            unsettled[rows[~mine]] |= oracle.unsettled(take(states, ~mine))
        if not mine.any():
            return
        j = oracle.judge(take(states, mine), actions[mine])
        unsettled[rows[mine]] |= ~j.known
        k = j.known
        np.add.at(blunders, rows[mine][k], ((j.value[k] > 0) & (j.q[k] < 0)).astype(np.int64))
        counts["moves"] += int(k.sum())
        counts["labelled"] += int(j.labelled[k].sum())
        counts["matched"] += int((j.best & j.labelled)[k].sum())
        counts["outcome_errors"] += int((j.q[k] < j.value[k]).sum())

    result = play(game, starts, (agent, oracle.choose), first, hook=hook, names=("agent", "oracle"))
    scored = ~unsettled
    errors = (result.outcome < theory) & scored
    blundered = (blunders > 0) & scored
    if games_out is not None:
        games_out.extend(PlayedGame(i % n, i < n, result.actions[i], float(result.outcome[i]), bool(errors[i]),
                                    bool(blundered[i]), bool(unsettled[i])) for i in range(2 * n))
    moves = max(counts["moves"], 1)
    games_scored = max(int(scored.sum()), 1)
    return {"error_rate": float(errors.sum() / games_scored), "blunder_rate": float(blundered.sum() / games_scored),
            "error_games": int(errors.sum()), "blunder_games": int(blundered.sum()),
            "score": float(result.outcome[scored].mean()) if scored.any() else float("nan"),
            "games": int(scored.sum()), "unsettled_games": int(unsettled.sum()),
            "move_match_rate": counts["matched"] / max(counts["labelled"], 1), "move_error_rate": counts["outcome_errors"] / moves,
            "agent_moves": counts["moves"]}


def self_play_traces(game: Game, agent, oracle, starts) -> list[Trace]:
    """The agent against itself from each start, every ply annotated by the oracle."""
    G = len(np.asarray(starts[0]))
    per = [{"seat": [], "labelled": [], "matched": [], "losing": []} for _ in range(G)]
    first = np.zeros(G, np.int64)

    def hook(rows, states, movers, actions):
        a = oracle.analyze(states)
        idx = np.arange(actions.size)
        losing = a.value < 0
        for j, i in enumerate(rows):
            per[i]["seat"].append(int(movers[j]))
            per[i]["labelled"].append(bool(a.labelled[j]))
            per[i]["matched"].append(bool(a.best[idx[j], actions[j]]))
            per[i]["losing"].append(bool(losing[j]))

    result = play(game, starts, (agent, agent), first, hook=hook, names=("agent", "agent"))
    out = []
    for g, rec in enumerate(per):
        winner = 0 if result.outcome[g] > 0 else 1 if result.outcome[g] < 0 else -1
        out.append(Trace(np.array(rec["seat"], np.int8), np.array(rec["labelled"], bool),
                         np.array(rec["matched"], bool), np.array(rec["losing"], bool), winner))
    return out


def trace_suite(game: Game, agent, oracle, starts) -> dict:
    return trace_metrics(self_play_traces(game, agent, oracle, starts))


def head_to_head(game: Game, a, b, openings) -> dict:
    """Score of ``a`` against ``b`` in [-1, 1]: every opening twice, ``a`` moving first in
    one game and second in the other."""
    n = len(np.asarray(openings[0]))
    result = play(game, games.concat([openings, openings]), (a, b), np.repeat([0, 1], n), names=("A", "B"))
    o = result.outcome
    return {"score": float(o.mean()), "wins": int((o > 0).sum()), "draws": int((o == 0).sum()),
            "losses": int((o < 0).sum()), "games": int(o.size)}
