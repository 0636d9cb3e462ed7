"""Generation of the Connect Four evaluation sets (AVI paper D.3); see ``evaluation.datasets``
for the schema, the groups and the choices. Slow (solver time), so its output is committed.

    python -m evaluation build --game connect4
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

import games
from evaluation.builders import distinct_after
from evaluation.datasets import (GROUPS, board_meta, board_tag, connect4_group, connect4_phase, dataset_columns,
                                 dataset_meta, game_of)
from evaluation.oracles import Connect4Oracle
from games import random_play, step_live, take
from oracle_service.connect4_solver import plies_to_end
from oracle_service.store import connect4_keys

EPSILON = 0.1


def _board(game) -> dict:
    """The board's width and height as the solver's functions take them."""
    return {"width": game.width, "height": game.height}


def _remaining(scores: np.ndarray, plies: np.ndarray, board: dict) -> np.ndarray:
    return np.array([plies_to_end(int(s), int(n), **board) for s, n in zip(scores, plies)], np.int64)


def canonical_keys(state) -> np.ndarray:
    """int64[B]: one key per position and its mirror image (the store's), to count positions once."""
    return connect4_keys(state.current, state.mask)[0]


def board_keys(game, state) -> list:
    """One key per position and its mirror image on any board (the store's keys are
    7x6's): the smaller of the two encodings, as bytes."""
    if (game.num_actions, game.max_length) == (7, 42):
        return canonical_keys(state).tolist()
    obs = np.asarray(game.encode(state))
    mirrored = game.symmetries()[-1].obs(obs)
    return [min(bytes(o.astype(np.uint8)), bytes(m.astype(np.uint8))) for o, m in zip(obs, mirrored)]


def _uniform_candidates(game, count: int, rng) -> list[list[int]]:
    """Distinct (up to mirror) live states from uniform random play, the empty board
    included: every ply of each game, in the order met (the D.3 protocol), unlike the one
    random ply per game of ``evaluation.builders.random_ply_move_lists``."""
    B = 512
    seen: set = set()
    out: list[list[int]] = []
    stale, batches = 0, 0  # a small board's states are all found: batches that find none new end it
    while len(out) < count and stale < 3 and batches < 200:
        batches += 1
        found = len(out)
        hist = np.zeros((B, game.max_length), np.int64)
        for ply, step in enumerate(random_play(game, game.init(B), rng, plies=game.max_length)):
            if not step.moving.any():  # the state after the last ply: every game is over
                break
            live = step.moving
            for i, k in zip(np.flatnonzero(live), board_keys(game, take(step.state, live))):
                if k not in seen:
                    seen.add(k)
                    out.append(hist[i, :ply].tolist())
            hist[:, ply] = step.actions
        stale = stale + 1 if len(out) == found else 0
    order = rng.permutation(len(out))
    return [out[i] for i in order[:count]]


def _stratify(groups: np.ndarray, rng, total: int) -> np.ndarray:
    """Indices: up to ``total / 6`` per group at random, the shortfall filled uniformly
    from the rest."""
    chosen, per_group = [], total // len(GROUPS)
    for g in sorted(set(groups)):
        idx = np.flatnonzero(groups == g)
        chosen.extend(rng.choice(idx, size=min(per_group, idx.size), replace=False).tolist())
    rest = np.setdiff1d(np.arange(len(groups)), chosen)
    short = min(total - len(chosen), rest.size)
    if short > 0:
        chosen.extend(rng.choice(rest, size=short, replace=False).tolist())
    return np.sort(np.array(chosen, np.int64))


def _uniform(game, oracle, rng, count: int, log) -> tuple[list, np.ndarray]:
    cands = _uniform_candidates(game, 20 * count, rng)
    quota = {g: count // len(GROUPS) for g in GROUPS}
    board, cells = _board(game), game.max_length
    kept, kept_g, extra, extra_g = [], [], [], []
    for lo in range(0, len(cands), 256):
        chunk = cands[lo:lo + 256]
        plies = np.array([len(m) for m in chunk])
        # Skip candidates whose phase has all its groups full before paying for a solve.
        phase = connect4_phase(plies, cells)
        open_phase = {g.split("-")[1] for g, left in quota.items() if left > 0}
        want = np.array([p in open_phase for p in phase])
        if not want.any():
            continue
        chunk = [m for m, w in zip(chunk, want) if w]
        state = game.from_moves(chunk)
        score = oracle.solve_states(state)
        grp = connect4_group(state.moves, _remaining(score, state.moves, board), cells)
        for m, g in zip(chunk, grp):
            if quota[g] > 0:
                quota[g] -= 1
                kept.append(m)
                kept_g.append(g)
            else:
                extra.append(m)
                extra_g.append(g)
        log(f"uniform: {lo + 256}/{len(cands)} candidates, quotas left {quota}")
        if not any(quota.values()) or lo > 6 * count:
            break
    if len(kept) < count:  # rare groups: fill from the other groups' surplus
        pick = rng.choice(len(extra), size=min(count - len(kept), len(extra)), replace=False)
        kept += [extra[i] for i in pick]
    return kept, None


def _eps_optimal(game, oracle, rng, count: int, log) -> tuple[list, np.ndarray]:
    seen: set = set()
    moves, groups = [], []
    B = 64
    board, cells = _board(game), game.max_length
    while True:
        before = len(moves)
        # Every game from the empty board, the solver on both sides (D.3).
        hist = [[] for _ in range(B)]
        state = game.init(B)
        while True:
            live = ~game.terminal(state)
            if not live.any():
                break
            rows = np.flatnonzero(live)
            sub = take(state, rows)
            analysis = oracle.analyze(sub)
            top = analysis.score.max(axis=1)
            rem = _remaining(top, sub.moves, board)
            for j, (i, k) in enumerate(zip(rows, board_keys(game, sub))):
                if k not in seen:
                    seen.add(k)
                    moves.append(list(hist[i]))
                    groups.append(connect4_group(sub.moves[j:j + 1], rem[j:j + 1], cells)[0])
            explore = rng.random(rows.size) < EPSILON
            rand = games.random_legal_actions(game.legal(sub), rng)
            best = games.random_legal_actions(analysis.best, rng)
            actions = np.zeros(B, np.int64)
            actions[rows] = np.where(explore, rand, best)
            state, _, _ = step_live(game, state, actions, live, check=False)
            for i in rows:
                hist[i].append(int(actions[i]))
        counts = {g: groups.count(g) for g in sorted(set(groups))}
        log(f"eps-optimal: {len(moves)} distinct states, groups {counts}")
        # Stop once every group is full (or the rare ones clearly stay rare).
        if (len(counts) == 6 and min(counts.values()) >= count // len(GROUPS)) or len(moves) >= 4 * count \
                or len(moves) == before:  # (a small board: no state left unseen)
            break
    pick = _stratify(np.array(groups, dtype=object), rng, count)
    return [moves[i] for i in pick], None


def _labels(game, oracle, moves: list[list[int]]) -> dict:
    state = game.from_moves(moves)
    scores = oracle.child_scores(state).astype(np.int64)  # [N, 7], -128 full
    legal = scores > -128
    score = np.where(legal, scores, -1000).max(axis=1)
    remaining = _remaining(score, state.moves, _board(game))
    value = np.sign(score).astype(np.float32)
    q = np.where(legal, np.sign(scores), -np.inf).astype(np.float32)
    extra = {"score": pa.array(score.astype(np.int8), pa.int8()),
             "move_scores": pa.array([[int(s) if ok else None for s, ok in zip(r, lr)]
                                      for r, lr in zip(scores, legal)], pa.list_(pa.int8())),
             "remaining": pa.array(remaining.astype(np.int16), pa.int16())}
    return dataset_columns(moves, connect4_group(state.moves, remaining, game.max_length), value, q, extra)


# At a board other than 7x6 (built on first use, ``evaluation.datasets.board_gap`` says
# which): as many states as build in seconds to a minute on two cores, by the board's
# cells. The smallest boards' states are labelled in milliseconds, so a large share of
# them is kept (4x4 has over 63,000 up to mirror): 6,000 there, 3,000 up to 20 cells, 600
# beyond (6x5's epsilon-optimal set takes about a minute: docs/evaluation.md).
BOARD_COUNTS = ((16, 6000), (20, 3000), (30, 600))  # (at most these cells, states)


def board_count(game) -> int:
    return next(n for cells, n in BOARD_COUNTS if game.max_length <= cells)


def build_connect4(name: str, *, count: int | None = None, seed: int | None = None, log=print) -> tuple[dict, dict]:
    game = game_of(name)
    tag = board_tag(game)
    standard = tag == "7x6"
    kind = name.removeprefix("connect4-").removeprefix(f"{tag}-")
    board = {} if standard else board_meta(game)
    if kind == "openings":
        moves = distinct_after(game, 4, lambda state: board_keys(game, state))
        if standard:
            meta = dataset_meta(name, game, None, "one position per mirror class after 4 plies (568), unlabelled",
                                construction="lexicographically first move sequence per class of the 1120 distinct "
                                             "4-ply positions under the left-right mirror")
        else:
            board["counts"] = {"openings": len(moves)}
            meta = dataset_meta(name, game, None, f"one position per mirror class after 4 plies ({len(moves)}), "
                                                  f"unlabelled", **board)
        return dataset_columns(moves), meta
    count = (1500 if standard else board_count(game)) if count is None else count
    seed = {"uniform": 1, "eps-optimal": 2}[kind] if seed is None else seed
    rng = np.random.default_rng(seed)
    oracle = Connect4Oracle(game)
    start = time.perf_counter()
    pick = _uniform if kind == "uniform" else _eps_optimal
    moves, _ = pick(game, oracle, rng, count, lambda m: log(f"[{time.perf_counter() - start:7.1f} s] {m}"))
    moves.sort(key=lambda m: (len(m), m))
    cols = _labels(game, oracle, moves)
    cost = {"seconds": round(time.perf_counter() - start, 1), "solver_nodes": oracle.solver.nodes,
            "solves": oracle.solves}
    log(f"{name}: {len(moves)} states labelled, {cost}")
    if board:
        board["counts"] = {"states": len(moves), **{g: int(n) for g, n in zip(*np.unique(
            np.asarray(cols["group"].to_pylist(), dtype=object), return_counts=True))}}
    meta = dataset_meta(name, game, seed, f"{count} states stratified over the six D.3 groups"
                        + ("" if standard else " (thresholds in thirds of the board's cells; fewer where the "
                                               "board has fewer)"),
                        epsilon=EPSILON if kind == "eps-optimal" else None, per_group=count // len(GROUPS),
                        labelling_cost=cost, solver="oracle_service.connect4_solver (strong: Pons scores)"
                        + ("" if standard else f", searched to the end at {tag}"), **board)
    return cols, meta
