"""The run directory: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``replay/``
snapshots and ``plots/``. A new run gets a fresh directory with its resolved config; a
resumed run keeps the config it was started with."""

from __future__ import annotations

import json
import time
from pathlib import Path

from launch.config import ConfigError, TrainConfig

SUBDIRECTORIES = ("checkpoints", "replay", "plots")


def resumed_config(run_dir, *, algo: str | None = None, game: str | None = None,
                   game_params: dict | None = None) -> TrainConfig:
    """The config of the run in ``run_dir``, which must train ``algo`` on ``game`` with
    ``game_params`` where they are given."""
    saved_path = Path(run_dir) / "config.json"
    if not saved_path.exists():
        raise ConfigError(f"--resume {run_dir}: no config.json there, not a run directory")
    saved = TrainConfig.from_dict(json.loads(saved_path.read_text()))
    wanted = (algo or saved.algo, game or saved.game, saved.game_params if game_params is None else game_params)
    if (saved.algo, saved.game, saved.game_params) != wanted:
        raise ConfigError(f"--resume {run_dir}: that run trains {saved.algo} on {saved.game} "
                          f"{saved.game_params or ''}, "
                          f"not {wanted[0]} on {wanted[1]} {wanted[2] or ''}")
    return saved


def new_run_dir(config: TrainConfig, run_dir=None) -> Path:
    """A fresh run directory holding ``config.json`` (by default under ``runs/``, named by
    algorithm, game, time and seed); one that already holds a run is refused."""
    if run_dir is None:
        run_dir = Path("runs") / f"{config.algo}-{config.game}-{time.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    run_dir = Path(run_dir)
    if (run_dir / "config.json").exists():
        raise ConfigError(f"--run-dir {run_dir} already holds a run; use --resume {run_dir} to continue it")
    for name in SUBDIRECTORIES:
        (run_dir / name).mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(config.to_json())
    return run_dir


def prepare_run_dir(config: TrainConfig, run_dir, resume) -> tuple[TrainConfig, Path]:
    """The config to run and its directory: ``resume``'s own config (of the same algorithm
    and game as ``config``), or ``config`` in a new directory."""
    if resume is not None:
        return resumed_config(resume, algo=config.algo, game=config.game, game_params=config.game_params), Path(resume)
    return config, new_run_dir(config, run_dir)
