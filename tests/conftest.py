"""Shared fixtures.

- Ray is started once per test session (2 CPUs, no dashboard), in the session's temp
  dir and without token authentication, and shut down at the end.
- Torch runs on one thread in the test process: the networks are small, and on a shared
  2-core machine a second OpenMP thread mostly spins against other processes.
- Generated evaluation datasets are cached in one temporary directory per session,
  never in the user's cache (the variable is set before Ray starts, so the evaluator
  actors of training runs see it too).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def eval_cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval-cache")
    old = os.environ.get("SELFPLAY_EVAL_CACHE")
    os.environ["SELFPLAY_EVAL_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("SELFPLAY_EVAL_CACHE", None)
    else:
        os.environ["SELFPLAY_EVAL_CACHE"] = old


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory, eval_cache):
    import ray

    tmp = tmp_path_factory.mktemp("ray")
    os.environ["RAY_TMPDIR"] = str(tmp)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
