"""Evaluation tests: torch on one thread (small networks on a shared 2-core machine),
and generated datasets cached in one temporary directory per session, never in the
user's cache."""

from __future__ import annotations

import os

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
