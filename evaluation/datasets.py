"""Fixed evaluation datasets: oracle-labelled states and opening sets, as Parquet files.

Every dataset is made by a seeded generator (``python -m evaluation build --game NAME``),
so a fixed seed gives the same file. The Connect Four sets cost solver time and are
committed under ``evaluation/data/``; the cheap ones (F-Games, Chomp, Hex, Othello and
Go openings) are generated on first use into a cache directory
(``$SELFPLAY_EVAL_CACHE``, default ``~/.cache/selfplay/evaluation``).
``load_dataset(name)`` finds either.

Names (:func:`dataset_names`):
  connect4-uniform, connect4-eps-optimal   1500 labelled states each (AVI paper D.3)
  connect4-openings                        the 568 positions after 4 plies, one per mirror class
  chomp-9x10, chomp-10x11                  1024 labelled states from random legal play
  chomp-9x10-openings, ...                 every position after 1 ply (for play vs the oracle)
  fgame-{deep,balanced,wide}-{0..9}        4096 labelled states per game (AVI paper F.4)
  hex-uniform, hex-openings                445 random-play states, 128 two-ply openings
  othello-openings, go-openings            every position after 3 plies / after the first move

Schema (one row per state; every file has the common columns):
  moves          list<int16>    actions from the initial position (``game.from_moves``)
  plies          int16          len(moves)
  group          string         stratum: the six Connect Four groups of D.3
                                (easy-opening, medium-opening, hard-opening, easy-midgame,
                                medium-midgame, easy-endgame), else "all"
  value          float32, null  V*(s) for the player to move: 1 win, 0 draw, -1 loss
  action_values  list<float32>, null   length A: q*(s, a) = r(s, a) - V*(f(s, a)) (gamma 1),
                                null items for illegal actions; null where unlabelled
Connect Four adds:
  score          int8, null     Pons score of the state (DESIGN.md convention)
  move_scores    list<int8>     length 7, the score of each column, null for a full one
  remaining      int16, null    plies to the end under perfect play (``plies_to_end``)
Chomp adds:
  profile        list<int8>     row lengths, row 0 first
  grundy         int16          Grundy number (0: the mover loses)
  winning_moves  list<int16>    actions to a Grundy-0 child (empty when g = 0)
The schema metadata key ``evaluation`` holds JSON: name, game, game_params, seed,
generator parameters, description and, for solver-labelled sets, the labelling cost.

Connect Four generation (what was chosen and why). Solving a position with few plies
takes seconds to over a minute with our solver (no opening book), so labelled states
have at least ``min_plies = 12`` plies (measured: about 0.02 s per solve there, 10 s
at 4 plies); the opening groups therefore hold plies 12-14. Uniform: distinct states
(up to mirror) met by uniform random play from the empty board, shuffled and solved
until each group has 250 (or the candidates run out; the shortfall is filled from the
other groups). Epsilon-optimal: games that start with 12 uniformly random plies, then
the solver plays both sides, a uniformly random legal move with probability
``epsilon = 0.1`` and otherwise a uniformly random best-score move; the visited states
(distinct up to mirror) are stratified the same way. Openings: the paper's Table 1 has
"406 (after 4 plies)"; we could not find a construction that gives 406. The 1120
distinct positions after 4 plies form 568 classes under the left-right mirror (16 are
symmetric); we keep one per class (reached by the lexicographically first move
sequence), 568 openings, unlabelled (a 4-ply position takes ~10 s to solve; play against
the oracle solves, and the store keeps, what it meets).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import games
from evaluation.exact import LabelledStates, _keys, sample_random_play_states
from games import Game, take

DATA_DIR = Path(__file__).resolve().parent / "data"
CACHE_ENV = "SELFPLAY_EVAL_CACHE"
GROUPS = ("easy-opening", "medium-opening", "hard-opening", "easy-midgame", "medium-midgame", "easy-endgame")
FGAME_SHAPES = {"deep": (20, 2), "balanced": (10, 5), "wide": (5, 20)}  # name: (height, branching), F.3
FGAME_BETA = 0.05
FGAME_SEEDS = range(10)
CHOMP_BOARDS = ((9, 10), (10, 11))
COMMITTED = ("connect4-uniform", "connect4-eps-optimal", "connect4-openings")


class DatasetError(ValueError):
    """A dataset that is unknown, missing or unreadable; the message names it."""


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "selfplay" / "evaluation")


def dataset_names() -> list[str]:
    names = list(COMMITTED)
    for r, c in CHOMP_BOARDS:
        names += [f"chomp-{r}x{c}", f"chomp-{r}x{c}-openings"]
    names += [f"fgame-{shape}-{s}" for shape in FGAME_SHAPES for s in FGAME_SEEDS]
    names += ["hex-uniform", "hex-openings", "othello-openings", "go-openings"]
    return names


def game_of(name: str) -> Game:
    """The game a dataset name is about (raises DatasetError for unknown names)."""
    parts = name.split("-")
    if parts[0] == "connect4" and name in COMMITTED:
        return games.make("connect4")
    if parts[0] == "chomp" and len(parts) >= 2:
        try:
            r, c = (int(x) for x in parts[1].split("x"))
        except ValueError:
            r = c = None
        if r is not None:
            return games.make("chomp", rows=r, cols=c)
    if parts[0] == "fgame" and len(parts) == 3 and parts[1] in FGAME_SHAPES and parts[2].isdigit():
        h, b = FGAME_SHAPES[parts[1]]
        return games.make("fgame", depth=h, branching=b, beta=FGAME_BETA, seed=int(parts[2]))
    if name in ("hex-uniform", "hex-openings"):
        return games.make("hex", size=7)
    if name == "othello-openings":
        return games.make("othello")
    if name == "go-openings":
        return games.make("go", size=9)
    raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(dataset_names()[:8])}, ... "
                       f"(see evaluation.datasets.dataset_names())")


# ---------------------------------------------------------------- the files


@dataclass
class Dataset:
    """A loaded dataset: its table, metadata and game, with states and labels on demand."""

    name: str
    game: Game
    table: pa.Table
    meta: dict
    path: Path
    _states: object = field(default=None, repr=False)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def moves(self) -> list[list[int]]:
        return self.table.column("moves").to_pylist()

    @property
    def states(self):
        if self._states is None:
            self._states = self.game.from_moves(self.moves)
        return self._states

    @property
    def groups(self) -> np.ndarray:
        return np.array(self.table.column("group").to_pylist(), dtype=object)

    @property
    def plies(self) -> np.ndarray:
        return self.table.column("plies").to_numpy().astype(np.int64)

    @property
    def labelled(self) -> bool:
        return self.table.column("value").null_count == 0 and self.table.column("action_values").null_count == 0

    def column(self, name: str) -> list:
        return self.table.column(name).to_pylist()

    @property
    def labels(self) -> LabelledStates | None:
        """Exact labels (gamma 1) of every state, or None for unlabelled sets."""
        return self.labels_at(1.0)

    def labels_at(self, gamma: float) -> LabelledStates | None:
        """Exact labels with discount ``gamma``: any gamma for Connect Four (its scores say
        when the game ends), only 1 for the others; None for unlabelled sets."""
        if not self.labelled:
            return None
        if gamma != 1.0:
            if "move_scores" not in self.table.column_names:
                raise DatasetError(f"dataset {self.name!r} has undiscounted labels only; "
                                   f"gamma {gamma} needs plies-to-end (Connect Four sets have them)")
            from oracle_service.connect4_solver import score_to_value

            plies = self.plies
            q = np.array([[-np.inf if m is None else score_to_value(m, n, gamma) for m in row]
                          for row, n in zip(self.column("move_scores"), plies)], np.float32)
            return LabelledStates(self.states, q.max(axis=1), q)
        v = self.table.column("value").to_numpy().astype(np.float32)
        q = np.array([[-np.inf if x is None else x for x in row] for row in self.column("action_values")],
                     np.float32).reshape(len(v), self.game.num_actions)
        return LabelledStates(self.states, v, q)


def _table(game: Game, moves: list[list[int]], groups, value=None, action_values=None, extra=None) -> dict:
    n = len(moves)
    cols = {
        "moves": pa.array(moves, pa.list_(pa.int16())),
        "plies": pa.array([len(m) for m in moves], pa.int16()),
        "group": pa.array(list(groups) if groups is not None else ["all"] * n, pa.string()),
        "value": pa.nulls(n, pa.float32()) if value is None else pa.array(np.asarray(value, np.float32)),
    }
    if action_values is None:
        cols["action_values"] = pa.nulls(n, pa.list_(pa.float32()))
    else:
        q = np.asarray(action_values, np.float32)
        cols["action_values"] = pa.array([[None if not np.isfinite(x) else float(x) for x in row] for row in q],
                                         pa.list_(pa.float32()))
    cols.update(extra or {})
    return cols


def write_dataset(path: Path, columns: dict, meta: dict) -> Path:
    """Write ``columns`` (name -> pyarrow array) and ``meta`` atomically to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(columns).replace_schema_metadata({"evaluation": json.dumps(meta, sort_keys=True)})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def dataset_path(name: str, cache_dir: Path | None = None) -> Path:
    if name in COMMITTED:
        return DATA_DIR / f"{name}.parquet"
    return Path(cache_dir or default_cache_dir()) / f"{name}.parquet"


def load_dataset(name: str, *, cache_dir: Path | None = None, build: bool = True) -> Dataset:
    """The dataset ``name``: read from ``evaluation/data`` (committed) or the cache,
    generating cheap ones on first use. Raises :class:`DatasetError` naming the dataset
    and the file when it is unknown, missing or not a readable dataset file."""
    game = game_of(name)
    path = dataset_path(name, cache_dir)
    if not path.exists():
        if name in COMMITTED or not build:
            raise DatasetError(f"dataset {name!r} is missing: no file {path}; generate it with "
                               f"`python -m evaluation build --game {game.name}`")
        build_dataset(name, cache_dir=cache_dir)
    try:
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[b"evaluation"])
    except Exception as e:  # pyarrow raises several types for damaged files
        raise DatasetError(f"dataset {name!r}: {path} is not a readable dataset Parquet file "
                           f"({type(e).__name__}: {e}); delete it and rebuild with "
                           f"`python -m evaluation build --game {game.name}`") from e
    missing = {"moves", "plies", "group", "value", "action_values"} - set(table.column_names)
    if missing or meta.get("name") != name:
        raise DatasetError(f"dataset {name!r}: {path} lacks columns {sorted(missing)} or names another "
                           f"dataset ({meta.get('name')!r}); rebuild it")
    return Dataset(name, game, table, meta, path)


# ------------------------------------------------------------ cheap builders


def _meta(name: str, game: Game, seed: int | None, description: str, **extra) -> dict:
    return {"name": name, "game": game.name, "game_params": game.params, "seed": seed,
            "description": description, "format_version": 1, **extra}


def _exact_rows(game: Game, states, v_star) -> tuple[np.ndarray, np.ndarray]:
    from evaluation.exact import label_states

    labels = label_states(game, states, v_star)
    return labels.v_star, labels.q_star


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


def _random_play_states(game: Game, count: int, seed: int, key=_keys) -> list[list[int]]:
    """Move lists of ``count`` distinct live states (by ``key(states) -> list``), each the
    state at a uniformly random ply of a uniformly random game (so late plies are not
    crowded out by early ones)."""
    rng = np.random.default_rng(seed)
    B = 256
    found: set[bytes] = set()
    out: list[list[int]] = []
    while len(out) < count:
        state = game.init(B)
        history = np.zeros((B, game.max_length), np.int64)
        length = np.zeros(B, np.int64)
        for ply in range(game.max_length):
            live = ~game.terminal(state)
            if not live.any():
                break
            actions = games.random_legal_actions(game.legal(state), rng)
            nxt, _, _ = game.step(take(state, live), actions[live], check=False)
            state = games.put(state, live, nxt)
            history[live, ply] = actions[live]
            length[live] += 1
        cut = (rng.random(B) * length).astype(np.int64)  # a live ply of each game
        picked = game.from_moves([history[i, :cut[i]].tolist() for i in range(B)])
        for i, k in enumerate(key(picked)):
            if k not in found and len(out) < count:
                found.add(k)
                out.append(history[i, :cut[i]].tolist())
    return out


def build_fgame(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    states = sample_random_play_states(game, count=4096, seed=0)
    v, q = _exact_rows(game, states, game.value)
    meta = _meta(name, game, 0, "4096 distinct live states from uniform random play (AVI paper F.4)")
    return _table(game, _moves_of(game, states), None, v, q), meta


def build_chomp(name: str) -> tuple[dict, dict]:
    from oracle_service.chomp_grundy import ChompTable

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
        moves = _random_play_states(game, 1024, 0, key=lambda s: [p.tobytes() for p in s.profile])
        states = game.from_moves(moves)
        desc, seed = "1024 distinct live positions, each at a random ply of a uniform random game", 0
    g = table.grundy_batch(states.profile).astype(np.int16)
    v, q = _exact_rows(game, states, lambda s: np.where(table.grundy_batch(s.profile) != 0, 1.0, -1.0))
    win = table.winning_actions_batch(states.profile)
    extra = {"profile": pa.array(states.profile.astype(np.int8).tolist(), pa.list_(pa.int8())),
             "grundy": pa.array(g, pa.int16()),
             "winning_moves": pa.array([np.flatnonzero(w).tolist() for w in win], pa.list_(pa.int16()))}
    if name.endswith("-openings"):
        moves = _moves_of(game, states)
    return _table(game, moves, None, v, q, extra), _meta(name, game, seed, desc)


def _distinct_after(game: Game, plies: int, canonical=None) -> list[list[int]]:
    """Move sequences, lexicographically first per distinct position (or per class of
    ``canonical(states) -> keys``), of every live position after exactly ``plies``."""
    seqs = [[]]
    for _ in range(plies):
        state = game.from_moves(seqs) if seqs[0] else game.init(1)
        legal = game.legal(state)
        seqs = [s + [int(a)] for s, row in zip(seqs, legal) for a in np.flatnonzero(row)]
        state = game.from_moves(seqs)
        keys = canonical(state) if canonical else _keys(state)
        live = ~game.terminal(state)
        seen, kept = set(), []
        for s, k, ok in zip(seqs, keys, live):
            if ok and k not in seen:
                seen.add(k)
                kept.append(s)
        seqs = kept
    return seqs


def build_openings(name: str) -> tuple[dict, dict]:
    game = game_of(name)
    if name == "othello-openings":
        moves, desc, seed = _distinct_after(game, 3), "every distinct position after 3 plies", None
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

        pool = _distinct_after(game, 2, canonical)
        pick = np.random.default_rng(0).choice(len(pool), size=128, replace=False)
        moves = [pool[i] for i in sorted(pick)]
        desc, seed = "128 distinct two-ply positions up to rotation, seeded sample, unlabelled", 0
    elif name == "hex-uniform":
        moves = _random_play_states(game, 445, seed=0)
        desc, seed = "445 distinct live states from uniform random play, unlabelled", 0
    else:
        raise DatasetError(f"no builder for {name!r}")
    return _table(game, moves, None), _meta(name, game, seed, desc)


def build_dataset(name: str, *, cache_dir: Path | None = None, out_dir: Path | None = None, **kwargs) -> Path:
    """Generate dataset ``name`` (seeded) and write it where ``load_dataset`` looks."""
    game_of(name)
    if name.startswith("fgame-"):
        cols, meta = build_fgame(name)
    elif name.startswith("chomp-"):
        cols, meta = build_chomp(name)
    elif name in COMMITTED:
        from evaluation.connect4_data import build_connect4

        cols, meta = build_connect4(name, **kwargs)
    else:
        cols, meta = build_openings(name)
    path = Path(out_dir) / f"{name}.parquet" if out_dir else dataset_path(name, cache_dir)
    return write_dataset(path, cols, meta)


def names_for_game(game: str) -> list[str]:
    return [n for n in dataset_names() if n.split("-")[0] == game]


def build_main(argv: list[str] | None = None) -> int:
    """``python -m evaluation build --game NAME [--name DATASET ...] [--out DIR]``."""
    import argparse

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


__all__ = [
    "GROUPS",
    "Dataset",
    "DatasetError",
    "build_dataset",
    "build_main",
    "dataset_names",
    "load_dataset",
    "write_dataset",
]
