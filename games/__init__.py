"""Batched, compiled game engines behind one registry: ``games.make(name, **params)``.

Engines are imported on first use, so asking for one game compiles only its kernels.
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

# name -> "module:Class"; the module is imported when the game is first made.
REGISTRY = {
    "connect4": "games.connect4:ConnectFour",
    "tictactoe": "games.tictactoe:TicTacToe",
    "hex": "games.hex:Hex",
    "othello": "games.othello:Othello",
    "go": "games.go:Go",
    "chomp": "games.chomp:Chomp",
    "fgame": "games.fgame:FGame",
}


def names() -> list[str]:
    return sorted(REGISTRY)


def game_class(name: str) -> type:
    if name not in REGISTRY:
        raise ValueError(f"unknown game {name!r}; known games: {', '.join(names())}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


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
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"game {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are: {', '.join(accepted) or 'none'}")
    return cls(**params)
