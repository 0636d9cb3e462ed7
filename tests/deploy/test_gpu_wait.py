"""A run on a cluster whose GPU node has not joined yet waits for it, bounded and saying so,
before ``learner.device=auto`` is made concrete, and ``config.json`` says what auto chose
and why: on a real Ray cluster of this machine (a script in its own process, its own Ray;
the GPU is declared with Ray's ``num_gpus``), and the config field's checks."""

from __future__ import annotations

import pytest

from launch.config import resolve, resolved
from learner.config import LearnerConfig
from own_ray import run_own_ray


@pytest.fixture(scope="module")
def waits():
    return run_own_ray("gpu_wait_cluster.py", timeout=300)


@pytest.mark.slow
def test_a_bounded_wait_without_a_gpu_ends_with_its_message_and_the_cpu(waits):
    no_gpu = waits["no_gpu"]
    assert no_gpu["gpus"] == 0 and no_gpu["device"] == "cpu"
    assert no_gpu["found"] == "no GPU node joined within learner.wait_for_gpu_s=1.5 s"
    # Said at the start, every report_every_s (0.5 s) while waiting, and at the end.
    waiting = [line for line in no_gpu["printed"] if "waiting for a node with a GPU" in line]
    assert len(waiting) >= 2, no_gpu["printed"]
    assert no_gpu["printed"][-1] == f"learner.device=auto: {no_gpu['found']}"
    assert no_gpu["device_note"] == f"auto: cpu, the Ray cluster offers no GPU; {no_gpu['found']}"
    assert no_gpu["recorded"] == no_gpu["device_note"]  # what config.json holds


@pytest.mark.slow
def test_no_wait_on_the_embedded_ray_nor_with_the_bound_zero(waits):
    embedded, no_wait = waits["embedded"], waits["no_wait"]
    assert embedded["printed"] == [] and embedded["found"] == "" and embedded["device"] == "cpu"
    assert embedded["device_note"] == "auto: cpu, the Ray cluster offers no GPU"
    assert no_wait["printed"] == [] and no_wait["device"] == "cpu"
    assert no_wait["device_note"].endswith("learner.wait_for_gpu_s=0: no wait for a GPU node to join")


def test_a_gpu_node_that_joins_during_the_wait_is_seen(waits):
    late = waits["late_gpu"]
    assert late["gpus"] == 1 and late["device"] == "cuda"
    assert late["found"].startswith("a GPU node joined after ")
    assert any("waiting for a node with a GPU" in line for line in late["printed"])
    assert late["device_note"].startswith("auto: cuda, the Ray cluster offers 1 GPU(s); a GPU node joined")


def test_device_note_when_nothing_waited():
    with_gpu = resolved(resolve("tictactoe"), cpus=2, gpus=1).learner
    assert (with_gpu.device, with_gpu.device_note) == ("cuda", "auto: cuda, the Ray cluster offers 1 GPU(s)")
    explicit = resolved(resolve("tictactoe", overrides=["learner.device=cpu"]), cpus=2, gpus=1)
    assert (explicit.learner.device, explicit.learner.device_note) == ("cpu", "set in the config")


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_wait_for_gpu_s_refuses_a_negative_or_nan_bound(bad):
    with pytest.raises(ValueError, match="wait_for_gpu_s must be >= 0"):
        LearnerConfig(wait_for_gpu_s=bad)
