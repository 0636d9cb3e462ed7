"""launch/placement.py: the learner and the inference servers share one GPU where the
cluster has fewer than one each, by hand-written cases, and on a real one-GPU Ray (a
script in its own process: it must not meet the session's Ray), where the three must
run at once."""

from __future__ import annotations

import pytest

from launch.placement import LEARNER_GPU_SHARE, UNITS_PER_GPU, gpu_shares, role_options, run_options
from own_ray import run_own_ray


def test_whole_gpus_where_the_cluster_has_one_for_each():
    assert gpu_shares("cuda", "cuda", 2, gpus=3) == (1, 1)
    assert gpu_shares("cuda", "cuda", 2, gpus=8) == (1, 1)
    assert gpu_shares("cpu", "cuda", 2, gpus=2) == (0, 1)
    # No server on the GPU: the learner keeps a whole one, even beside many servers on CPUs.
    assert gpu_shares("cuda", "cpu", 4, gpus=1) == (1, 0)
    assert gpu_shares("cpu", "cpu", 2, gpus=0) == (0, 0)


def test_the_learner_and_the_servers_share_one_gpu():
    assert LEARNER_GPU_SHARE == 0.5
    assert gpu_shares("cuda", "cuda", 2, gpus=1) == (0.5, 0.25)
    assert gpu_shares("cuda", "cuda", 1, gpus=1) == (0.5, 0.5)
    # Too few GPUs for one each: still one GPU shared, as on a one-GPU node.
    assert gpu_shares("cuda", "cuda", 2, gpus=2) == (0.5, 0.25)
    # No learner on the GPU: the servers split all of it.
    assert gpu_shares("cpu", "cuda", 2, gpus=1) == (0, 0.5)
    assert gpu_shares("cpu", "cuda", 3, gpus=1) == (0, 0.3333)


@pytest.mark.parametrize("learner", ["cuda", "cpu"])
def test_shares_are_whole_units_of_ray_and_fit_on_one_gpu(learner):
    for servers in range(1, 65):
        learner_gpus, server_gpus = gpu_shares(learner, "cuda", servers, gpus=1)
        assert server_gpus == round(server_gpus, 4) >= 1 / UNITS_PER_GPU, (servers, server_gpus)
        # Rounded down: the shares never sum to more than the one GPU they share.
        units = round(learner_gpus * UNITS_PER_GPU) + servers * round(server_gpus * UNITS_PER_GPU)
        assert units <= UNITS_PER_GPU, (servers, server_gpus)
    assert gpu_shares("cuda", "cuda", 3, gpus=1) == (0.5, 0.1666)  # 0.1666..., rounded down


def test_options_carry_the_shares():
    assert role_options("learner", embedded=True, offered=(), device="cuda", gpu_share=0.5) == {
        "num_cpus": 0, "num_gpus": 0.5}
    # On a deploy/ cluster the learner keeps its learner slot, a server asks for the GPU alone.
    options = run_options(embedded=False, offered=["actor", "learner"], device="cuda", inference_device="cuda",
                          learner_gpus=0.5, inference_gpus=0.25)
    assert options["learner"] == {"num_cpus": 0, "num_gpus": 0.5, "resources": {"learner": 1}}
    assert options["inference"] == {"num_cpus": 0, "num_gpus": 0.25}
    # Roles off the GPU ignore their share (0 for a CPU learner, from gpu_shares).
    assert run_options(embedded=True, offered=(), learner_gpus=0, inference_gpus=0)["learner"] == {
        "num_cpus": 1, "num_gpus": 0}
    assert role_options("learner", embedded=True, offered=(), device="cuda", gpu_share=2) == {
        "num_cpus": 0, "num_gpus": 2}


@pytest.mark.parametrize("share", [0, -0.5, 1.5, float("nan"), float("inf")])
def test_bad_shares_are_named(share):
    with pytest.raises(ValueError, match=rf"gpu_share={share} of the learner is neither in \(0, 1\]"):
        role_options("learner", embedded=True, offered=(), device="cuda", gpu_share=share)
    with pytest.raises(ValueError, match=rf"gpu_share={share} of the inference"):
        run_options(embedded=True, offered=(), inference_device="cuda", inference_gpus=share)


def test_more_servers_than_ray_can_split_a_gpu_among_are_refused():
    with pytest.raises(ValueError, match="5001 inference servers cannot share a GPU"):
        gpu_shares("cuda", "cuda", 5001, gpus=1)


@pytest.mark.slow
def test_a_learner_and_two_servers_run_at_once_on_one_gpu_of_a_real_ray():
    result = run_own_ray("gpu_share_cluster.py", timeout=180)
    assert result["shares"] == [0.5, 0.25]
    # All three placed and answering at once, each with its share of the one GPU.
    assert result["held"] == [0.5, 0.25, 0.25]
    assert result["ids"] == [["0"], ["0"], ["0"]]
    # With a whole GPU each (before sharing) a server could not be placed beside the learner.
    assert result["whole_server_waited"] is True
    # The trial's placement group reserves the same shares, and Ray places it on the one GPU.
    assert result["bundles"] == [0.5, 0.25, 0.25]
    assert result["group_ready"] is True
    assert result["held_in_group"] == [0.5, 0.25, 0.25]
