"""What evaluation reads of the config a network was trained with: the run's ``config.json``
(or the copy inside each checkpoint), as a typed record.

The whole config is ``launch.config.TrainConfig`` (read by ``launch.run_dir.read_run_config``),
but ``evaluation`` sits below ``launch`` (docs/design.md, "Layout") and the evaluate
command, the board and the reports must read runs without the launcher. They need only
the run's identity and its discount, which are top-level keys of every config ever
written, flat (before the roles owned their settings) or nested alike; the defaults are
``TrainConfig``'s (a test holds them equal), so a key missing from a hand-written config
means the same here as in the launcher."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import storage

CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class TrainedWith:
    """The settings of a training run that evaluation uses (``TrainConfig``'s fields of
    the same names)."""

    algo: str = "avi"  # a name of algorithms.names()
    game: str = "connect4"  # a name of games.names()
    game_params: dict = field(default_factory=dict)  # keyword arguments of games.make
    gamma: float = 1.0  # the discount the values were trained with (the greedy policy's)

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> "TrainedWith":
        """The record of a config's JSON object; other keys (the roles' settings, flat
        or nested) are left to the launcher. ``source`` names the file in errors."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: a config must be a JSON object, got {type(data).__name__}")
        default = cls()
        try:
            return cls(algo=str(data.get("algo", default.algo)), game=str(data.get("game", default.game)),
                       game_params=dict(data.get("game_params") or {}),
                       gamma=float(data.get("gamma", default.gamma)))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{source}: {err}") from None

    def label(self) -> str:
        """``algo game(params)``: the name reports give runs of this config."""
        params = ",".join(f"{k}={v}" for k, v in sorted(self.game_params.items()))
        return f"{self.algo} {self.game}{'(' + params + ')' if params else ''}"


def read_trained_with(run_dir) -> TrainedWith | None:
    """The record of ``run_dir``'s ``config.json`` (a path or an object store's URI);
    None when the directory has none."""
    path = storage.join(storage.location(str(run_dir)), CONFIG_FILE)
    if not storage.is_file(path):
        return None
    return TrainedWith.from_dict(json.loads(storage.read_text(path)), source=str(path))
