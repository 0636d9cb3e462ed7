"""Shared fixtures. Ray is started once per test session (2 CPUs, no dashboard), in the
session's temp dir and without token authentication, and shut down at the end."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory):
    import ray

    tmp = tmp_path_factory.mktemp("ray")
    os.environ["RAY_TMPDIR"] = str(tmp)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
