"""What the rest of the system knows about a game, declared once beside its engine.

Each engine module defines ``DESCRIPTOR``, a :class:`GameDescriptor`, and ``games``
registers it under the engine's name (``games.descriptor(name)``); a game defined
elsewhere (a test's toy game) registers its own with ``games.register``. Code outside
``games/`` asks the descriptor instead of comparing the game's name with a literal.

The descriptor holds the game's facts (sizes, network, presets, notation) and functions of
its own module, given as objects. It names no package above ``games`` (the package graph
flows one way, and ``tests/test_architecture.py`` refuses a string that names code to
import): a package that keeps something per game, built on the engine, keeps it in a
:class:`GameTable` of its own, keyed by the game's name, beside the code it holds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Ref = str | Callable[..., Any]  # "module:attribute", or the object itself
T = TypeVar("T")


def resolve(ref: Ref) -> Any:
    """The object ``ref`` names: ``"module:attribute"`` imported, anything else as given."""
    if not isinstance(ref, str):
        return ref
    module, sep, attribute = ref.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"a game descriptor's reference must read 'module:attribute', got {ref!r}")
    return getattr(importlib.import_module(module), attribute)


class GameTable(Generic[T]):
    """What one package keeps per game (its oracles, its drawings of boards), keyed by the
    game's name: the built-in games' entries given where the table is defined, a game
    defined elsewhere (a test's toy) adding its own with :meth:`register`. A game without
    an entry has none of the piece: :meth:`get` answers None, :meth:`need` an error naming
    the game and the piece."""

    def __init__(self, piece: str, entries: Mapping[str, T]):
        self.piece = piece  # what an entry is, as an error names it: "board drawing"
        self._builtin = dict(entries)
        self._registered: dict[str, T] = {}

    def get(self, game) -> T | None:
        """The entry of ``game`` (its name or the engine), or None where it has none."""
        name = game if isinstance(game, str) else game.name
        return self._registered.get(name, self._builtin.get(name))

    def need(self, game) -> T:
        """The entry of ``game``; a ValueError naming the game, the piece and the games
        that have one when it has none."""
        entry = self.get(game)
        if entry is None:
            name = game if isinstance(game, str) else game.name
            raise ValueError(f"game {name!r} has no {self.piece} (games with one: {', '.join(self.names()) or 'none'})")
        return entry

    def names(self) -> list[str]:
        """The games with an entry: the built-in ones in their table's order, then those registered."""
        return [*self._builtin, *(n for n in self._registered if n not in self._builtin)]

    def register(self, name: str, entry: T) -> None:
        """Add the entry of a game defined outside ``games/``; ValueError if it has one."""
        if self.get(name) is not None:
            raise ValueError(f"game {name!r} already has its {self.piece}")
        self._registered[name] = entry

    def unregister(self, name: str) -> None:
        """Remove an entry added by :meth:`register` (the built-in games' stay)."""
        if name not in self._registered:
            raise ValueError(f"game {name!r} has no {self.piece} added by register")
        del self._registered[name]


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
    """Everything about a game besides its rules that is a fact of the game itself: what
    other packages hold for it (its oracle, evaluation suites, board drawing, AZAL's label
    source) is in their own :class:`GameTable`. A :data:`Ref` field that may be None: the
    game has no such piece, and asking for it is an error naming the game."""

    name: str  # the registry name (``games.make(name)``)
    engine: Ref  # the ``games.Game`` subclass
    # --- people's views
    gtp: GtpFacts | None = None  # None: not played over GTP
    replay_digits: str | None = None  # a board replay may be a string of these characters, one per action
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
