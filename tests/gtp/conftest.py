"""Fixtures of the GTP tests: the outside engines (GNU Go, gtp-rhino), tiny untrained
checkpoints, and fake engines written as shell scripts.

An engine that is not installed skips its tests with the reason on a machine without
root; as root (CI, where make test installs them from Debian: .ci/system-deps) it fails them instead, so
that CI never passes by skipping.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

import games
from gtp.engines import ENGINES, find_binary


def need_engine(name: str) -> str:
    path = find_binary(name)
    if path is None:
        install = ENGINES[name].install
        if os.geteuid() == 0:
            pytest.fail(f"{name} is not installed, and this machine runs as root (CI): make test installs it "
                        f"(.ci/system-deps; {install})")
        pytest.skip(f"{name} is not installed (not on PATH nor in /usr/games) and this is not root: {install}")
    return path


@pytest.fixture(scope="session")
def gnugo() -> str:
    return need_engine("gnugo")


@pytest.fixture(scope="session")
def rhino() -> str:
    return need_engine("gtp-rhino")


def make_checkpoint(path, name: str, **params):
    """An untrained value network of ``name`` saved as ``python -m launch`` saves one."""
    from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
    from learner.learner import Learner
    from inference.networks import NetworkConfig

    game = games.make(name, **params)
    learner = Learner(game, NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16), device="cpu")
    save_run_checkpoint(path, RunCheckpoint(counters={"updates": 0}, learner=LearnerState(learner.state_dict(), {}),
                                            actors=[], config=json.dumps({"algo": "avi", "game": name, "gamma": 1.0}),
                                            faults={}))
    return path


@pytest.fixture
def checkpoint_of(tmp_path):
    """checkpoint_of(game name, **params) -> the path of an untrained checkpoint of it."""
    return lambda name, **params: make_checkpoint(tmp_path / f"{name}.pt", name, **params)


@pytest.fixture(scope="session")
def go_checkpoint(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("gtp-ckpt") / "go.pt", "go")


FAKE = """#!/bin/sh
# A fake GTP engine: "=" to everything, and GENMOVE to genmove.
while read -r cmd rest; do
  case "$cmd" in
    genmove) GENMOVE ;;
    quit) printf '=\\n\\n'; exit 0 ;;
    *) printf '=\\n\\n' ;;
  esac
done
"""


@pytest.fixture
def fake_engine(tmp_path):
    """fake_engine(name, shell) -> the path of a script answering genmove by ``shell``."""

    def make(name: str, genmove: str) -> str:
        path = tmp_path / f"{name}.sh"
        path.write_text(FAKE.replace("GENMOVE", genmove))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path)

    return make
