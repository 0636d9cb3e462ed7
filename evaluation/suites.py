"""The evaluation suites of each game: which measurements exist, on which fixed set, and
which run when none are named.

A suite is one measurement on one fixed set (:func:`suites_for`):
  states  value MAE and policy regret on oracle-labelled states (by group and phase)
  play    games against the exact oracle from every opening, both sides
  traces  the agent's self-play from every opening, annotated by the oracle (AZAL)
  random  head-to-head score against a uniformly random player (games without oracle)
  h2h     head-to-head score against an opponent policy (``opponent=``)
  engine  games against an outside GTP engine (``go-gnugo``, ``othello-grhino``:
          ``evaluation.engine_suites``), at ``engine_level``

``evaluation.runner.SuiteRunner`` loads and runs them; :func:`suite_opening_moves` gives
the move lists a game suite starts from (the board's replays use them too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evaluation.datasets import (
    CHOMP_BOARDS,
    FGAME_BETA,
    FGAME_SEEDS,
    FGAME_SHAPES,
    HEX_LABELLED,
    board_name,
    board_gap,
    committed_file_present,
    load_dataset,
)
import games
from games import Game, GameTable


@dataclass(frozen=True)
class Suite:
    name: str
    kind: str  # states | play | traces | random | h2h | engine
    dataset: str | None  # a dataset name, or None for labels built in (exact_labels / starts)
    default: bool = True
    # Run by eval_suites=auto among the defaults; False for a default too slow for a
    # training run's evaluations (Hex 7x7 play: minutes of solving for a new network).
    auto: bool = True


@dataclass(frozen=True)
class GameSuites:
    """A game's suites, as SUITES keeps them."""

    suites: Callable[[Game], list[Suite]]  # (game) -> every suite of the game at its parameters
    # What eval_suites=auto runs: None nothing, "default" the default suites, a tuple of
    # suite names: those of them whose dataset files are committed.
    auto: str | tuple[str, ...] | None = None

    def __post_init__(self):
        if self.auto not in (None, "default") and not isinstance(self.auto, tuple):
            raise ValueError(f"auto suites must be None, 'default' or a tuple of suite names, got {self.auto!r}")


def has_suites(game: Game | str) -> bool:
    return SUITES.get(game) is not None


def suites_for(game: Game) -> list[Suite]:
    """Every suite of ``game`` (its entry in SUITES); those with ``default`` run when
    none are named."""
    entry = SUITES.get(game)
    if entry is None:
        raise ValueError(f"no evaluation suites for game {game.name!r} (evaluation.suites.SUITES has none for it)")
    return entry.suites(game)


def auto_suite_names(game: Game | str) -> list[str] | None | bool:
    """What ``eval_suites=auto`` runs for ``game`` (a name: its default parameters), as its
    entry's ``auto`` in SUITES says: None its default suites, a list of suite names (the
    defaults that are not all ``auto``), or False: none."""
    game = games.make(game) if isinstance(game, str) else game
    entry = SUITES.get(game)
    auto = None if entry is None else entry.auto
    if auto is None:
        return False
    every = suites_for(game)
    if auto == "default":
        defaults = [s for s in every if s.default]
        picked = [s.name for s in defaults if s.auto]
        return None if len(picked) == len(defaults) else picked or False
    # Named suites run once their files are built and committed.
    present = [s.name for s in every if s.name in auto and committed_file_present(s.name)]
    return present or False


# The games' suites (SUITES, below): (game) -> list[Suite].

def connect4_suites(game: Game) -> list[Suite]:
    # Play from every 4-ply opening, both sides, is a default: the solver's 12-ply
    # book answers its early positions in milliseconds, and the oracle's quick wins
    # keep the games short (1,136 games: about 7 min on a cold store, 1 on a warm one).
    # Traces annotate every ply of the agent's self-play, midgames past the book
    # that a new checkpoint mostly leaves unsolved (568 traces: 9 min with the store
    # warm from play); AlphaZero and AZAL runs add them (launch/config.py), as the
    # AZAL paper reports them.
    if board_gap(game):
        return []  # a board without labelled sets (a run there is refused: launch.config.check_evaluation)
    if board_name(game, "connect4-uniform") != "connect4-uniform":
        # A board whose sets are built on first use: seconds to label and to play, so the
        # traces are defaults too. The names are 7x6's with the board: connect4-5x4-play.
        at = lambda name: board_name(game, name)  # noqa: E731
        return [Suite(at("connect4-uniform"), "states", at("connect4-uniform")),
                Suite(at("connect4-eps-optimal"), "states", at("connect4-eps-optimal")),
                Suite(at("connect4-play"), "play", at("connect4-openings")),
                Suite(at("connect4-traces"), "traces", at("connect4-openings"), default=False),
                Suite(at("connect4-h2h"), "h2h", at("connect4-openings"), default=False)]
    return [Suite("connect4-uniform", "states", "connect4-uniform"),
            Suite("connect4-eps-optimal", "states", "connect4-eps-optimal"),
            Suite("connect4-play", "play", "connect4-openings"),
            Suite("connect4-traces", "traces", "connect4-openings", default=False),
            Suite("connect4-h2h", "h2h", "connect4-openings", default=False)]


def chomp_suites(game: Game) -> list[Suite]:
    # A board with datasets starts its games from its openings dataset; another from
    # every first move that does not end the game (dataset None).
    board = f"chomp-{game.params['rows']}x{game.params['cols']}"
    if (game.params["rows"], game.params["cols"]) in CHOMP_BOARDS:
        states, openings = Suite(board, "states", board), f"{board}-openings"
    else:
        states, openings = Suite(f"{board}-states", "states", None), None
    return [states, Suite(f"{board}-play", "play", openings), Suite(f"{board}-traces", "traces", openings),
            Suite(f"{board}-h2h", "h2h", openings, default=False)]


def fgame_suites(game: Game) -> list[Suite]:
    named = [f"fgame-{shape}-{game.params['seed']}" for shape, (h, b) in FGAME_SHAPES.items()
             if (h, b, FGAME_BETA) == (game.params["depth"], game.params["branching"], game.params["beta"])
             and game.params["seed"] in FGAME_SEEDS]
    states = Suite(named[0], "states", named[0]) if named else Suite("fgame-states", "states", None)
    return [states, Suite("fgame-play", "play", None),
            Suite("fgame-traces", "traces", None), Suite("fgame-h2h", "h2h", None, default=False)]


def tictactoe_suites(game: Game) -> list[Suite]:
    return [Suite("tictactoe-states", "states", None)]


def match_suites(game: Game) -> list[Suite]:
    """A game without an oracle: matches against a random player and an opponent policy,
    from its openings dataset (slow on CPUs: training's auto suites leave them out)."""
    return [Suite(f"{game.name}-random", "random", f"{game.name}-openings", auto=False),
            Suite(f"{game.name}-h2h", "h2h", f"{game.name}-openings", default=False)]


def hex_suites(game: Game) -> list[Suite]:
    if game.params["swap"] or board_gap(game):
        # No oracle with the swap rule, no labelled sets at this board: matches from every
        # first move (the opening sets are of boards without the swap rule).
        return [Suite("hex-random", "random", None, auto=False), Suite("hex-h2h", "h2h", None, default=False)]
    if game.params["size"] != 7:
        # A board whose sets are built on first use (evaluation.datasets.board_name): seconds
        # to label, seconds to play, so its play runs with training's auto suites. The names
        # are 7x7's with the board: hex-5x5-play.
        at = lambda name: board_name(game, name)  # noqa: E731
        return [Suite(at("hex-uniform"), "states", at("hex-uniform")),
                Suite(at("hex-play"), "play", at("hex-openings")),
                Suite(at("hex-random"), "random", at("hex-openings"), auto=False),
                Suite(at("hex-traces"), "traces", at("hex-openings"), default=False),
                Suite(at("hex-h2h"), "h2h", at("hex-openings"), default=False)]
    # The weak solver's labels (AVI paper E.3): value error (MAE against +-1, and the
    # sign error) and regret on the 445 uniform states, and play against the oracle
    # from the 128 two-ply openings, both sides (256 games; the error rate counts the
    # games from a won start that the agent loses). They are defaults once their files
    # are built and committed (hours of solver time: evaluation.datasets); until then
    # they run when named, and fail naming the build command. The matches start from
    # the balanced openings once they exist, else from 128 random two-ply positions.
    labelled = all(committed_file_present(n) for n in HEX_LABELLED)
    starts = "hex-openings" if labelled else "hex-random-openings"
    return [Suite("hex-uniform", "states", "hex-uniform", default=labelled),
            Suite("hex-play", "play", "hex-openings", default=labelled, auto=False),
            Suite("hex-random", "random", starts, auto=False),
            Suite("hex-traces", "traces", "hex-openings", default=False),
            Suite("hex-h2h", "h2h", starts, default=False)]


# Outside engines over GTP (installed from Debian), on the board they play.

def othello_suites(game: Game) -> list[Suite]:
    return match_suites(game) + [Suite("othello-grhino", "engine", "othello-openings", default=False)]


def go_suites(game: Game) -> list[Suite]:
    engines = [Suite("go-gnugo", "engine", "go-openings", default=False)] if game.params["size"] == 9 else []
    return match_suites(game) + engines


# Every game's suites, and which of them eval_suites=auto runs.
SUITES: GameTable[GameSuites] = GameTable("evaluation suites", {
    "connect4": GameSuites(connect4_suites, auto="default"),
    "hex": GameSuites(hex_suites, auto="default"),
    "chomp": GameSuites(chomp_suites, auto="default"),
    "fgame": GameSuites(fgame_suites, auto="default"),
    "tictactoe": GameSuites(tictactoe_suites),
    "othello": GameSuites(othello_suites),
    "go": GameSuites(go_suites),
})


def suite_opening_moves(game: Game, suite: Suite, load=load_dataset) -> list[list[int]]:
    """The move lists of a play, trace or match suite's starts, in the suite's order: its
    dataset's, else the first moves that do not end the game (as ``evaluation.runner``
    starts them). ``load(name)`` reads a dataset."""
    name = suite.dataset
    if name is None:
        exp = game.expand(game.init(1))
        return [[int(a)] for a in np.flatnonzero((exp.legal & ~exp.done)[0])]
    return [[int(a) for a in moves] for moves in load(name).moves]
