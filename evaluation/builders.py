"""The generators of the cheap evaluation datasets (F-Games, Chomp, Hex, Othello and Go
openings), generated on first use; the format, the names and the choices are in
``evaluation.datasets``, the Connect Four generator in ``evaluation.connect4_data``.

    python -m evaluation build --game NAME [--name DATASET ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from evaluation.datasets import DatasetError, build_dataset, dataset_columns, dataset_meta, game_of, names_for_game
from evaluation.exact import sample_random_play_states
from evaluation.labels import chomp_values, label_states
from games import Game, random_play, state_keys, take
from oracle_service.chomp_grundy import ChompTable


def _moves_of(game: Game, states) -> list[list[int]]:
    """Action sequences that reach ``states`` (F-Games keep their path; Chomp: a
    canonical sequence rebuilt from the profile)."""
    if game.name == "fgame":
        return [p[:n].astype(int).tolist() for p, n in zip(states.path, states.length)]
    if game.name == "chomp":
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
    raise ValueError(f"no move reconstruction for {game.name}")


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
    return dataset_columns(_moves_of(game, states), None, labels.v_star, labels.q_star), meta


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
        moves = _moves_of(game, states)
    return dataset_columns(moves, None, labels.v_star, labels.q_star, extra), dataset_meta(name, game, seed, desc)


def build_openings(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    if name == "othello-openings":
        moves, desc, seed = distinct_after(game, 3), "every distinct position after 3 plies", None
    elif name == "go-openings":
        moves = [[a] for a in range(81)]
        desc, seed = "the 81 positions after the first move (pass excluded)", None
    elif name == "hex-openings":
        # No Hex solver here: the paper's 64 won / 64 lost balance cannot be made; we take
        # 128 distinct two-ply positions (up to the 180-degree rotation) at random, seeded.
        sym = game.symmetries()

        def canonical(state):
            obs = game.encode(state)
            return [min(bytes(o.astype(np.uint8)), bytes(sym[-1].obs(o[None])[0].astype(np.uint8))) for o in obs]

        pool = distinct_after(game, 2, canonical)
        pick = np.random.default_rng(0).choice(len(pool), size=128, replace=False)
        moves = [pool[i] for i in sorted(pick)]
        desc, seed = "128 distinct two-ply positions up to rotation, seeded sample, unlabelled", 0
    elif name == "hex-uniform":
        moves = random_ply_move_lists(game, 445, seed=0)
        desc, seed = "445 distinct live states from uniform random play, unlabelled", 0
    else:
        raise DatasetError(f"no builder for {name!r}")
    return dataset_columns(moves), dataset_meta(name, game, seed, desc)


def build_main(argv: list[str] | None = None) -> int:
    """``python -m evaluation build --game NAME [--name DATASET ...] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m evaluation build",
                                     description="Generate the fixed evaluation datasets (seeded).")
    parser.add_argument("--game", required=True, help="connect4, chomp, fgame, hex, othello or go")
    parser.add_argument("--name", nargs="*", help="only these datasets of the game")
    parser.add_argument("--out", type=Path, help="write here instead of evaluation/data or the cache")
    args = parser.parse_args(argv)
    names = args.name or names_for_game(args.game)
    if not names:
        parser.error(f"no datasets for game {args.game!r}")
    for name in names:
        start = time.perf_counter()
        try:
            path = build_dataset(name, out_dir=args.out)
        except DatasetError as e:
            print(f"error: {e}")
            return 2
        print(f"{name}: {path} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0
