"""The outside engines we know, by name, as command lines (Debian installs them in
/usr/games, which a login PATH has but a service's may not):

- ``gnugo``: GNU Go 3.8 (Debian ``gnugo``), ``--mode gtp --chinese-rules`` (area scoring,
  as ours) ``--positional-superko`` (our ko rule) ``--capture-all-dead`` (it captures the
  dead stones before it passes, since Tromp-Taylor counts every stone on the board; without
  it GNU Go passes with our untrained agent's dead stones standing, and the two counts
  disagree) at ``--level`` 0..10 (default 0, the fastest), the board size and komi given.
- ``gtp-rhino``: GRhino's Othello engine (Debian ``grhino`` and ``grhino-data``) at
  ``--level`` 1..5 (default 1), with its opening book off (``--book 0``) so that it plays
  the position it is given, deterministic (``--rand 0``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

SEARCH_DIRS = ("/usr/games", "/usr/local/games")


@dataclass(frozen=True)
class EngineSpec:
    name: str  # gnugo | gtp-rhino
    game: str  # the game it plays (games.make name)
    levels: tuple[int, int]  # lowest, highest
    default_level: int
    install: str  # how to install it (Debian packages)


ENGINES = {
    "gnugo": EngineSpec("gnugo", "go", (0, 10), 0, "apt-get install gnugo"),
    "gtp-rhino": EngineSpec("gtp-rhino", "othello", (1, 5), 1, "apt-get install grhino grhino-data"),
}


def find_binary(name: str) -> str | None:
    """The path of ``name`` on PATH or in /usr/games, or None."""
    found = shutil.which(name)
    if found:
        return found
    for d in SEARCH_DIRS:
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return None


def engine_argv(name: str, *, level: int | None = None, size: int = 9, komi: float = 7.0) -> list[str]:
    """The command line of engine ``name`` at ``level`` (FileNotFoundError when it is not
    installed, ValueError for a level out of its range)."""
    spec = ENGINES.get(name)
    if spec is None:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    level = spec.default_level if level is None else int(level)
    if not spec.levels[0] <= level <= spec.levels[1]:
        raise ValueError(f"{name}: level must lie in {spec.levels[0]}..{spec.levels[1]}, got {level}")
    binary = find_binary(name)
    if binary is None:
        raise FileNotFoundError(f"{name} is not installed (not on PATH nor in /usr/games): {spec.install}")
    if name == "gnugo":
        return [binary, "--mode", "gtp", "--chinese-rules", "--positional-superko", "--capture-all-dead", "--boardsize", str(size), "--komi", f"{komi:g}",
                "--level", str(level)]
    return [binary, "--level", str(level), "--book", "0", "--rand", "0"]
