"""Batched, compiled game engines behind one registry: ``games.make(name, **params)``,
each with its descriptor (``games.descriptor(name)``: ``games.descriptors.GameDescriptor``,
what the rest of the system knows about the game).

Engine modules are imported on first use; their kernels compile on first call, so
asking for one game compiles only its kernels.
"""

from __future__ import annotations

import importlib
import inspect

from games.base import (  # noqa: F401  (re-exported: the package's public API)
    Expansion,
    Game,
    IllegalMoveError,
    RandomPly,
    Symmetry,
    concat,
    one_step_q,
    put,
    random_legal_actions,
    random_play,
    repeat,
    state_keys,
    step_live,
    take,
    where,
)
from games.descriptors import GameDescriptor, GameTable, GtpFacts, resolve  # noqa: F401  (re-exported)

# name -> the module that defines the engine and its DESCRIPTOR, imported on first use.
# Lists of games drawn from the descriptors (GTP's, AZAL's labelled ones) keep this order.
BUILTIN = {
    "go": "games.go",
    "othello": "games.othello",
    "connect4": "games.connect4",
    "hex": "games.hex",
    "tictactoe": "games.tictactoe",
    "chomp": "games.chomp",
    "fgame": "games.fgame",
}
_registered: dict[str, GameDescriptor] = {}  # games added by register (tests' toy games)


def names() -> list[str]:
    return sorted({*BUILTIN, *_registered})


def register(described: GameDescriptor) -> None:
    """Add a game defined outside this package; ValueError if its name is taken."""
    if described.name in BUILTIN or described.name in _registered:
        raise ValueError(f"game {described.name!r} is already registered")
    _registered[described.name] = described


def unregister(name: str) -> None:
    """Remove a game added by :func:`register` (the built-in games stay)."""
    if name not in _registered:
        raise ValueError(f"game {name!r} was not added by games.register")
    del _registered[name]


def descriptor(game: str | Game) -> GameDescriptor:
    """The descriptor of a game, given its name or the engine itself."""
    name = game if isinstance(game, str) else game.name
    if name in _registered:
        return _registered[name]
    if name not in BUILTIN:
        raise ValueError(f"unknown game {name!r}; known games: {', '.join(names())}")
    found = getattr(importlib.import_module(BUILTIN[name]), "DESCRIPTOR", None)
    if not isinstance(found, GameDescriptor) or found.name != name:
        raise TypeError(f"{BUILTIN[name]}.DESCRIPTOR must be the GameDescriptor of {name!r}, got {found!r}")
    return found


def every_descriptor() -> list[GameDescriptor]:
    """The descriptors of the built-in games, in BUILTIN's order, then of those registered."""
    return [descriptor(name) for name in [*BUILTIN, *_registered]]


def game_class(name: str) -> type:
    return resolve(descriptor(name).engine)


def parameters(name: str) -> list[str]:
    """The keyword arguments :func:`make` takes for game ``name``."""
    return [p for p in inspect.signature(game_class(name).__init__).parameters if p != "self"]


def parse_params(pairs: list[str]) -> dict:
    """Keyword arguments of :func:`make` from a command line's ``key=value`` words:
    ``["size=5", "swap=true"]`` -> ``{"size": 5, "swap": True}`` (booleans, then ints,
    then floats, else the string); a word without ``=`` or key is a ValueError."""
    params = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"game parameter {pair!r} is not of the form key=value")
        lowered = raw.lower()
        if lowered in ("true", "false"):
            params[key] = lowered == "true"
            continue
        for cast in (int, float):
            try:
                params[key] = cast(raw)
                break
            except ValueError:
                pass
        else:
            params[key] = raw
    return params


def make(name: str, **params) -> Game:
    """The engine ``name`` built with ``params`` (see each game for its parameters)."""
    cls = game_class(name)
    accepted = parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"game {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are: {', '.join(accepted) or 'none'}")
    return cls(**params)
