"""The generators of the evaluation datasets other than Connect Four's (F-Games, Chomp,
Hex, Othello and Go openings); the format, the names and the choices are in
``evaluation.datasets``, the Connect Four generator in ``evaluation.connect4_data``.
The cheap ones are generated on first use; the Hex sets cost solver time (every state
and every move labelled by the weak solver) and are committed, like Connect Four's.

    python -m evaluation build --game NAME [--name DATASET ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from evaluation.datasets import (DatasetError, board_meta, build_dataset, dataset_columns, dataset_meta, dataset_path,
                                 game_of, names_for_game)
from evaluation.exact import sample_random_play_states
from evaluation.labels import chomp_values, label_states
from games import Game, random_play, state_keys, take
from oracle_service.chomp_grundy import ChompTable

# The Hex builder's first limit per position (seconds) and how often an unknown one is
# asked again, each time with a 10 times larger limit (60 s, 600 s, 6000 s): the
# goal is no position over 10 minutes, so a position unknown at 6000 s is given up on.
HEX_TIME_LIMIT = 60.0
HEX_RETRIES = 2


def _fgame_moves(states) -> list[list[int]]:
    """Action sequences that reach F-Game ``states``: the path each state keeps."""
    return [p[:n].astype(int).tolist() for p, n in zip(states.path, states.length)]


def _chomp_moves(game: Game, states) -> list[list[int]]:
    """Action sequences that reach Chomp ``states``: a canonical one rebuilt from the profile."""
    cols = game.params["cols"]
    out = []
    for prof in states.profile.astype(int):
        # Bite row by row from the bottom: row r cut to prof[r] by taking (r, prof[r]).
        seq, cur = [], [cols] * len(prof)
        for r in range(len(prof) - 1, -1, -1):
            if cur[r] > prof[r]:
                seq.append(r * cols + prof[r])
                cur = [min(x, prof[r]) if k >= r else x for k, x in enumerate(cur)]
        out.append(seq)
    return out


def random_ply_move_lists(game: Game, count: int, seed: int, key=state_keys) -> list[list[int]]:
    """Move lists of ``count`` distinct live states (by ``key(states) -> list``), each the
    state at a uniformly random ply of a uniformly random game, so that late plies are
    not crowded out by early ones (``exact.sample_random_play_states`` keeps every state
    it meets instead, the F-Game protocol)."""
    rng = np.random.default_rng(seed)
    B = 256
    found: set[bytes] = set()
    out: list[list[int]] = []
    while len(out) < count:
        history = np.zeros((B, game.max_length), np.int64)
        length = np.zeros(B, np.int64)
        for ply, step in enumerate(random_play(game, game.init(B), rng, plies=game.max_length)):
            if step.moving.any():  # the last step, past the final ply, moves nothing
                history[step.moving, ply] = step.actions[step.moving]
                length += step.moving
        cut = (rng.random(B) * length).astype(np.int64)  # a live ply of each game
        picked = game.from_moves([history[i, :cut[i]].tolist() for i in range(B)])
        for i, k in enumerate(key(picked)):
            if k not in found and len(out) < count:
                found.add(k)
                out.append(history[i, :cut[i]].tolist())
    return out


def distinct_after(game: Game, plies: int, canonical=None) -> list[list[int]]:
    """Move sequences, lexicographically first per distinct position (or per class of
    ``canonical(states) -> keys``), of every live position after exactly ``plies``."""
    seqs = [[]]
    for _ in range(plies):
        state = game.from_moves(seqs) if seqs[0] else game.init(1)
        legal = game.legal(state)
        seqs = [s + [int(a)] for s, row in zip(seqs, legal) for a in np.flatnonzero(row)]
        state = game.from_moves(seqs)
        keys = canonical(state) if canonical else state_keys(state)
        live = ~game.terminal(state)
        seen, kept = set(), []
        for s, k, ok in zip(seqs, keys, live):
            if ok and k not in seen:
                seen.add(k)
                kept.append(s)
        seqs = kept
    return seqs


def build_fgame(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    states = sample_random_play_states(game, count=4096, seed=0)
    labels = label_states(game, states, game.value)
    meta = dataset_meta(name, game, 0, "4096 distinct live states from uniform random play (AVI paper F.4)")
    return dataset_columns(_fgame_moves(states), None, labels.v_star, labels.q_star), meta


def build_chomp(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    table = ChompTable(game.params["rows"], game.params["cols"])
    if name.endswith("-openings"):
        states = game.expand(game.init(1)).children
        legal = game.legal(game.init(1))[0]
        states = take(states, np.flatnonzero(legal))
        states = take(states, ~game.terminal(states))
        desc, seed = "every live position after 1 ply (play against the Grundy oracle)", None
    else:
        # Distinct profiles: a Chomp state also counts its plies, which the position ignores.
        moves = random_ply_move_lists(game, 1024, 0, key=lambda s: [p.tobytes() for p in s.profile])
        states = game.from_moves(moves)
        desc, seed = "1024 distinct live positions, each at a random ply of a uniform random game", 0
    g = table.grundy_batch(states.profile).astype(np.int16)
    labels = label_states(game, states, chomp_values(game, table))
    win = table.winning_actions_batch(states.profile)
    extra = {"profile": pa.array(states.profile.astype(np.int8).tolist(), pa.list_(pa.int8())),
             "grundy": pa.array(g, pa.int16()),
             "winning_moves": pa.array([np.flatnonzero(w).tolist() for w in win], pa.list_(pa.int16()))}
    if name.endswith("-openings"):
        moves = _chomp_moves(game, states)
    return dataset_columns(moves, None, labels.v_star, labels.q_star, extra), dataset_meta(name, game, seed, desc)


def build_openings(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    if name == "othello-openings":
        moves, desc, seed = distinct_after(game, 3), "every distinct position after 3 plies", None
    elif name == "go-openings":
        moves = [[a] for a in range(81)]
        desc, seed = "the 81 positions after the first move (pass excluded)", None
    else:
        raise DatasetError(f"no builder for {name!r}")
    return dataset_columns(moves), dataset_meta(name, game, seed, desc)


# ------------------------------------------------------------------------- Hex


def hex_rotation_classes(game: Game, plies: int) -> list[list[int]]:
    """Move lists, the lexicographically first of each class of live Hex positions after
    ``plies`` under the 180-degree rotation (which keeps each colour's goal)."""
    sym = game.symmetries()

    def canonical(state):
        obs = game.encode(state)
        return [min(bytes(o.astype(np.uint8)), bytes(sym[-1].obs(o[None])[0].astype(np.uint8))) for o in obs]

    return distinct_after(game, plies, canonical)


def hex_label_columns(game: Game, moves: list[list[int]], records: list, groups=None) -> dict:
    """The dataset columns of Hex states ``moves`` from the solver's ``records``
    (``HexSolved`` each): ``value`` +-1 for the mover, ``action_values`` +1 for every
    winning cell and -1 for every other empty one (the weak labels), ``winning_moves``;
    ``groups`` None: "all"."""
    state = game.from_moves(moves)
    legal = game.legal(state)  # [N, A]
    win = np.zeros(legal.shape, bool)
    for i, r in enumerate(records):
        win[i, list(r.winning)] = True
    q = np.where(legal, np.where(win, 1.0, -1.0), -np.inf).astype(np.float32)
    value = np.array([r.value for r in records], np.float32)
    assert (q.max(axis=1) == value).all(), "a Hex record's value disagrees with its winning cells"
    extra = {"winning_moves": pa.array([list(r.winning) for r in records], pa.list_(pa.int16()))}
    return dataset_columns(moves, groups, value, q, extra)


def solve_hex_moves(game: Game, oracle, moves: list[list[int]], log=print, chunk: int = 16):
    """(records, given up): the oracle's ``HexSolved`` of each state of ``moves``, None
    for the states it left unknown at every limit, and their move lists."""
    records: list = []
    start = time.perf_counter()
    for lo in range(0, len(moves), chunk):
        records += oracle.solve_states(game.from_moves(moves[lo:lo + chunk]), strict=False)
        log(f"[{time.perf_counter() - start:7.1f} s] {min(lo + chunk, len(moves))}/{len(moves)} solved, "
            f"{sum(r is None for r in records)} given up")
    return records, [m for m, r in zip(moves, records) if r is None]


def _read_opening_progress(progress, log) -> tuple[dict, dict]:
    """(answers so far: moves -> HexValue or None, the largest time limit each unknown one
    was asked under) from a ``balanced_hex_openings`` progress file, if there is one."""
    from oracle_service.hex_service import HexValue

    done: dict[tuple, HexValue | None] = {}
    asked_under: dict[tuple, float] = {}
    if progress is not None and Path(progress).is_file():
        for line in Path(progress).read_text().splitlines():
            item = json.loads(line)
            key = tuple(item["moves"])
            if item.get("unknown"):
                # Lines before the limit was written were all asked at 60 s.
                asked_under[key] = max(asked_under.get(key, 0.0), item.get("time_limit", 60.0))
                done.setdefault(key, None)
            else:
                done[key] = HexValue(item["value"], item["move"])
        log(f"openings: {len(done)} answers read from {progress}")
    return done, asked_under


def _append_opening_progress(progress, moves: list, answers: list, limit: float) -> None:
    """One line per answer (its moves, value and move, or unknown under ``limit``)."""
    if progress is None:
        return
    with open(progress, "a") as f:
        for m, r in zip(moves, answers):
            item = ({"moves": m, "unknown": True, "time_limit": limit} if r is None
                    else {"moves": m, "value": r.value, "move": r.move})
            f.write(json.dumps(item) + "\n")


def _hex_distance_from_centre(cell: int, size: int) -> float:
    """The hex distance of ``cell`` from the board's centre (steps (-1, 0), (-1, 1), ...).
    White's winning replies to a losing first move are central ones (16 of the first 16
    lost on 7x7 lay within two cells of the centre), while its edge replies leave Black
    won but cost the solver the most; so the central ones are asked first."""
    dr, dc = cell // size - (size - 1) / 2, cell % size - (size - 1) / 2
    return max(abs(dr), abs(dc), abs(dr + dc))


def balanced_hex_openings(game: Game, oracle, per_outcome: int, seed: int, log=print, chunk: int = 16,
                          progress: Path | None = None):
    """(move lists, records, given up, solved count): ``per_outcome`` positions won and as
    many lost for the mover, among the two-ply rotation classes taken in a seeded random
    order and solved until both are full; won and lost alternately. Value-only
    (``HexValue`` records): the openings are where play starts, and need their outcome,
    not every winning move (a proof of each move of a two-ply 7x7 position costs minutes).

    Lost positions are rare (a few percent of the classes) and costly, and a position is
    lost for Black only if Black's first move loses: every White reply to a winning first
    move leaves Black won. So once the won ones are full, the classes whose first move
    (or its rotation) already has a proved lost reply, a proof that it loses, are tried
    first, in the seeded order; positions left unknown come after those never asked, and
    White's replies nearer the centre before the others.

    ``progress``: a JSON-lines file of the answers so far (one per position: its moves,
    value and move, or ``unknown`` with the ``time_limit`` it was asked under), read first
    and appended to as batches are solved, so a stopped build (or one asking for more
    openings) goes on where it was. A position left unknown is asked again only by a
    build with a larger time limit than every earlier ask."""
    pool = hex_rotation_classes(game, 2)
    order = np.random.default_rng(seed).permutation(len(pool))
    limit = (getattr(oracle, "limits", None) or {}).get("time_limit") or 0.0
    done, asked_under = _read_opening_progress(progress, log)
    cells, size = game.num_actions, game.size

    def first_class(m):
        return min(m[0], cells - 1 - m[0])  # the first move up to the 180-degree rotation

    def off_centre(p):
        return _hex_distance_from_centre(p, size)

    def retriable(m):
        return done[tuple(m)] is None and limit > asked_under.get(tuple(m), 0.0)

    kept = {1: [], -1: []}
    given_up, solved = [], 0
    deferred: set[tuple] = set()
    # every lost answer so far, this build's or read back, proves its first move loses
    losing_first = {first_class(m) for m, r in done.items() if r is not None and r.value == -1}
    remaining = [pool[i] for i in order]
    start = time.perf_counter()
    while remaining and not all(len(v) >= per_outcome for v in kept.values()):
        if len(kept[1]) >= per_outcome:
            remaining.sort(key=lambda m: (first_class(m) not in losing_first, tuple(m) in asked_under,
                                          off_centre(m[1])))
        seeking_lost = len(kept[1]) >= per_outcome
        batch, remaining = remaining[:chunk], remaining[chunk:]
        todo = [m for m in batch if tuple(m) not in done or (seeking_lost and retriable(m))]
        if todo:
            answers = oracle.solve_states(game.from_moves(todo), strict=False, value_only=True)
            for m, r in zip(todo, answers):
                done[tuple(m)] = r
                if r is None:
                    asked_under[tuple(m)] = max(asked_under.get(tuple(m), 0.0), limit)
            _append_opening_progress(progress, todo, answers, limit)
        for m in batch:
            r = done[tuple(m)]
            if r is None and not seeking_lost and retriable(m) and tuple(m) not in deferred:
                deferred.add(tuple(m))
                remaining.append(m)  # asked again at this limit once only lost ones are sought
                continue
            solved += 1
            if r is None:
                given_up.append(m)
                continue
            if r.value == -1:
                losing_first.add(first_class(m))
            if len(kept[r.value]) < per_outcome:
                kept[r.value].append((m, r))
        log(f"[{time.perf_counter() - start:7.1f} s] openings: {solved}/{len(pool)} solved, "
            f"{len(kept[1])} won, {len(kept[-1])} lost, {len(given_up)} given up")
    if any(len(v) < per_outcome for v in kept.values()):
        raise DatasetError(f"hex-openings: only {len(kept[1])} won and {len(kept[-1])} lost two-ply positions "
                           f"among {len(pool)} ({len(given_up)} left unknown), {per_outcome} of each wanted")
    # Won and lost alternately, each in the order found: any first rows (--max-openings)
    # keep the balance.
    pairs = [pair for both in zip(kept[1], kept[-1]) for pair in both]
    return [m for m, _ in pairs], [r for _, r in pairs], given_up, solved


def build_hex(name: str, *, store="default", time_limit: float = HEX_TIME_LIMIT, retries: int = HEX_RETRIES,
              replicas: int = 0, per_outcome: int = 64, log=print, note: str | None = None) -> tuple[dict, dict]:
    """``hex-uniform`` (445 states of uniform random play, AVI paper E.3) and ``hex-openings``
    (64 won and 64 lost two-ply positions), every state and every move labelled by the
    weak solver; ``hex-random-openings``, 128 two-ply positions unlabelled (no solver).
    A position unknown at the first limit is asked again with larger ones (``HEX_RETRIES``);
    those it gives up on are logged, listed in the metadata (``gave_up``) and left out,
    and the description counts them. The store (``store``)
    keeps every exact answer, so a build run again (with other limits) solves only what
    is still unknown; ``note`` (metadata ``labelling_note``) says how the passes went.
    ``replicas`` > 0: that many oracle replicas (on an embedded Ray, or the one this
    process has) solve each batch in parallel, one core each. ``per_outcome``: the
    openings won and lost each (the paper's 64); the answers so far are kept in
    ``hex-openings.progress.jsonl`` beside the dataset (committed with it), so a build
    stopped, or run again for more, goes on where it was."""
    from evaluation.oracles import HexOracle
    from evaluation.cli import start_oracle_service

    game = game_of(name)
    if game.params["size"] != 7:
        return build_hex_board(name, game, log=log)
    if name == "hex-random-openings":
        # No solver: the match suites' starts while the labelled openings are not built.
        pool = hex_rotation_classes(game, 2)
        pick = np.random.default_rng(0).choice(len(pool), size=128, replace=False)
        desc = "128 distinct two-ply positions up to rotation, seeded sample, unlabelled"
        return dataset_columns([pool[i] for i in sorted(pick)]), dataset_meta(name, game, 0, desc)
    client, started = start_oracle_service(replicas, store) if replicas > 0 else (None, False)
    try:
        oracle = HexOracle(game, store=store, client=client, time_limit=time_limit, retries=retries)
        return _label_hex(name, game, oracle, time_limit, retries, per_outcome, log, note)
    finally:
        if client is not None:
            client.close()
        if started:
            import ray

            ray.shutdown()


# Hex at the boards built on first use (``evaluation.datasets.HEX_BUILT_SIZES``): the
# uniform states, every live position where there are few (3x3: 4,520), else a sample
# that the solver labels in seconds to a minute on two cores; and the openings, every
# two-ply class up to rotation where there are at most HEX_BOARD_OPENINGS (3x3: 36,
# 4x4: 120), else every lost one (up to half) and won ones to fill, seeded.
HEX_BOARD_UNIFORM = {3: None, 4: 4000, 5: 2000, 6: 500}  # None: every live position
HEX_BOARD_OPENINGS = 128


def every_live_position(game: Game) -> list[list[int]]:
    """Move lists, the lexicographically first of each live position, at every ply."""
    out: list[list[int]] = [[]]
    for plies in range(1, game.max_length):
        layer = distinct_after(game, plies)
        if not layer:
            break
        out += layer
    return out


def hex_phase(game: Game, plies) -> np.ndarray:
    """The phase of Hex states by the board's share filled: thirds of its cells."""
    third = np.asarray(plies) * 3 // game.num_actions
    return np.array(["opening", "midgame", "endgame"], dtype=object)[np.minimum(third, 2)]


def _board_openings(game: Game, oracle, seed: int, log) -> tuple[list, list, list, dict]:
    """(move lists, HexValue records, given up, counts): the two-ply openings of a board
    built on first use, lost and won alternately while both last."""
    pool = hex_rotation_classes(game, 2)
    order = np.random.default_rng(seed).permutation(len(pool))
    pool = [pool[i] for i in order]
    records, given_up = [], []
    for lo in range(0, len(pool), 256):
        records += oracle.solve_states(game.from_moves(pool[lo:lo + 256]), strict=False, value_only=True)
    given_up = [m for m, r in zip(pool, records) if r is None]
    won = [(m, r) for m, r in zip(pool, records) if r is not None and r.value > 0]
    lost = [(m, r) for m, r in zip(pool, records) if r is not None and r.value < 0]
    keep = HEX_BOARD_OPENINGS
    if len(won) + len(lost) > keep:
        lost = lost[:keep // 2]
        won = won[:keep - len(lost)]
    pairs = [p for both in zip(lost, won) for p in both] + lost[len(won):] + won[len(lost):]
    log(f"openings: {len(pool)} two-ply classes solved, {len(won)} won and {len(lost)} lost kept")
    return ([m for m, _ in pairs], [r for _, r in pairs], given_up,
            {"classes": len(pool), "won": len(won), "lost": len(lost)})


def build_hex_board(name: str, game: Game, *, seed: int = 0, log=print) -> tuple[dict, dict]:
    """``hex-NxN-uniform`` and ``hex-NxN-openings`` at a board built on first use (see
    HEX_BOARD_UNIFORM): as the 7x7 sets, the uniform states grouped by phase
    (:func:`hex_phase`), labelled by the weak solver in this process."""
    from evaluation.oracles import HexOracle

    kind = name.split("-", 2)[2]
    oracle = HexOracle(game, store=None, time_limit=HEX_TIME_LIMIT, retries=1)
    start = time.perf_counter()
    if kind == "uniform":
        count = HEX_BOARD_UNIFORM[game.params["size"]]
        moves = every_live_position(game) if count is None else random_ply_move_lists(game, count, seed=seed)
        records, given_up = solve_hex_moves(game, oracle, moves, log=lambda m: None, chunk=256)
        moves, records = zip(*[(m, r) for m, r in zip(moves, records) if r is not None]) if moves else ((), ())
        moves, records = list(moves), list(records)
        columns = hex_label_columns(game, moves, records, hex_phase(game, [len(m) for m in moves]))
        counts = {"states": len(moves)}
        desc = (f"every live position ({len(moves)})" if count is None else
                f"{len(moves)} distinct live states, each at a random ply of a uniform random game")
        desc += ", grouped by phase (thirds of the board filled)"
        solver = "oracle_service.hex_solver (weak: win or loss, every winning move)"
    elif kind == "openings":
        moves, records, given_up, counts = _board_openings(game, oracle, seed, log)
        extra = {"winning_move": pa.array([r.move for r in records], pa.int16())}
        columns = dataset_columns(moves, None, [r.value for r in records], None, extra)
        desc = (f"two-ply positions, one per rotation class: every one where there are at most "
                f"{HEX_BOARD_OPENINGS}, else every lost one (up to half) and won ones to fill, in a seeded order; "
                f"lost and won alternately; the value and one winning move")
        solver = "oracle_service.hex_solver (weak, value only: win or loss, one winning move)"
    else:
        raise DatasetError(f"no builder for {name!r}")
    cost = {"seconds": round(time.perf_counter() - start, 1), "unknown_answers": oracle.unknown_queries,
            "first_time_limit_s": HEX_TIME_LIMIT, "retries": 1}
    log(f"{name}: {len(moves)} states labelled, {cost}")
    meta = dataset_meta(name, game, seed, desc, labelling_cost=cost, gave_up=given_up, solver=solver,
                        **board_meta(game, **counts))
    return columns, meta


def _label_hex(name, game, oracle, time_limit, retries, per_outcome, log, note) -> tuple[dict, dict]:
    start = time.perf_counter()
    if name == "hex-uniform":
        moves = random_ply_move_lists(game, 445, seed=0)
        records, given_up = solve_hex_moves(game, oracle, moves, log)
        keep = [i for i, r in enumerate(records) if r is not None]
        solved = len(moves)
        moves, records = [moves[i] for i in keep], [records[i] for i in keep]
        desc, seed = "445 distinct live states from uniform random play", 0
    elif name == "hex-openings":
        # Beside the committed file: a build on another machine goes on from it too.
        progress = dataset_path(name).with_suffix(".progress.jsonl")
        progress.parent.mkdir(parents=True, exist_ok=True)
        moves, records, given_up, solved = balanced_hex_openings(game, oracle, per_outcome, seed=0, log=log,
                                                                 progress=progress)
        desc, seed = (f"{per_outcome} won and {per_outcome} lost positions for the mover after 2 plies, one per "
                      "rotation class, the won ones the first in a seeded order, the lost ones the first found "
                      "among the replies to first moves proved to lose (central replies first), won and lost "
                      "alternately; the value and one winning move"), 0
    else:
        raise DatasetError(f"no builder for {name!r}")
    if given_up:
        log(f"{name}: gave up on {len(given_up)} positions (unknown at every limit), left out: {given_up}")
        desc += f"; {len(given_up)} left unknown by the solver, left out (metadata gave_up)"
    cost = {"seconds": round(time.perf_counter() - start, 1), "positions_solved": solved,
            "unknown_answers": oracle.unknown_queries, "first_time_limit_s": time_limit, "retries": retries}
    log(f"{name}: {len(moves)} states labelled, {cost}")
    if name == "hex-openings":
        extra = {"winning_move": pa.array([r.move for r in records], pa.int16())}
        columns = dataset_columns(moves, None, [r.value for r in records], None, extra)
        solver = "oracle_service.hex_solver (weak, value only: win or loss, one winning move)"
    else:
        columns = hex_label_columns(game, moves, records)
        solver = "oracle_service.hex_solver (weak: win or loss, every winning move)"
    meta = dataset_meta(name, game, seed, desc, labelling_cost=cost, gave_up=given_up, labelling_note=note,
                        solver=solver)
    return columns, meta


def build_main(argv: list[str] | None = None) -> int:
    """``python -m evaluation build --game NAME [--name DATASET ...] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m evaluation build",
                                     description="Generate the fixed evaluation datasets (seeded).")
    parser.add_argument("--game", required=True, help="connect4, chomp, fgame, hex, othello or go")
    parser.add_argument("--name", nargs="*", help="only these datasets of the game")
    parser.add_argument("--out", type=Path, help="write here instead of evaluation/data or the cache")
    hexes = parser.add_argument_group("hex (the solver-labelled sets)")
    hexes.add_argument("--time-limit", type=float, default=HEX_TIME_LIMIT,
                       help=f"the first time limit per position, seconds (default {HEX_TIME_LIMIT:g})")
    hexes.add_argument("--retries", type=int, default=HEX_RETRIES,
                       help=f"how often a position left unknown is asked again, each time under a 10 times "
                            f"larger limit (default {HEX_RETRIES})")
    hexes.add_argument("--note", help="the labelling note kept in the file's metadata")
    hexes.add_argument("--per-outcome", type=int, default=64,
                       help="hex-openings: positions won and lost each (default 64, the paper's)")
    hexes.add_argument("--replicas", type=int, default=0,
                       help="oracle replicas on Ray solving each batch in parallel (default 0: this process)")
    args = parser.parse_args(argv)
    names = args.name or names_for_game(args.game)
    if not names:
        parser.error(f"no datasets for game {args.game!r}")
    if args.time_limit <= 0 or args.retries < 0 or args.replicas < 0 or args.per_outcome < 1:
        parser.error(f"--time-limit and --per-outcome must be positive, --retries and --replicas at least 0, "
                     f"got {args.time_limit:g}, {args.per_outcome}, {args.retries} and {args.replicas}")
    hex_options = {"time_limit": args.time_limit, "retries": args.retries, "note": args.note,
                   "replicas": args.replicas}
    for name in names:
        start = time.perf_counter()
        kwargs = {}
        if name == "hex-uniform":
            kwargs = hex_options
        elif name == "hex-openings":
            kwargs = {**hex_options, "per_outcome": args.per_outcome}
        try:
            path = build_dataset(name, out_dir=args.out, **kwargs)
        except DatasetError as e:
            print(f"error: {e}")
            return 2
        print(f"{name}: {path} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0
