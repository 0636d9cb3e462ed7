"""The AlphaZero (eq. 11) and AZAL (eq. 10) losses of the learner, checked against
losses computed independently from the network's own outputs, and the symmetry
augmentation of policy targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import algorithms
import games
from learner.learner import Learner
from inference.networks import NetworkConfig

POLICY_NET = NetworkConfig("mlp", width=32, blocks=1, layers_per_block=1, head_width=32, policy_head=True)


def _batch(game, n, seed, aux=False, unlabelled=()):
    rng = np.random.default_rng(seed)
    obs = rng.integers(0, 2, size=(n, *game.obs_shape)).astype(np.uint8)
    target = rng.uniform(-1, 1, size=n).astype(np.float32)
    policy = rng.dirichlet(np.ones(game.num_actions), size=n).astype(np.float32)
    batch = {"obs": obs, "target": target, "policy": policy}
    if aux:
        aux_policy = rng.dirichlet(np.ones(game.num_actions), size=n).astype(np.float32)
        aux_policy[list(unlabelled)] = 0.0
        batch["aux_policy"] = aux_policy
    return batch


def _outputs(learner, obs):
    """The network's value and log-probabilities before the update, computed separately."""
    learner.net.train()
    with torch.no_grad():
        out = learner.net(torch.from_numpy(obs).float())
    return out.value.numpy().astype(np.float64), torch.log_softmax(out.logits, 1).numpy().astype(np.float64)


def test_alphazero_loss_is_value_mse_plus_policy_cross_entropy():
    game = games.make("tictactoe")
    learner = Learner(game, POLICY_NET, loss=algorithms.descriptor("alphazero"), device="cpu", seed=0)
    batch = _batch(game, 64, seed=1)
    value, log_p = _outputs(learner, batch["obs"])
    mse = np.mean((value - batch["target"]) ** 2)
    ce = np.mean(-(batch["policy"] * log_p).sum(1))
    stats = learner.train_step(batch)
    assert stats["value_loss"] == pytest.approx(mse, rel=1e-4)
    assert stats["policy_loss"] == pytest.approx(ce, rel=1e-4)
    assert stats["loss"] == pytest.approx(mse + ce, rel=1e-4)


def test_azal_aux_loss_averages_over_labelled_rows_only():
    game = games.make("tictactoe")
    azal = algorithms.configured("azal", {"aux_weight": 0.5})  # lambda_aux, AZAL's own setting
    learner = Learner(game, POLICY_NET, loss=azal, device="cpu", seed=0)
    unlabelled = [0, 3, 4, 10]
    batch = _batch(game, 32, seed=2, aux=True, unlabelled=unlabelled)
    value, log_p = _outputs(learner, batch["obs"])
    labelled = np.setdiff1d(np.arange(32), unlabelled)
    aux = np.mean(-(batch["aux_policy"][labelled] * log_p[labelled]).sum(1))
    mse = np.mean((value - batch["target"]) ** 2)
    ce = np.mean(-(batch["policy"] * log_p).sum(1))
    stats = learner.train_step(batch)
    assert stats["aux_loss"] == pytest.approx(aux, rel=1e-4)
    assert stats["aux_labelled_fraction"] == pytest.approx(len(labelled) / 32)
    assert stats["loss"] == pytest.approx(mse + ce + 0.5 * aux, rel=1e-4)


def test_alphazero_learns_a_fixed_policy_and_value():
    game = games.make("tictactoe")
    learner = Learner(game, POLICY_NET, loss=algorithms.descriptor("alphazero"), lr=3e-3, device="cpu", seed=0)
    batch = _batch(game, 16, seed=3)
    batch["policy"] = np.eye(game.num_actions, dtype=np.float32)[np.arange(16) % game.num_actions]
    for _ in range(300):
        stats = learner.train_step(batch)
    assert stats["value_loss"] < 0.01
    assert stats["policy_loss"] < 0.05  # one-hot targets: cross-entropy -> 0


def test_augmentation_moves_the_policy_with_the_board():
    game = games.make("othello")
    syms = game.symmetries()
    learner = Learner(game, NetworkConfig("conv", blocks=1, channels=8, head_width=16, policy_head=True),
                      loss=algorithms.descriptor("alphazero"), device="cpu", seed=0, augment=True)
    rng = np.random.default_rng(4)
    n = 64
    x = rng.integers(0, 2, size=(n, *game.obs_shape)).astype(np.float32)  # asymmetric almost surely
    actions = rng.integers(0, game.num_actions, size=n)
    pi = np.eye(game.num_actions, dtype=np.float32)[actions]
    out, (moved,) = learner._augmented(torch.from_numpy(x), [torch.from_numpy(pi)])
    out, moved = out.numpy(), moved.numpy()
    used = set()
    for i in range(n):
        # Which symmetry was drawn: the one (numpy, from the game) whose image is the output.
        k = [j for j, s in enumerate(syms) if np.array_equal(s.obs(x[i:i + 1])[0], out[i])]
        assert len(k) == 1
        used.add(k[0])
        assert moved[i].argmax() == syms[k[0]].action[actions[i]] and moved[i].sum() == 1.0
    assert len(used) > 4  # the draws cover the group


def test_policy_losses_need_a_policy_head_and_policy_columns():
    game = games.make("tictactoe")
    with pytest.raises(ValueError, match="no policy head"):
        Learner(game, NetworkConfig("mlp", width=16, blocks=1), loss=algorithms.descriptor("alphazero"), device="cpu")
    learner = Learner(game, POLICY_NET, loss=algorithms.descriptor("azal"), device="cpu")
    batch = _batch(game, 8, seed=5)
    with pytest.raises(ValueError, match="aux_policy must be float32"):
        learner.train_step(batch)
