"""``benchmarks.peer_speed``: without the bench extra it names the install and fails;
this project's side of every comparison runs without it; and, where the extra is
installed, the peer's network is this project's (same values and logits from the same
weights) and every comparison runs on both sides."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from benchmarks import peer_speed

HAS_PEER = not peer_speed.missing_peer_packages()


def test_without_the_peer_packages_it_names_the_extra_and_fails(monkeypatch, capsys):
    monkeypatch.setattr(peer_speed, "missing_peer_packages", lambda: ["jax", "mctx"])
    assert peer_speed.main(["--tiny", "--tasks", "avi_connect4"]) == 1
    err = capsys.readouterr().err
    assert "jax, mctx" in err and "pip install -e '.[bench]'" in err and "--ours-only" in err


def test_every_task_is_sized_and_has_a_unit():
    assert set(peer_speed.UNITS) == {t.split("_")[0] for t in peer_speed.TASKS}
    assert peer_speed.SIZES["full"].envs is None and peer_speed.SIZES["full"].simulations is None  # the presets'


@pytest.mark.parametrize("task", ["alphazero_puct_connect4", "avi_hex", "learner_alphazero_connect4",
                                  pytest.param("alphazero_gumbel_hex", marks=pytest.mark.slow)])
def test_our_side_runs_without_the_peer(task):
    row = peer_speed.compare(task, peer_speed.SIZES["tiny"], ours_only=True)
    assert row["task"] == task and row["ours"] > 0 and row["peer"] is None and row["ratio"] is None
    assert row["unit"] == peer_speed.UNITS[task.split("_")[0]]


def test_the_learner_rows_are_rows_of_the_replay():
    import games

    game = games.make("connect4")
    batch = peer_speed.learner_batch(game, 16)
    assert batch["obs"].dtype == np.uint8 and batch["obs"].shape == (16, *game.obs_shape)
    assert batch["target"].dtype == np.float32 and set(np.unique(batch["target"])) <= {-1.0, 0.0, 1.0}
    assert batch["policy"].dtype == np.float32 and (batch["policy"] >= 0).all()
    assert np.allclose(batch["policy"].sum(1), 1.0)


@pytest.mark.skipif(not HAS_PEER, reason="the bench extra (jax, pgx, mctx, optax) is not installed")
@pytest.mark.parametrize("game_name", ["connect4", "hex"])
def test_the_peers_network_is_ours(game_name):
    import jax.numpy as jnp
    import torch

    from benchmarks import _jax_peer

    _, _, config, game, net = peer_speed.setup(f"alphazero_puct_{game_name}", peer_speed.SIZES["tiny"])
    params = _jax_peer.params_from_torch(net)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(32, *game.obs_shape)).astype(np.float32)
    with torch.no_grad():
        out = net(torch.from_numpy(x))
    logits, value = _jax_peer.symmetrized(game, params, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(value), out.value.numpy(), atol=2e-5)
    np.testing.assert_allclose(np.asarray(logits), out.logits.numpy(), atol=2e-5)
    # A changed weight changes the peer's answer: the pytree is read, not rebuilt.
    params["value"][1] = (params["value"][1][0], params["value"][1][1] + 1.0)
    assert np.allclose(np.asarray(_jax_peer.symmetrized(game, params, jnp.asarray(x))[1]), out.value.numpy() + 1.0,
                       atol=2e-5)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_PEER, reason="the bench extra (jax, pgx, mctx, optax) is not installed")
@pytest.mark.parametrize("task", peer_speed.TASKS)
def test_both_sides_run(task):
    row = peer_speed.compare(task, peer_speed.SIZES["tiny"], ours_only=False)
    assert row["ours"] > 0 and row["peer"] > 0 and row["ratio"] == pytest.approx(row["ours"] / row["peer"])


def test_the_peer_module_is_not_imported_without_the_extra():
    # The suite's default environment lacks jax: importing peer_speed must not need it.
    assert importlib.util.find_spec("benchmarks.peer_speed") is not None
    assert "jax" not in peer_speed.__dict__


def test_the_profile_names_our_collectors_functions():
    out = peer_speed.profile("avi_hex", peer_speed.SIZES["tiny"], top=8)
    assert "function calls" in out and "tottime" in out
    assert "avi.py" in out  # the collector's own step, by cumulative time


def test_the_compiled_side_takes_turns_beside_ours(monkeypatch):
    # The third side's plumbing, with torch.compile stood in by the eager network (the compile
    # itself: tests/inference/test_compiled.py).
    from inference import compiled

    monkeypatch.setattr(compiled, "toolchain_missing", lambda: None)
    monkeypatch.setattr(compiled.torch, "compile", lambda net, dynamic=None: net)
    row = peer_speed.compare("avi_hex", peer_speed.SIZES["tiny"], ours_only=True, compile="both")
    assert row["compiled"] > 0 and row["compiled_speedup"] > 0 and row["compile_s"] > 0
    assert row["compiled_ratio"] is None and len(row["compiled_runs"]) == peer_speed.SIZES["tiny"].repeats
    assert "compiled" not in peer_speed.compare("learner_alphazero_connect4", peer_speed.SIZES["tiny"],
                                                ours_only=True, compile="both")
