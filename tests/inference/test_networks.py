"""Networks: every preset on every game, symmetry consistency with the game library,
exact invariance of symmetrized networks, cost accounting and configuration errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import games
from games import random_legal_actions, take
from inference.networks import (
    PRESET_NETWORKS,
    ConvResTower,
    NetworkConfig,
    ResidualMLP,
    Symmetrized,
    build_network,
    count_parameters,
    forward_cost,
    torch_symmetries,
)

# Symmetric variants too: Hex with the swap plane, square Chomp (transpose).
SYMMETRY_CONFIGS = [(name, {}) for name in games.names()] + [("hex", {"size": 4, "swap": True}),
                                                              ("chomp", {"rows": 4, "cols": 4})]


def random_encodings(game, batch, seed=0):
    """float32[batch, *obs_shape] of live positions after a few random plies."""
    rng = np.random.default_rng(seed)
    state = game.init(batch)
    for _ in range(int(rng.integers(1, 6))):
        legal = game.legal(state)
        live = legal.any(axis=1)
        if not live.all():  # drops the finished games (not games.step_live): only live positions are encoded
            state = take(state, live)
            legal = legal[live]
        state, _, _ = game.step(state, random_legal_actions(legal, rng))
    return game.encode(state)


def test_every_game_has_a_preset():
    assert set(PRESET_NETWORKS) == set(games.names())


@pytest.mark.parametrize("name", games.names())
def test_preset_builds_and_runs(name):
    game = games.make(name)
    config = PRESET_NETWORKS[name]
    net = build_network(game, config)
    assert isinstance(net, Symmetrized) == config.symmetrize
    assert isinstance(net.net if config.symmetrize else net, ResidualMLP if config.kind == "mlp" else ConvResTower)
    obs = torch.from_numpy(random_encodings(game, 2))
    out = net(obs)
    assert out.value.shape == (2,) and out.value.dtype == torch.float32
    assert out.logits is None
    assert torch.isfinite(out.value).all()
    assert count_parameters(net) > 0


@pytest.mark.parametrize("name", games.names())
def test_policy_head_shapes(name):
    game = games.make(name)
    config = dataclasses.replace(PRESET_NETWORKS[name], width=32, head_width=16, channels=8, policy_head=True)
    out = build_network(game, config)(torch.from_numpy(random_encodings(game, 5)))
    assert out.value.shape == (5,)
    assert out.logits.shape == (5, game.num_actions)


def test_mlp_matches_the_paper_layout():
    # C.1 Connect Four: 4 blocks of 4 (Linear, LayerNorm, GELU) layers, 256 units, 2-layer heads.
    net = build_network(games.make("connect4"), PRESET_NETWORKS["connect4"]).net
    assert len(net.blocks) == 4 and all(len(b.body) == 4 for b in net.blocks)
    layer = net.blocks[0].body[0]
    assert [type(m).__name__ for m in layer] == ["Linear", "LayerNorm", "GELU"]
    assert layer[0].in_features == layer[0].out_features == 256
    assert net.stem.in_features == 2 * 6 * 7
    assert [m.out_features for m in net.value_head if isinstance(m, torch.nn.Linear)] == [256, 1]


@pytest.mark.parametrize("name,params", SYMMETRY_CONFIGS,
                         ids=[n + "".join(f"-{k}{v}" for k, v in p.items()) for n, p in SYMMETRY_CONFIGS])
def test_torch_symmetries_equal_the_games_numpy_maps(name, params):
    game = games.make(name, **params)
    numpy_syms = game.symmetries()
    torch_syms = torch_symmetries(game)
    assert [s.name for s in torch_syms] == [s.name for s in numpy_syms]
    rng = np.random.default_rng(1)
    encodings = [random_encodings(game, 16, seed=2),
                 rng.integers(0, 2, size=(16, *game.obs_shape)).astype(np.float32)]
    for obs in encodings:
        for t, n in zip(torch_syms, numpy_syms):
            np.testing.assert_array_equal(t.obs(torch.from_numpy(obs)).numpy(), n.obs(obs), err_msg=t.name)
            np.testing.assert_array_equal(t.action.numpy(), n.action)


@pytest.mark.parametrize("name", ["connect4", "hex"])
def test_symmetrized_net_is_exactly_invariant_and_equivariant(name):
    game = games.make(name)
    torch.manual_seed(0)
    config = dataclasses.replace(PRESET_NETWORKS[name], width=64, head_width=32, policy_head=True)
    net = build_network(game, config)
    sym = torch_symmetries(game)[1]
    x = torch.from_numpy(random_encodings(game, 64))
    a, b = net(x), net(sym.obs(x))
    assert torch.equal(a.value, b.value)
    # The policy of the transformed position, read at the images of the actions, is the original's.
    assert torch.equal(b.logits[:, sym.action], a.logits)
    # The same network without the averaging is not invariant: the test above can fail.
    plain = net.net
    assert not torch.allclose(plain(x).value, plain(sym.obs(x)).value)


def test_forward_cost():
    for name in games.names():
        config = PRESET_NETWORKS[name]
        net = build_network(games.make(name), dataclasses.replace(config, width=16, head_width=8, channels=4))
        assert forward_cost(config) == forward_cost(net) == (2 if name in ("connect4", "hex") else 1)
    othello_sym = NetworkConfig("mlp", width=16, head_width=8, symmetrize=True)
    othello = games.make("othello")
    assert forward_cost(othello_sym, othello) == forward_cost(build_network(othello, othello_sym)) == 8
    with pytest.raises(TypeError, match="NetworkConfig or an nn.Module"):
        forward_cost("connect4")


def test_config_errors_are_specific():
    with pytest.raises(ValueError, match="kind must be 'mlp' or 'conv'"):
        NetworkConfig("transformer")
    with pytest.raises(ValueError, match="width must be a positive integer"):
        NetworkConfig("mlp", width=0)
    with pytest.raises(ValueError, match=r"fgame: a conv network needs encodings \[C, H, W\]"):
        build_network(games.make("fgame"), NetworkConfig("conv"))
    with pytest.raises(ValueError, match="no symmetry besides the identity"):
        build_network(games.make("fgame"), NetworkConfig("mlp", symmetrize=True))


def test_unknown_or_inconsistent_symmetries_are_refused():
    from games.base import Symmetry

    base = games.game_class("connect4")
    upside_down = Symmetry("mirror", lambda obs: obs[..., ::-1, :], np.arange(7))
    sheared = Symmetry("shear", lambda obs: obs, np.arange(7))

    class Misnamed(base):
        def symmetries(self):
            return [super().symmetries()[0], upside_down]

    class Unknown(base):
        def symmetries(self):
            return [super().symmetries()[0], sheared]

    with pytest.raises(ValueError, match="connect4: the torch version of symmetry 'mirror' disagrees"):
        torch_symmetries(Misnamed())
    with pytest.raises(ValueError, match="connect4: no torch version of symmetry 'shear'"):
        torch_symmetries(Unknown())
