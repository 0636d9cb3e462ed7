"""What the rest of the system knows about a game, declared once beside its engine.

Each engine module defines ``DESCRIPTOR``, a :class:`GameDescriptor`, and ``games``
registers it under the engine's name (``games.descriptor(name)``); a game defined
elsewhere (a test's toy game) registers its own with ``games.register``. Code outside
``games/`` asks the descriptor instead of comparing the game's name with a literal.

The descriptor is data: ``games`` imports no other package of the project (the package
graph flows one way), so the pieces that live in other packages (the oracle in
``evaluation``, the labeller in ``actors``) are named by a :data:`Ref`, ``"module:attribute"``,
imported where they are used (:func:`resolve`); a game defined in one file may give the
object itself instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Ref = str | Callable[..., Any]  # "module:attribute", or the object itself


def resolve(ref: Ref) -> Any:
    """The object ``ref`` names: ``"module:attribute"`` imported, anything else as given."""
    if not isinstance(ref, str):
        return ref
    module, sep, attribute = ref.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"a game descriptor's reference must read 'module:attribute', got {ref!r}")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class GtpFacts:
    """How the game is played over GTP (``gtp/``) and written as SGF.

    A vertex names a cell as a column letter (``letters[col]``) and the row number, row
    1 being the engine's row 0; Connect Four (``drops``) names a column and the
    row its disc falls to."""

    letters: str  # the column letters, left to right (read in any case)
    board_size: int | None = None  # the side told by ``boardsize``; None: the game's ``size`` parameter
    drops: bool = False  # a vertex is a column; a row given must be where the disc lands
    columns: Ref | None = None  # game -> (the side told by ``boardsize``, the rows of a column), for drops
    passes: bool = False  # the action ``board_size ** 2`` is ``pass`` (a player may give up a move)
    swap: bool = False  # the engine's ``swap_action`` (None without the swap rule) is ``swap``
    occupied: Ref | None = None  # (game, state, action) -> whether the action's point holds a stone
    black_margin: Ref | None = None  # (game, state) -> Black's score margin by our rules; None: unscored
    end_reason: str = "game over"  # why a finished game ended, as the referee's records say
    two_passes_end: bool = False  # two passes in a row end the game ("two passes" in the records)
    engines_skip_pass: bool = False  # its GTP engines take no ``play c pass`` (they skip the player themselves)
    engine_counts_empty: bool = False  # an engine's final score may give the empty points to the winner
    engine_params: tuple[str, ...] = ()  # the game's parameters an outside engine's command line takes
    sgf_game: int | None = None  # SGF's GM number (board replays read SGF of these games)
    sgf_records: bool = False  # the referee writes its games as SGF files
    sgf_rules: str | None = None  # SGF's RU, written with the komi (KM); None: neither is written
    row0_at_bottom: bool = False  # the engine's row 0 is the bottom row (SGF counts from the top)


@dataclass(frozen=True, eq=False)  # one per game, compared and hashed by identity (its dicts are unhashable)
class GameDescriptor:
    """Everything about a game besides its rules. Every :data:`Ref` field may be None:
    the game has no such piece, and asking for it is an error naming the game."""

    name: str  # the registry name (``games.make(name)``)
    engine: Ref  # the ``games.Game`` subclass
    # --- exact values: evaluation and AZAL's labels
    oracle: Ref | None = None  # (game, *, store, client, engine) -> evaluation.oracles.Oracle
    board_oracle: Ref | None = None  # (game, *, store) -> the oracle a board page waits on; None: ``oracle``
    oracle_service: bool = False  # its oracle asks the oracle service (a run starts it for the evaluator)
    weak_oracle: bool = False  # the oracle knows who wins, not when: labels are +-1 at any gamma
    labeller: Ref | None = None  # (game) -> an actors.labels label source (AZAL's optimal moves)
    exact_labels: Ref | None = None  # (game, gamma) -> LabelledStates built in, or None where it cannot
    # --- evaluation suites (``evaluation.suites``)
    suites: Ref | None = None  # (game) -> list[evaluation.suites.Suite]
    auto_suites: str | tuple[str, ...] | None = None  # eval_suites=auto: None nothing, "default" the
    # default suites, a tuple of suite names: those of them whose dataset files are committed
    # --- people's views
    gtp: GtpFacts | None = None  # None: not played over GTP
    grid: Ref | None = None  # (game, state) -> board.grid.Grid, the board's drawing; None: no board drawn
    replay_digits: str | None = None  # a board replay may be a string of these characters, one per action
    score_reading: Ref | None = None  # (game, score, plies) -> a person's reading of a strong oracle's score
    # --- training
    network: Mapping[str, Any] = field(default_factory=dict)  # NetworkConfig's fields of its preset network
    # The game's presets (launch.config.preset_config), as dotted config keys over the AVI
    # paper's Table 3 (the TrainConfig defaults). What an algorithm changes at this game
    # is the algorithm's (``algorithms/<algo>.py``, ``preset_by_game``).
    preset: Mapping[str, Any] = field(default_factory=dict)  # {"actors.epsilon": 0.15, ...}
    # (game_params) -> the preset's changes at that board, dotted keys over ``preset`` and
    # the network (``network.width``); None: one preset for every board.
    preset_at: Ref | None = None

    def __post_init__(self):
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"a game's name must be a nonempty identifier, got {self.name!r}")
        if self.auto_suites not in (None, "default") and not isinstance(self.auto_suites, tuple):
            raise ValueError(f"game {self.name!r}: auto_suites must be None, 'default' or a tuple of suite "
                             f"names, got {self.auto_suites!r}")
        for name in ("network", "preset"):
            object.__setattr__(self, name, dict(getattr(self, name)))  # a copy: the caller's stays its own

    def piece(self, field_name: str) -> Any:
        """The object the :data:`Ref` field ``field_name`` names; a ValueError naming the game
        and the field when the game has none."""
        ref = getattr(self, field_name)
        if ref is None:
            raise ValueError(f"game {self.name!r} has no {field_name.replace('_', ' ')} "
                             f"(its descriptor's {field_name} is None)")
        return resolve(ref)

    def needs_gtp(self) -> GtpFacts:
        """The game's GTP facts; a ValueError naming the game when it is not played over GTP."""
        if self.gtp is None:
            raise ValueError(f"game {self.name!r} is not played over GTP (its descriptor has no gtp facts)")
        return self.gtp
