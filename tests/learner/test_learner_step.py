"""The learner's update loop without host waits: ``Learner.step`` on rows
moved to the device in blocks, metrics summed on the device and read once, gives the
losses and weights of a plain PyTorch training loop written here, within float
tolerance; symmetry augmentation moves every row as the game's own numpy maps do; and on
a CUDA device the update replayed as a CUDA graph follows the eager one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import algorithms
import games
from learner.learner import Learner
from inference.networks import NetworkConfig, build_network

SMALL_MLP = NetworkConfig("mlp", width=64, blocks=2, layers_per_block=2, head_width=32, symmetrize=True)
SMALL_CONV = NetworkConfig("conv", channels=8, blocks=1, head_width=16)


def batches(game, count, size, seed, policy=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        batch = {"obs": rng.integers(0, 2, size=(size, *game.obs_shape), dtype=np.uint8),
                 "target": rng.uniform(-1, 1, size=size).astype(np.float32)}
        if policy:
            p = rng.uniform(size=(size, game.num_actions)).astype(np.float32)
            batch["policy"] = p / p.sum(1, keepdims=True)
        out.append(batch)
    return out


def reference_run(game, config, data, *, lr, seed, policy):
    """The update of eqs. (5) and (11) in a plain loop: fresh network of the same seed, Adam."""
    torch.manual_seed(seed)
    net = build_network(game, config)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    losses = []
    for batch in data:
        out = net(torch.from_numpy(batch["obs"]).float())
        loss = F.mse_loss(out.value, torch.from_numpy(batch["target"]))
        if policy:
            loss = loss - (torch.from_numpy(batch["policy"]) * F.log_softmax(out.logits, 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


@pytest.mark.parametrize("algo", ["avi", "alphazero"])
def test_steps_on_device_blocks_match_a_plain_training_loop(algo):
    game = games.make("connect4")
    config = dataclasses.replace(SMALL_MLP, policy_head=algo != "avi")
    data = batches(game, 12, 32, seed=1, policy=algo != "avi")
    expected_losses, expected_weights = reference_run(game, config, data, lr=1e-3, seed=4, policy=algo != "avi")

    learner = Learner(game, config, lr=1e-3, device="cpu", seed=4, loss=algorithms.descriptor(algo))
    # As LearnerWorker.train does: blocks of 4 batches moved at once, sliced on the device.
    block_size, stats = 4, []
    for first in range(0, len(data), block_size):
        block = {k: np.concatenate([b[k] for b in data[first:first + block_size]]) for k in data[0]}
        rows = learner.to_device(block)
        for i in range(block_size):
            stats.append(learner.step(rows.rows(i * 32, (i + 1) * 32)))
    losses = [s[learner.metric_names.index("loss")].item() for s in stats]
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5, atol=1e-6)
    for name, weight in learner.net.state_dict().items():
        np.testing.assert_allclose(weight.numpy(), expected_weights[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert learner.updates == 12
    # The metrics summed on the device and read once are the mean of the per-update ones.
    mean = (torch.stack(stats).sum(0) / len(stats)).tolist()
    per_update = np.array([s.tolist() for s in stats])
    np.testing.assert_allclose(mean, per_update.mean(0), rtol=1e-5)
    assert len(mean) == len(learner.metric_names)


def test_train_step_answers_what_step_computes():
    game = games.make("connect4")
    one, two = (Learner(game, SMALL_MLP, lr=1e-3, device="cpu", seed=2) for _ in range(2))
    for batch in batches(game, 3, 16, seed=3):
        read_now = one.train_step(batch)
        summed = dict(zip(two.metric_names, two.step(two.to_device(batch)).tolist()))
        assert read_now.pop("updates") == one.updates
        assert read_now == pytest.approx(summed, rel=1e-6)


def test_augmentation_moves_each_row_by_the_games_own_symmetry():
    game = games.make("othello")
    learner = Learner(game, dataclasses.replace(SMALL_CONV, policy_head=True), device="cpu", seed=0,
                      loss=algorithms.descriptor("alphazero"), augment=True)
    rng = np.random.default_rng(0)
    n = 64
    obs = rng.integers(0, 2, size=(n, *game.obs_shape)).astype(np.float32)
    policy = rng.uniform(size=(n, game.num_actions)).astype(np.float32)
    state = learner._rng.bit_generator.state
    out, (moved,) = learner._augmented(torch.from_numpy(obs), [torch.from_numpy(policy)])
    replay = np.random.default_rng()
    replay.bit_generator.state = state
    choice = replay.integers(len(game.symmetries()), size=n)  # the draw _augmented made
    assert len(set(choice.tolist())) > 4  # the batch exercises most of the 8 symmetries
    for row in range(n):
        sym = game.symmetries()[choice[row]]
        np.testing.assert_array_equal(out[row].numpy(), sym.obs(obs[row:row + 1])[0])
        expected = np.empty(game.num_actions, np.float32)
        expected[sym.action] = policy[row]  # the image of action a gets a's probability
        np.testing.assert_array_equal(moved[row].numpy(), expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device (run on the GPU node)")
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_graph_updates_follow_the_eager_ones(precision):
    game = games.make("connect4")
    config = NetworkConfig("mlp", blocks=4, layers_per_block=4, symmetrize=True)  # the paper preset
    data = batches(game, 40, 256, seed=7)
    runs = {}
    for graphs in ("off", "on"):
        learner = Learner(game, config, lr=3e-4, device="cuda", seed=1, precision=precision, graphs=graphs)
        stats = [learner.step(learner.to_device(b)) for b in data]
        runs[graphs] = (torch.stack(stats).cpu().numpy(),
                        {k: v.detach().cpu().numpy() for k, v in learner.net.state_dict().items()})
        assert (learner._graph is not None) == (graphs == "on")
    (eager, eager_w), (graphed, graphed_w) = runs["off"], runs["on"]
    # The same kernels in the same order: equal up to the nondeterminism of cuBLAS reductions.
    tol = dict(rtol=1e-3, atol=1e-4) if precision == "fp32" else dict(rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(graphed[:, 0], eager[:, 0], **tol)
    for name in eager_w:
        np.testing.assert_allclose(graphed_w[name], eager_w[name], **tol, err_msg=name)
