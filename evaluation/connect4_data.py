"""Generation of the Connect Four evaluation sets (AVI paper D.3); see ``evaluation.datasets``
for the schema and the choices. Slow (solver time), so its output is committed.

    python -m evaluation build --game connect4
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

import games
from evaluation.oracles import Connect4Oracle
from games import take

MIN_PLIES = 12
EPSILON = 0.1
PER_GROUP = 250


def group_of(plies: np.ndarray, remaining: np.ndarray) -> np.ndarray:
    """The D.3 group of each state from plies played and plies remaining under perfect play."""
    plies, remaining = np.asarray(plies), np.asarray(remaining)
    phase = np.where(plies <= 14, "opening", np.where(plies < 28, "midgame", "endgame"))
    level = np.where(remaining < 14, "easy", np.where(remaining < 28, "medium", "hard"))
    # D.3 leaves out 28 played and exactly 14 to go (a full board): the endgame group.
    level = np.where(phase == "endgame", "easy", level)
    return np.char.add(np.char.add(level.astype(str), "-"), phase.astype(str)).astype(object)


def _remaining(scores: np.ndarray, plies: np.ndarray) -> np.ndarray:
    from oracle_service.connect4_solver import plies_to_end

    return np.array([plies_to_end(int(s), int(n)) for s, n in zip(scores, plies)], np.int64)


def _canonical(state) -> np.ndarray:
    from oracle_service.store import connect4_keys

    return connect4_keys(state.current, state.mask)[0]


def _uniform_candidates(game, count: int, rng) -> list[list[int]]:
    """Distinct (up to mirror) live states with >= MIN_PLIES plies from uniform random play."""
    B = 512
    seen: set[int] = set()
    out: list[list[int]] = []
    while len(out) < count:
        state, hist = game.init(B), np.zeros((B, 42), np.int64)
        for ply in range(42):
            live = ~game.terminal(state)
            if not live.any():
                break
            if ply >= MIN_PLIES:
                for i, k in zip(np.flatnonzero(live), _canonical(take(state, live)).tolist()):
                    if k not in seen:
                        seen.add(k)
                        out.append(hist[i, :ply].tolist())
            actions = games.random_legal_actions(game.legal(state), rng)
            nxt, _, _ = game.step(take(state, live), actions[live], check=False)
            state = games.put(state, live, nxt)
            hist[:, ply] = actions
    order = rng.permutation(len(out))
    return [out[i] for i in order[:count]]


def _stratify(groups: np.ndarray, rng, total: int) -> np.ndarray:
    """Indices: up to PER_GROUP per group at random, the shortfall filled uniformly
    from the rest."""
    chosen = []
    for g in sorted(set(groups)):
        idx = np.flatnonzero(groups == g)
        chosen.extend(rng.choice(idx, size=min(PER_GROUP, idx.size), replace=False).tolist())
    rest = np.setdiff1d(np.arange(len(groups)), chosen)
    short = min(total - len(chosen), rest.size)
    if short > 0:
        chosen.extend(rng.choice(rest, size=short, replace=False).tolist())
    return np.sort(np.array(chosen, np.int64))


def _uniform(game, oracle, rng, count: int, log) -> tuple[list, np.ndarray]:
    cands = _uniform_candidates(game, 20 * count, rng)
    quota = {g: PER_GROUP for g in ("easy-opening", "medium-opening", "hard-opening", "easy-midgame",
                                    "medium-midgame", "easy-endgame")}
    kept, kept_g, extra, extra_g = [], [], [], []
    for lo in range(0, len(cands), 256):
        chunk = cands[lo:lo + 256]
        plies = np.array([len(m) for m in chunk])
        # Skip candidates whose phase has all its groups full before paying for a solve.
        phase = np.where(plies <= 14, "opening", np.where(plies < 28, "midgame", "endgame"))
        open_phase = {g.split("-")[1] for g, left in quota.items() if left > 0}
        want = np.array([p in open_phase for p in phase])
        if not want.any():
            continue
        chunk = [m for m, w in zip(chunk, want) if w]
        state = game.from_moves(chunk)
        score = oracle.solve_states(state)
        grp = group_of(state.moves, _remaining(score, state.moves))
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
    seen: set[int] = set()
    moves, groups = [], []
    B = 64
    while True:
        # Random prefixes of MIN_PLIES plies that leave the game running.
        state, hist = game.init(B), [[] for _ in range(B)]
        for _ in range(MIN_PLIES):
            live = ~game.terminal(state)
            actions = games.random_legal_actions(game.legal(state), rng)
            nxt, _, _ = game.step(take(state, live), actions[live], check=False)
            state = games.put(state, live, nxt)
            for i in np.flatnonzero(live):
                hist[i].append(int(actions[i]))
        while True:
            live = ~game.terminal(state)
            if not live.any():
                break
            rows = np.flatnonzero(live)
            sub = take(state, rows)
            analysis = oracle.analyze(sub)
            top = analysis.score.max(axis=1)
            rem = _remaining(top, sub.moves)
            for j, (i, k) in enumerate(zip(rows, _canonical(sub).tolist())):
                if k not in seen:
                    seen.add(k)
                    moves.append(list(hist[i]))
                    groups.append(group_of(sub.moves[j:j + 1], rem[j:j + 1])[0])
            explore = rng.random(rows.size) < EPSILON
            rand = games.random_legal_actions(game.legal(sub), rng)
            best = games.random_legal_actions(analysis.best, rng)
            actions = np.zeros(B, np.int64)
            actions[rows] = np.where(explore, rand, best)
            nxt, _, _ = game.step(sub, actions[rows], check=False)
            state = games.put(state, live, nxt)
            for i in rows:
                hist[i].append(int(actions[i]))
        counts = {g: groups.count(g) for g in sorted(set(groups))}
        log(f"eps-optimal: {len(moves)} distinct states, groups {counts}")
        # Stop once every group is full (or the rare ones clearly stay rare).
        if (len(counts) == 6 and min(counts.values()) >= PER_GROUP) or len(moves) >= 4 * count:
            break
    pick = _stratify(np.array(groups, dtype=object), rng, count)
    return [moves[i] for i in pick], None


def _labels(game, oracle, moves: list[list[int]]) -> dict:
    from evaluation.datasets import _table

    state = game.from_moves(moves)
    scores = oracle.child_scores(state).astype(np.int64)  # [N, 7], -128 full
    legal = scores > -128
    score = np.where(legal, scores, -1000).max(axis=1)
    remaining = _remaining(score, state.moves)
    value = np.sign(score).astype(np.float32)
    q = np.where(legal, np.sign(scores), -np.inf).astype(np.float32)
    extra = {"score": pa.array(score.astype(np.int8), pa.int8()),
             "move_scores": pa.array([[int(s) if ok else None for s, ok in zip(r, lr)]
                                      for r, lr in zip(scores, legal)], pa.list_(pa.int8())),
             "remaining": pa.array(remaining.astype(np.int16), pa.int16())}
    return _table(game, moves, group_of(state.moves, remaining), value, q, extra)


def build_connect4(name: str, *, count: int = 1500, seed: int | None = None, log=print) -> tuple[dict, dict]:
    from evaluation.datasets import _distinct_after, _meta, _table

    game = games.make("connect4")
    if name == "connect4-openings":
        moves = _distinct_after(game, 4, _canonical)
        meta = _meta(name, game, None, "one position per mirror class after 4 plies (568), unlabelled",
                     construction="lexicographically first move sequence per class of the 1120 distinct "
                                  "4-ply positions under the left-right mirror")
        return _table(game, moves, None), meta
    seed = {"connect4-uniform": 1, "connect4-eps-optimal": 2}[name] if seed is None else seed
    rng = np.random.default_rng(seed)
    oracle = Connect4Oracle(game)
    start = time.perf_counter()
    pick = _uniform if name == "connect4-uniform" else _eps_optimal
    moves, _ = pick(game, oracle, rng, count, lambda m: log(f"[{time.perf_counter() - start:7.1f} s] {m}"))
    moves.sort(key=lambda m: (len(m), m))
    cols = _labels(game, oracle, moves)
    cost = {"seconds": round(time.perf_counter() - start, 1), "solver_nodes": oracle.solver.nodes,
            "solves": oracle.solves}
    log(f"{name}: {len(moves)} states labelled, {cost}")
    meta = _meta(name, game, seed, f"{count} states stratified over the six D.3 groups",
                 min_plies=MIN_PLIES, epsilon=EPSILON if name.endswith("eps-optimal") else None,
                 per_group=PER_GROUP, labelling_cost=cost)
    return cols, meta
