"""The game a run plays and the network it trains for it, as one record: what each of the
run's Ray workers (self-play actor, inference server, learner, evaluator) is built from,
beside its role's config.

It lives in ``inference``, beside ``NetworkConfig``, because that is the lowest package every
worker imports (the learner's, ``learner/actor.py``, among them; docs/design.md "Layout"). A run builds it once from its config
(``launch.config.TrainConfig.game_network``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import games
from inference.networks import NetworkConfig


@dataclass(frozen=True, kw_only=True)
class GameNetwork:
    """A game by name and parameters, and the architecture of its network (no weights:
    those travel apart, as versioned object references)."""

    game: str  # a name of games.names()
    game_params: dict = field(default_factory=dict)  # keyword arguments of games.make
    network: NetworkConfig

    def __post_init__(self):
        if not isinstance(self.network, NetworkConfig):
            raise TypeError(f"GameNetwork.network must be a NetworkConfig, got {type(self.network).__name__}")
        # A copy: the caller's dict changing later does not change the record.
        object.__setattr__(self, "game_params", dict(self.game_params))

    def make_game(self) -> games.Game:
        """A new game engine; an unknown game or parameter raises ``games.make``'s
        ``ValueError``, which lists what exists."""
        return games.make(self.game, **self.game_params)
