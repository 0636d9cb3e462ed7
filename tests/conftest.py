"""Shared fixtures.

- Ray is started once per test session (2 CPUs, no dashboard), in the session's temp
  dir and without token authentication, and shut down at the end.
- Torch runs on one thread in the test process: the networks are small, and on a shared
  2-core machine a second OpenMP thread mostly spins against other processes.
- Generated evaluation datasets are cached in one temporary directory per session,
  never in the user's cache (the variable is set before Ray starts, so the evaluator
  actors of training runs see it too).
- Runs on an object store: the session's processes (Ray's workers included) know an S3
  endpoint on 127.0.0.1 from the start, as a cluster's nodes would; the ``s3_server``
  fixture starts a real S3-protocol server there (moto's) when a test asks for it.
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


@pytest.fixture(scope="session", autouse=True)
def s3_endpoint():
    from tests.local_servers import free_port

    port = free_port()
    names = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")
    old = {k: os.environ.get(k) for k in names}
    os.environ.update(dict(zip(names, (f"http://127.0.0.1:{port}", "test", "test", "us-east-1"))))
    yield port
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def s3_server(s3_endpoint, tmp_path):
    from tests.s3_server import S3Server

    server = S3Server(s3_endpoint, tmp_path / "s3-server.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory, eval_cache, s3_endpoint):
    import ray

    tmp = tmp_path_factory.mktemp("ray")
    os.environ["RAY_TMPDIR"] = str(tmp)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


# The quick tier (`make test-quick`, the inner loop): every test but those marked slow. A
# test on the session's Ray cluster is slow by definition (a cluster start, actors, real
# training); others that start processes or train mark themselves.
def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts Ray, a subprocess of the launcher or a training run "
                                       "(left out of make test-quick)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "ray_session" in item.fixturenames:
            item.add_marker(pytest.mark.slow)
