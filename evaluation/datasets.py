"""Fixed evaluation datasets: oracle-labelled states and opening sets, as Parquet files.

This module is the format and the registry: the names, the schema, reading and writing.
The generators live in ``evaluation.builders`` (F-Games, Chomp, openings) and
``evaluation.connect4_data``; each is seeded (``python -m evaluation build --game NAME``),
so a fixed seed gives the same file. The Connect Four and Hex sets cost solver time and
are committed under ``evaluation/data/``; the cheap ones (F-Games, Chomp, Othello and
Go openings) are generated on first use into a cache directory
(``$SELFPLAY_EVAL_CACHE``, default ``~/.cache/selfplay/evaluation``).
``load_dataset(name)`` finds either.

Names (:func:`dataset_names`):
  connect4-uniform, connect4-eps-optimal   1500 labelled states each (AVI paper D.3)
  connect4-openings                        the 568 positions after 4 plies, one per mirror class
  chomp-9x10, chomp-10x11                  1024 labelled states from random legal play
  chomp-9x10-openings, ...                 every position after 1 ply (for play vs the oracle)
  fgame-{deep,balanced,wide}-{0..9}        4096 labelled states per game (AVI paper F.4)
  hex-uniform                              445 labelled states from uniform random play (AVI E.3)
  hex-openings                             128 labelled two-ply positions, 64 won / 64 lost for the mover
  hex-random-openings                      128 two-ply positions drawn at random, unlabelled (matches)
  othello-openings, go-openings            every position after 3 plies / after the first move
  hex-NxN-uniform, hex-NxN-openings        Hex at 3x3 to 6x6, built on first use (below)
  connect4-WxH-uniform, -eps-optimal,      Connect Four on boards of at most 30 cells, built on
  connect4-WxH-openings                    first use (below)

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
  score          int8, null     Pons score of the state (docs/design.md convention)
  move_scores    list<int8>     length 7, the score of each column, null for a full one
  remaining      int16, null    plies to the end under perfect play (``plies_to_end``)
Chomp and Hex add:
  winning_moves  list<int16>    the mover's winning actions (empty in a lost state)
hex-openings (value only) adds, instead:
  winning_move   int16          one winning action of the mover (-1 in a lost state)
Chomp adds:
  profile        list<int8>     row lengths, row 0 first
  grundy         int16          Grundy number (0: the mover loses); winning moves lead to g = 0
The schema metadata key ``evaluation`` holds JSON: name, game, game_params, seed,
generator parameters, description, the contents' ``version`` (``VERSIONS``) and, for
solver-labelled sets, the labelling cost.

Connect Four generation (what was chosen and why). Every live state may be labelled,
the empty board included: the solver searches down to its 12-ply book, so a state before
ply 12 takes milliseconds. (Version 1 of the two labelled sets kept only states with at
least 12 plies, since without the book a 4-ply state took about 10 s: their opening
groups held plies 12-14 only, and the epsilon-optimal games began with 12 random plies.
Version 2, the current one, has 501 uniform and 335 epsilon-optimal states before ply 12;
``load_dataset`` refuses a file of another version.)
Uniform: distinct states (up to mirror) met by uniform random play from the empty board,
shuffled and solved until each group has 250 (the shortfall, if any, is filled from the
other groups); 1500, 250 per group. Epsilon-optimal: the solver plays both sides from
the empty board, a uniformly random legal move with probability ``epsilon = 0.1`` and
otherwise a uniformly random best-score move; the visited states (distinct up to mirror)
are collected in batches of 64 games until there are 6000 (6953 here), then 250 per
group are drawn and the shortfall filled uniformly from the rest (near-optimal play
seldom ends within 14 plies of an opening: 84 easy openings, against 254 when the games
began with 12 random plies); the build's time is on docs/evaluation.md. Openings: the paper's Table 1 has "406 (after 4 plies)"; we could not find
a construction that gives 406. The 1120 distinct positions after 4 plies form 568
classes under the left-right mirror (16 are symmetric); we keep one per class (reached
by the lexicographically first move sequence), 568 openings, unlabelled. Every rule
tried, counted exactly on the solved positions (``python -m evaluation.connect4_openings``;
classes / positions): the first player, to move, wins 349 / 690, draws 101 / 200, loses
118 / 230; not won by the side that just moved 450 / 890; not decided by a forced win
within 3 plies 528 / 1042, and also not lost by the mover 410 / 812; a mistake possible
(some move changes the value) 440 / 870, and no forced win within 3 plies 403 / 798; a
unique best-score move 368 / 727; not decided within 35 plies 212 / 418; no column
with 3 stones 480 / 945; stones in 3 or more columns 426 / 840; no stone on one of its
own colour 397 / 784. Positions after 4 plies cannot hold an immediate threat (2 stones
each), so threat filters keep all 568. None gives 406, so no other opening set is offered.

Hex generation (``evaluation.builders.build_hex``, the weak solver
``oracle_service.hex_solver``): ``hex-uniform`` is 445 distinct live states, each at a
uniformly random ply of a uniformly random game (the empty board included), with V*
(+-1 for the mover) and q* (+1 for every winning cell, -1 for every other empty one);
``hex-openings`` takes the lexicographically first move list of each class of two-ply
positions under the 180-degree rotation, in a seeded random order, and solves them until
64 are won and 64 lost for the mover (Black), as the paper balances them; the rows hold
won and lost alternately, each in the seeded order, so the first N (``--max-openings``)
are a balanced random sample too. Its labels are value-only (the value and one winning
move, from one proof): play starts there and needs only the outcome, and every move of
a two-ply 7x7 position is out of the solver's reach. About one two-ply position in 12 is
lost for Black, so some 770 are solved to find 64 lost. A position the
solver leaves unknown at its time limit is asked again with a 10 times larger one, twice
by default (60 s, 600 s, 6000 s; ``--time-limit``, ``--retries``); those still unknown are
listed in the file's metadata (``gave_up``), counted in its description, and left out.

Hex at the other boards (``evaluation.builders.build_hex_board``, 3x3 to 6x6): the same
sets, built on first use into the cache and labelled by the same solver in the building
process (seconds: 6x6 takes about 25 s on one core, the others under 5 s; docs/evaluation.md).
``hex-NxN-uniform`` holds every live position where there are few (3x3: 4,520), else a
sample (4x4: 4,000, 5x5: 2,000, 6x6: 500 states, seed 0), grouped by phase (thirds of the
board filled): a weak oracle says who wins, not when, so no difficulty groups as Connect
Four's. ``hex-NxN-openings`` holds every two-ply rotation class where there are at most
128 (3x3: 36, 4x4: 120), else every lost one (up to 64) and won ones to fill 128 (5x5: 18
lost, 6x6: 36), lost and won alternately, value-only. The metadata keeps the board, the
counts, the seed, the solver, the cost and the code's commit (``board_meta``).

Connect Four at the other boards (``evaluation.connect4_data``, boards of at most 30 cells:
``CONNECT4_BUILT_CELLS``): the three sets of 7x6 built the same way, labelled by the solver
at that board searched to the end (its books are 7x6's), the groups' thresholds in thirds
of the board's cells (14 and 28 of 42), a midgame "hard" by rounding counted medium;
6,000 states up to 16 cells (4x4 has over 63,000 up to mirror), 3,000 up to 20, 600
beyond; the openings every mirror class after 4 plies.

Both 7x7 sets are committed files
once built (``python -m evaluation build --game hex``; until then ``evaluation.suites``
keeps Hex's oracle suites out of the defaults). ``hex-random-openings`` (the unlabelled
openings of the match suites while they are missing) is cheap and generated on first use.
The committed ``hex-uniform`` holds all 445 states; its metadata's ``labelling_note`` says
how the hardest were settled (the labelling's history and times: docs/oracles/hex.md). The
committed ``hex-openings`` holds the paper's 64 won and
64 lost. Lost two-ply positions are rare (the first move must lose, and then only White's
central replies win): every answer of the builds that found them (639, over three runs
and two solver versions) is kept in ``hex-openings.progress.jsonl`` beside it, from which
a build goes on instead of solving again.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import games
from evaluation.labels import LabelledStates
from games import Game

DATA_DIR = Path(__file__).resolve().parent / "data"
CACHE_ENV = "SELFPLAY_EVAL_CACHE"
GROUPS = ("easy-opening", "medium-opening", "hard-opening", "easy-midgame", "medium-midgame", "easy-endgame")
FGAME_SHAPES = {"deep": (20, 2), "balanced": (10, 5), "wide": (5, 20)}  # name: (height, branching), F.3
FGAME_BETA = 0.05
FGAME_SEEDS = range(10)
CHOMP_BOARDS = ((9, 10), (10, 11))
COMMITTED = ("connect4-uniform", "connect4-eps-optimal", "connect4-openings", "hex-uniform", "hex-openings")
HEX_LABELLED = ("hex-uniform", "hex-openings")
# The contents' version of each dataset rebuilt with other contents since its first file
# (the others are at 1, also when the file predates the key): ``load_dataset`` refuses a
# committed file and rebuilds a cached one of another version, so that a stale copy is
# never read as the current set. 2: the Connect Four states of every ply (0-11 included).
# 2 for Hex: the weak solver's labels, and the openings balanced 64 won / 64 lost (version 1
# was unlabelled, 128 two-ply positions drawn at random).
VERSIONS = {"connect4-uniform": 2, "connect4-eps-optimal": 2, "hex-uniform": 2, "hex-openings": 2}
# Who builds each dataset, by the game its name starts with: imported only to build one,
# since building needs the solver and the samplers, and reading needs neither.
BUILDERS = {"connect4": "evaluation.connect4_data:build_connect4", "chomp": "evaluation.builders:build_chomp",
            "fgame": "evaluation.builders:build_fgame", "hex": "evaluation.builders:build_hex",
            "othello": "evaluation.builders:build_openings", "go": "evaluation.builders:build_openings"}


def connect4_phase(plies, cells: int = 42) -> np.ndarray:
    """The D.3 game phase of Connect Four states from their plies played: up to a third of
    the board's ``cells`` (14 of 7x6's 42) the opening, before two thirds the midgame."""
    plies = np.asarray(plies)
    return np.where(plies <= cells // 3, "opening", np.where(plies < 2 * cells // 3, "midgame", "endgame"))


def connect4_group(plies, remaining, cells: int = 42) -> np.ndarray:
    """The D.3 group (one of ``GROUPS``) of each state from plies played and plies
    remaining under perfect play, on a board of ``cells`` (the thresholds in thirds of it)."""
    phase = connect4_phase(plies, cells)
    remaining = np.asarray(remaining)
    level = np.where(remaining < cells // 3, "easy", np.where(remaining < 2 * cells // 3, "medium", "hard"))
    # D.3 leaves out 28 played and exactly 14 to go (a full board): the endgame group.
    level = np.where(phase == "endgame", "easy", level)
    # A smaller board's thirds round down: a midgame drawn to the full board may count as
    # "hard" there (never on 7x6); it joins the medium ones, so the groups stay D.3's six.
    level = np.where((phase == "midgame") & (level == "hard"), "medium", level)
    return np.char.add(np.char.add(level.astype(str), "-"), phase.astype(str)).astype(object)


class DatasetError(ValueError):
    """A dataset that is unknown, missing or unreadable; the message names it."""


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "selfplay" / "evaluation")


# ------------------------------------------------------------ other boards
#
# Hex and Connect Four have labelled sets committed at one board each (7x7, 7x6). At
# another board whose oracle is exact and quick (``board_gap`` says which), the same
# suites read sets named for the board (``hex-5x5-uniform``, ``connect4-5x4-openings``),
# built on first use into the cache directory above, labelled by the oracle at that
# board, with their provenance in the metadata (``board_meta``). The cache is the one
# the other generated sets use: one place to clear, one variable to move it
# (``$SELFPLAY_EVAL_CACHE``), and a run's nodes reuse it as they reuse those.
HEX_BUILT_SIZES = range(3, 7)  # the weak solver proves a 6x6 state in milliseconds, 8x8 ones in minutes to hours


def _hex_gap(game: Game) -> str | None:
    size = game.params["size"]
    if size in HEX_BUILT_SIZES:
        return None
    lo, hi = HEX_BUILT_SIZES[0], HEX_BUILT_SIZES[-1]
    return (f"no labelled Hex sets at {size}x{size}: they are committed at 7x7 and built on "
            f"first use at {lo}x{lo} to {hi}x{hi} (the weak solver labels a state of those in milliseconds; larger "
            f"boards take it minutes to hours a state, smaller ones have too few)")


# Connect Four boards of at most this many cells are built on first use: the solver,
# searched to the end (the books are 7x6's), proves their empty board in under a second
# (6x5 0.6 s, 7x4 0.7 s), 7x5's in 9 s and 6x6's in 17 s, too slow for thousands of states.
CONNECT4_BUILT_CELLS = 30


def _connect4_gap(game: Game) -> str | None:
    width, height = game.width, game.height
    if width * height <= CONNECT4_BUILT_CELLS:
        return None
    return (f"no labelled Connect Four sets at {width}x{height}: they are committed at 7x6 and built on first "
            f"use on boards of at most {CONNECT4_BUILT_CELLS} cells (4x4 to 6x5, 5x6, 7x4: the solver, searched "
            f"to the end without the 7x6 books, proves their empty board in under a second; 7x5's takes it 9 s, "
            f"6x6's 17 s)")


@dataclass(frozen=True)
class BoardSets:
    """How a game with sets named by board names its board and which boards it has."""

    tag: Callable[[Game], str]  # the board's name ("5x5"; Connect Four: columns x rows)
    committed: str  # the board of the committed sets
    gap: Callable[[Game], str | None]  # (a game on another board) why it has no sets; None: built on first use


BOARD_SETS = {
    "hex": BoardSets(lambda game: f"{game.params['size']}x{game.params['size']}", "7x7", _hex_gap),
    "connect4": BoardSets(lambda game: f"{game.width}x{game.height}", "7x6", _connect4_gap),
}


def board_tag(game: Game) -> str | None:
    """The board of a game whose sets are named by board (``"5x5"``), or None for a game
    without such sets."""
    facts = BOARD_SETS.get(game.name)
    return None if facts is None else facts.tag(game)


def board_name(game: Game, name: str) -> str:
    """The name of the set or suite ``name`` (a committed board's: ``hex-uniform``) at
    ``game``'s board: ``name`` itself at the committed board, else with the board after
    the game (``hex-5x5-uniform``)."""
    tag = board_tag(game)
    if tag is None or tag == BOARD_SETS[game.name].committed:
        return name
    return f"{game.name}-{tag}-{name.removeprefix(game.name + '-')}"


def board_gap(game: Game) -> str | None:
    """Why ``game``'s labelled sets cannot be had at its board (which piece is missing and
    which boards have them); None where they can (committed, or built on first use)."""
    tag = board_tag(game)
    if tag is None or tag == BOARD_SETS[game.name].committed:
        return None
    return BOARD_SETS[game.name].gap(game)


def code_version() -> str:
    """The commit of the source tree that builds a set (``+changes`` when the tree
    differs from it), or ``unknown`` outside a git checkout: a set's provenance."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def board_meta(game: Game, **counts) -> dict:
    """The provenance of a set built at a board: its board, how many of what it holds,
    and the code that built it (seed, oracle and description are ``dataset_meta``'s)."""
    return {"board": board_tag(game), "counts": counts, "code_version": code_version(), "built_on_first_use": True}


def dataset_names() -> list[str]:
    names = list(COMMITTED)
    for r, c in CHOMP_BOARDS:
        names += [f"chomp-{r}x{c}", f"chomp-{r}x{c}-openings"]
    names += [f"fgame-{shape}-{s}" for shape in FGAME_SHAPES for s in FGAME_SEEDS]
    names += ["hex-random-openings", "othello-openings", "go-openings"]
    names += [f"hex-{n}x{n}-{kind}" for n in HEX_BUILT_SIZES for kind in ("uniform", "openings")]
    return names


# The game of each dataset whose name fixes it: (name, parameters of games.make).
_FIXED_GAMES = {**{name: ("connect4", {}) for name in COMMITTED if name.startswith("connect4-")},
                **{name: ("hex", {"size": 7}) for name in ("hex-uniform", "hex-openings", "hex-random-openings")},
                "othello-openings": ("othello", {}), "go-openings": ("go", {"size": 9})}


def _chomp_params(parts: list[str]) -> dict | None:
    """``chomp-RxC[-...]``: the board's rows and columns."""
    try:
        rows, cols = (int(x) for x in parts[1].split("x"))
    except (IndexError, ValueError):
        return None
    return {"rows": rows, "cols": cols}


def _fgame_params(parts: list[str]) -> dict | None:
    """``fgame-SHAPE-SEED``: the shape's height and branching, the seed."""
    if len(parts) != 3 or parts[1] not in FGAME_SHAPES or not parts[2].isdigit():
        return None
    depth, branching = FGAME_SHAPES[parts[1]]
    return {"depth": depth, "branching": branching, "beta": FGAME_BETA, "seed": int(parts[2])}


def _hex_params(parts: list[str]) -> dict | None:
    """``hex-NxN-...``: the board's side."""
    try:
        rows, cols = (int(x) for x in parts[1].split("x"))
    except (IndexError, ValueError):
        return None
    return {"size": rows} if rows == cols and len(parts) > 2 else None


def _connect4_params(parts: list[str]) -> dict | None:
    """``connect4-WxH-...``: the board's columns and rows."""
    try:
        width, height = (int(x) for x in parts[1].split("x"))
    except (IndexError, ValueError):
        return None
    return {"width": width, "height": height} if len(parts) > 2 else None


# Games whose dataset names carry the game's parameters, by the name's first word.
_NAMED_PARAMS = {"chomp": _chomp_params, "fgame": _fgame_params, "hex": _hex_params, "connect4": _connect4_params}


def game_of(name: str) -> Game:
    """The game a dataset name is about (raises DatasetError for unknown names)."""
    if name in _FIXED_GAMES:
        game, params = _FIXED_GAMES[name]
        return games.make(game, **params)
    first, *_ = parts = name.split("-")
    params = _NAMED_PARAMS[first](parts) if first in _NAMED_PARAMS else None
    if params is not None:
        return games.make(first, **params)
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
            # Imported here: the solver module compiles its search when imported, which
            # reading a dataset of another game should not wait for.
            from oracle_service.connect4_solver import score_to_value

            plies = self.plies
            board = {"width": self.game.width, "height": self.game.height}
            q = np.array([[-np.inf if m is None else score_to_value(m, n, gamma, **board) for m in row]
                          for row, n in zip(self.column("move_scores"), plies)], np.float32)
            return LabelledStates(self.states, q.max(axis=1), q)
        v = self.table.column("value").to_numpy().astype(np.float32)
        q = np.array([[-np.inf if x is None else x for x in row] for row in self.column("action_values")],
                     np.float32).reshape(len(v), self.game.num_actions)
        return LabelledStates(self.states, v, q)


def committed_file_present(name: str) -> bool:
    """Whether the committed dataset ``name`` has its file (the Hex sets may not, yet)."""
    return name in COMMITTED and dataset_path(name).is_file()


def dataset_version(name: str) -> int:
    """The version of dataset ``name``'s contents that this code builds and reads."""
    return VERSIONS.get(name, 1)


def dataset_meta(name: str, game: Game, seed: int | None, description: str, **extra) -> dict:
    """The ``evaluation`` metadata of a dataset file (see the schema above)."""
    return {"name": name, "game": game.name, "game_params": game.params, "seed": seed,
            "description": description, "format_version": 1, "version": dataset_version(name), **extra}


def dataset_columns(moves: list[list[int]], groups=None, value=None, action_values=None, extra=None) -> dict:
    """The common columns of the schema (name -> pyarrow array), and ``extra`` ones;
    ``groups`` None: "all"; ``value`` and ``action_values`` None: unlabelled."""
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
    gap = board_gap(game)
    if gap is not None:
        raise DatasetError(f"dataset {name!r}: {gap}")
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
    found, wanted = meta.get("version", 1), dataset_version(name)
    if found != wanted:
        if name in COMMITTED or not build:
            raise DatasetError(f"dataset {name!r}: {path} holds version {found} of its contents, this code "
                               f"reads version {wanted}; rebuild it with "
                               f"`python -m evaluation build --game {game.name}`")
        build_dataset(name, cache_dir=cache_dir)
        return load_dataset(name, cache_dir=cache_dir, build=False)
    return Dataset(name, game, table, meta, path)


def build_dataset(name: str, *, cache_dir: Path | None = None, out_dir: Path | None = None, **kwargs) -> Path:
    """Generate dataset ``name`` (seeded) and write it where ``load_dataset`` looks (or
    into ``out_dir``); ``kwargs`` go to the builder (the Connect Four one takes some)."""
    gap = board_gap(game_of(name))
    if gap is not None:
        raise DatasetError(f"dataset {name!r}: {gap}")
    module, function = BUILDERS[name.split("-")[0]].split(":")
    columns, meta = getattr(importlib.import_module(module), function)(name, **kwargs)
    path = Path(out_dir) / f"{name}.parquet" if out_dir else dataset_path(name, cache_dir)
    return write_dataset(path, columns, meta)


def names_for_game(game: str) -> list[str]:
    return [n for n in dataset_names() if n.split("-")[0] == game]


__all__ = [
    "GROUPS",
    "Dataset",
    "DatasetError",
    "build_dataset",
    "connect4_group",
    "connect4_phase",
    "dataset_columns",
    "dataset_meta",
    "dataset_names",
    "dataset_version",
    "load_dataset",
    "write_dataset",
]
