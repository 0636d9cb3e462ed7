"""The fault tests run torch on one thread in the driver: their networks are small, and on
a shared 2-core machine a second OpenMP thread mostly spins against other processes."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
