"""The oracle service's configuration, validated here; ``--set oracle.KEY=VALUE``."""

from __future__ import annotations

from dataclasses import dataclass

from oracle_service.connect4_engines import ENGINES


@dataclass(frozen=True)
class OracleConfig:
    """The oracle replicas that answer AZAL's labels and the evaluator's play suites."""

    replicas: int = 1  # oracle service actors answering the queries
    store: str = ""  # the solved-position store: a path or a redis:// URL ("" = the default file)
    engine: str = "ours"  # the Connect Four oracle's engine: ours, or bitbully (the optional AGPL extra)

    def __post_init__(self):
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
