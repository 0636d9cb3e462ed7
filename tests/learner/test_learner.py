"""Learner: the AVI regression fits, metrics and compute counters, exact resume through
a real checkpoint file, clear errors; ValueFunction agrees with the learner."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import games
from learner.checkpoint import load_checkpoint, save_checkpoint
from learner.learner import Learner
from inference.network import ValueFunction
from inference.networks import NetworkConfig

SMALL_MLP = NetworkConfig("mlp", width=64, blocks=2, layers_per_block=2, head_width=32)


def random_batches(game, count, batch, seed):
    """Fixed batches of random 0/1 planes and random targets in [-1, 1]."""
    rng = np.random.default_rng(seed)
    return [{"obs": rng.integers(0, 2, size=(batch, *game.obs_shape), dtype=np.uint8),
             "target": rng.uniform(-1, 1, size=batch).astype(np.float32)} for _ in range(count)]


def test_fits_a_fixed_random_target():
    game = games.make("fgame")
    learner = Learner(game, SMALL_MLP, lr=1e-3, device="cpu", seed=0)
    (batch,) = random_batches(game, 1, 64, seed=3)  # 64 fixed states, fixed targets
    losses = [learner.train_step(batch)["loss"] for _ in range(150)]
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])


def test_metrics_and_compute_counters():
    game = games.make("connect4")
    config = NetworkConfig("mlp", width=32, head_width=16, symmetrize=True)  # 2 images per sample
    learner = Learner(game, config, device="cpu")
    (batch,) = random_batches(game, 1, 16, seed=0)
    metrics = learner.train_step(batch)
    assert set(metrics) == {"loss", "value_mean", "value_std", "target_mean", "target_std", "grad_norm", "updates"}
    assert metrics["updates"] == learner.updates == 1
    assert metrics["target_mean"] == pytest.approx(batch["target"].mean(), abs=1e-6)
    assert metrics["target_std"] == pytest.approx(batch["target"].std(), abs=1e-6)
    assert metrics["grad_norm"] > 0 and np.isfinite(metrics["loss"])
    learner.train_step(batch)
    assert learner.samples_forward == learner.samples_backward == 2 * 16 * 2
    assert learner.compute_proxy == 64 + 3 * 64


def _losses(learner, batches):
    return [learner.train_step(b)["loss"] for b in batches]


@pytest.mark.parametrize("name,config,augment", [
    ("tictactoe", SMALL_MLP, True),  # draws symmetries from the numpy RNG
    ("othello", NetworkConfig("conv", channels=8, blocks=1, head_width=16), True),  # BatchNorm statistics
    ("connect4", NetworkConfig("mlp", width=32, head_width=16, symmetrize=True), False),
], ids=["tictactoe-mlp-augment", "othello-conv-augment", "connect4-symmetrized"])
def test_resume_continues_bitwise(tmp_path, name, config, augment):
    game = games.make(name)
    batches = random_batches(game, 15, 32, seed=5)
    first = Learner(game, config, device="cpu", seed=0, augment=augment)
    _losses(first, batches[:5])
    save_checkpoint(tmp_path / "ckpt-000000005.pt", first.state_dict())
    expected = _losses(first, batches[5:10])

    # A fresh learner with another seed: everything must come from the checkpoint.
    resumed = Learner(game, config, device="cpu", seed=123, augment=augment)
    resumed.load_state_dict(load_checkpoint(tmp_path / "ckpt-000000005.pt"))
    assert resumed.updates == 5
    assert _losses(resumed, batches[5:10]) == expected
    w1, w2 = first.get_weights(), resumed.get_weights()
    assert w1.keys() == w2.keys() and all(np.array_equal(w1[k], w2[k]) for k in w1)
    assert (resumed.samples_forward, resumed.samples_backward) == (first.samples_forward, first.samples_backward)
    # And the runs stay together afterwards, too.
    assert _losses(resumed, batches[10:]) == _losses(first, batches[10:])


def test_resume_without_the_numpy_rng_state_diverges():
    # Guards the test above: the augmentation draws really depend on the restored RNG.
    game = games.make("tictactoe")
    batches = random_batches(game, 4, 32, seed=5)
    first = Learner(game, SMALL_MLP, device="cpu", augment=True)
    _losses(first, batches[:2])
    state = first.state_dict()
    expected = _losses(first, batches[2:])
    state["rng"]["numpy"] = np.random.default_rng(99).bit_generator.state
    other = Learner(game, SMALL_MLP, device="cpu", augment=True)
    other.load_state_dict(state)
    assert _losses(other, batches[2:]) != expected


def test_read_only_arrays_are_accepted_without_copies_or_warnings():
    # Batches and weights arrive read-only from the Ray object store.
    game = games.make("tictactoe")
    learner = Learner(game, SMALL_MLP, device="cpu")
    (batch,) = random_batches(game, 1, 8, seed=0)
    weights = learner.get_weights()
    for array in [*batch.values(), *weights.values()]:
        array.flags.writeable = False
    values = ValueFunction(game, SMALL_MLP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        learner.train_step(batch)
        values.set_weights(weights, 0)
        obs = batch["obs"].astype(np.float32)
        obs.flags.writeable = False
        assert values(obs).shape == (8,)


def test_state_dict_is_a_snapshot():
    game = games.make("tictactoe")
    learner = Learner(game, SMALL_MLP, device="cpu")
    state, weights = learner.state_dict(), learner.get_weights()
    before = {k: v.clone() for k, v in state["net"].items()}
    _losses(learner, random_batches(game, 2, 8, seed=0))
    assert all(torch.equal(state["net"][k], before[k]) for k in before)
    assert any(not np.array_equal(weights[k], v) for k, v in learner.get_weights().items())


def test_load_refuses_another_configuration():
    game = games.make("tictactoe")
    state = Learner(game, SMALL_MLP, device="cpu").state_dict()
    other = Learner(game, NetworkConfig("mlp", width=32, head_width=32), device="cpu")
    with pytest.raises(ValueError, match="differs in net_config"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="differs in game"):
        Learner(games.make("chomp", rows=3, cols=3), SMALL_MLP, device="cpu").load_state_dict(state)


def test_errors_are_specific():
    game = games.make("tictactoe")
    with pytest.raises(ValueError, match="loss takes the algorithm's descriptor"):
        Learner(game, SMALL_MLP, loss="avi")  # the learner looks no algorithm up by name
    with pytest.raises(ValueError, match="augment=True but .*fgame.* no symmetry"):
        Learner(games.make("fgame"), SMALL_MLP, augment=True)
    learner = Learner(game, SMALL_MLP, device="cpu")
    (batch,) = random_batches(game, 1, 4, seed=0)
    with pytest.raises(TypeError, match="obs must be uint8, got float32"):
        learner.train_step({**batch, "obs": batch["obs"].astype(np.float32)})
    with pytest.raises(ValueError, match=r"obs must have shape \[N, 2, 3, 3\], got \(4, 18\)"):
        learner.train_step({**batch, "obs": batch["obs"].reshape(4, 18)})
    with pytest.raises(ValueError, match=r"target must be float32\[4\]"):
        learner.train_step({**batch, "target": batch["target"][:3]})


def test_default_device_follows_cuda():
    learner = Learner(games.make("tictactoe"), SMALL_MLP)
    assert learner.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_value_function_matches_the_learner_in_chunks():
    game = games.make("othello")  # BatchNorm: eval mode must use the running statistics
    config = NetworkConfig("conv", channels=8, blocks=1, head_width=16)
    learner = Learner(game, config, device="cpu")
    _losses(learner, random_batches(game, 3, 16, seed=1))
    values = ValueFunction(game, config, max_batch=7)
    with pytest.raises(RuntimeError, match="before set_weights"):
        values(np.zeros((1, *game.obs_shape), np.float32))
    values.set_weights(learner.get_weights(), version=3)
    assert values.version == 3
    obs = np.random.default_rng(0).integers(0, 2, size=(20, *game.obs_shape)).astype(np.float32)
    got = values(obs)
    assert got.dtype == np.float32 and got.shape == (20,)
    learner.net.eval()
    with torch.no_grad():
        want = learner.net(torch.from_numpy(obs)).value.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert values.samples_forward == 20
    # uint8 encodings (what travels to an inference server) give the same values.
    np.testing.assert_array_equal(values(obs.astype(np.uint8)), got)
    with pytest.raises(TypeError, match="obs must be float32 or uint8, got float64"):
        values(obs.astype(np.float64))
    with pytest.raises(ValueError, match="weights do not fit the network"):
        ValueFunction(game, NetworkConfig("conv", channels=4, blocks=1)).set_weights(learner.get_weights(), 0)
