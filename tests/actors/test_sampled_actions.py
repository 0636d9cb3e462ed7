"""AVI with sampled children (actors/avi.py, ``sample_actions``): with k = 0 the rows are
those of the exhaustive one-step lookahead, computed here from the game's rules; with
k > 0 only k legal children per state are evaluated, the target is the maximum of their
q, and the prior mode draws moves in proportion to the policy head's softmax."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import games
from actors.avi import AviCollector, sample_actions
from actors.config import SelfPlayConfig
from launch.config import ConfigError, resolve
from inference.network import ValueFunction
from inference.tensors import numpy_weights
from inference.networks import build_network, preset_network


def fixed_value_fn(shape, seed=0):
    """A deterministic stand-in network: tanh of a fixed random projection of the encoding."""
    w = np.random.default_rng(seed).normal(size=int(np.prod(shape))).astype(np.float32)
    return lambda obs: np.tanh(obs.reshape(len(obs), len(w)) @ w / 4).astype(np.float32)


def recording(value_fn):
    """``value_fn`` that keeps every batch it is asked (``asked``, one array per call)."""
    def record(obs):
        record.asked.append(np.array(obs))
        return value_fn(obs)
    record.asked = []
    return record


def exhaustive_rows(game, num_envs, *, epsilon, gamma, seed, value_fn, steps):
    """The AVI rows of Algorithm 1 written out from the rules, one state at a time: every
    legal move stepped, q = r - gamma V(child) (0 past the end), the row's target the
    maximum; the move argmax q, or with probability epsilon the k-th legal move for a
    uniform draw (the exploration of ``games.random_legal_actions``)."""
    rng = np.random.default_rng(seed)
    state = game.init(num_envs)
    obs_rows, targets = [], []
    for _ in range(steps):
        legal = game.legal(state)
        explore = rng.random(num_envs) < epsilon
        uniform = rng.random(num_envs)
        nxt = []
        for b in range(num_envs):
            one = games.take(state, [b])
            q = np.full(game.num_actions, -np.inf, np.float32)
            for a in np.flatnonzero(legal[b]):
                child, reward, done = game.step(one, np.array([a]))
                value = 0.0 if done[0] else value_fn(game.encode(child))[0]
                q[a] = np.float32(reward[0] - np.float32(gamma) * np.float32(value))
            moves = np.flatnonzero(legal[b])
            a = moves[min(int(uniform[b] * len(moves)), len(moves) - 1)] if explore[b] else int(q.argmax())
            child, _, done = game.step(one, np.array([a]))
            nxt.append(game.init(1) if done[0] else child)
            obs_rows.append(game.encode(one).astype(np.uint8)[0])
            targets.append(q.max())
        state = games.concat(nxt)
    return np.stack(obs_rows), np.array(targets, np.float32)


@pytest.mark.parametrize("sample", [0, 9, 100])
def test_without_sampling_the_rows_are_the_exhaustive_lookahead(sample):
    """k = 0, and k at least the number of moves, evaluate every legal child: the rows of
    the exhaustive lookahead, and the collector's generator drawn exactly as there."""
    game = games.make("tictactoe")
    value_fn = fixed_value_fn(game.obs_shape)
    collector = AviCollector(game, 4, epsilon=0.4, gamma=0.9, seed=3, sample_actions=sample)
    rows = collector.collect(value_fn, 14)
    obs, target = exhaustive_rows(game, 4, epsilon=0.4, gamma=0.9, seed=3, value_fn=value_fn, steps=14)
    np.testing.assert_array_equal(rows["obs"], obs)
    np.testing.assert_allclose(rows["target"], target, rtol=1e-6, atol=1e-6)
    reference = np.random.default_rng(3)
    for _ in range(14):
        reference.random(4), reference.random(4)
    assert collector.rng.bit_generator.state == reference.bit_generator.state


def children_by_action(game, state):
    """{action: (encoding uint8, reward, done)} of every legal move of batch-1 ``state``."""
    out = {}
    for a in np.flatnonzero(game.legal(state)[0]):
        child, reward, done = game.step(state, np.array([a]))
        out[int(a)] = (game.encode(child)[0], float(reward[0]), bool(done[0]))
    return out


@pytest.mark.parametrize("k", [1, 3])
def test_only_k_legal_children_are_evaluated_and_the_target_is_their_best_q(k):
    """Othello, one environment, greedy: per step the network is asked the encodings of
    min(k, legal) distinct legal children (fewer by those that end the game); the target
    is the maximum of their q, computed here from the rules; the move played is the child
    of that maximum. Over the run some targets fall below the exhaustive maximum."""
    game = games.make("othello")
    value_fn = recording(fixed_value_fn(game.obs_shape, seed=1))
    collector = AviCollector(game, 1, epsilon=0.0, gamma=0.9, seed=0, sample_actions=k)
    below_exhaustive = 0
    for _ in range(70):
        state = collector.state
        children = children_by_action(game, state)
        value_fn.asked.clear()
        rows = collector.step(value_fn)
        asked = np.concatenate(value_fn.asked) if value_fn.asked else np.zeros((0, *game.obs_shape))
        sampled = []
        for o in asked:
            match = [a for a, (enc, _, done) in children.items() if not done and np.array_equal(enc, o)]
            assert len(match) == 1, "an evaluated position is not a legal, live child of the state"
            sampled.append(match[0])
        assert len(set(sampled)) == len(sampled)
        ending = [a for a, (_, _, done) in children.items() if done]
        assert min(k, len(children)) - len(ending) <= len(sampled) <= min(k, len(children))
        v = dict(zip(sampled, fixed_value_fn(game.obs_shape, seed=1)(asked)))
        q = {a: np.float32(r - np.float32(0.9) * v[a]) for a, (_, r, done) in children.items() if a in v}
        q.update({a: np.float32(children[a][1]) for a in ending})
        if len(sampled) == min(k, len(children)):  # no ending move could have been sampled
            assert rows["target"][0] == pytest.approx(max(q[a] for a in sampled), abs=1e-6)
            best = max(sampled, key=lambda a: q[a])
            if not children[best][2]:
                np.testing.assert_array_equal(game.encode(collector.state)[0], children[best][0])
        live = [a for a, (_, _, done) in children.items() if not done]
        all_v = fixed_value_fn(game.obs_shape, seed=1)(np.stack([children[a][0] for a in live])) if live else []
        exhaustive = max([np.float32(children[a][1] - np.float32(0.9) * x) for a, x in zip(live, all_v)]
                         + [np.float32(children[a][1]) for a in ending])
        below_exhaustive += rows["target"][0] < exhaustive - 1e-6
    assert below_exhaustive > 5


def test_k_1_uniform_draws_each_legal_move_alike_and_its_q_is_the_target():
    """From Othello's opening (4 legal moves), k = 1 and greedy play: the move played is the
    one sampled, uniform over the four (binomial bound per move), and the row's target is
    that move's q from the rules."""
    game = games.make("othello")
    value_fn = fixed_value_fn(game.obs_shape, seed=2)
    n = 4000
    collector = AviCollector(game, n, epsilon=0.0, gamma=1.0, seed=5, sample_actions=1)
    start = game.init(1)
    children = children_by_action(game, start)
    assert len(children) == 4
    rows = collector.step(value_fn)
    after = game.encode(collector.state)
    counts = {}
    for a, (enc, reward, _) in children.items():
        played = np.all(after == enc, axis=(1, 2, 3))
        counts[a] = int(played.sum())
        q = np.float32(reward - value_fn(enc[None])[0])
        np.testing.assert_allclose(rows["target"][played], q, rtol=1e-6)
    assert sum(counts.values()) == n
    bound = 4 * np.sqrt(n * 0.25 * 0.75)
    assert all(abs(c - n / 4) < bound for c in counts.values()), counts


def test_prior_sampling_follows_the_softmax_of_the_legal_logits():
    """Gumbel-top-k with k = 1 draws a legal move with probability softmax(logits) over the
    legal ones (binomial bound per move); k = 2 gives two distinct legal moves."""
    rng = np.random.default_rng(0)
    legal = np.array([[True, False, True, True, False, True]])
    logits = np.array([[1.0, 9.0, 0.0, -1.0, 9.0, 2.0]])
    n = 20000
    chosen = sample_actions(np.repeat(legal, n, 0), 1, rng, np.repeat(logits, n, 0))
    assert np.all(chosen.sum(1) == 1) and not chosen[:, ~legal[0]].any()
    p = np.exp(logits[0, legal[0]]) / np.exp(logits[0, legal[0]]).sum()
    freq = chosen[:, legal[0]].sum(0)
    np.testing.assert_array_less(np.abs(freq - n * p), 4 * np.sqrt(n * p * (1 - p)) + 1)
    pairs = sample_actions(np.repeat(legal, 100, 0), 2, rng, np.repeat(logits, 100, 0))
    assert np.all(pairs.sum(1) == 2) and not pairs[:, ~legal[0]].any()
    few = sample_actions(np.array([[False, True, False, False, False, False]]), 3, rng)
    assert few.tolist() == [[False, True, False, False, False, False]]  # fewer legal than k: all


def network_value_fn(game, policy_head: bool) -> ValueFunction:
    torch.manual_seed(0)
    network = dataclasses.replace(preset_network(game.name), policy_head=policy_head)
    value_fn = ValueFunction(game, network)
    value_fn.set_weights(numpy_weights(build_network(game, network)), 0)
    return value_fn


def test_prior_mode_asks_the_policy_head_once_per_parent():
    """With a policy head, each step costs one forward of the B parents besides the k
    children per state; without one, sampling by the prior is refused by name."""
    game = games.make("tictactoe")
    value_fn = network_value_fn(game, policy_head=True)
    collector = AviCollector(game, 8, epsilon=0.0, gamma=1.0, seed=0, sample_actions=2, sample_by="prior")
    value_fn(game.encode(game.init(1)))
    per_sample = value_fn.samples_forward  # the counter's cost of one evaluation
    before = value_fn.samples_forward
    rows = collector.step(value_fn)  # from the empty board: 9 moves, none ends the game
    assert (value_fn.samples_forward - before) == (8 + 8 * 2) * per_sample
    assert len(rows["target"]) == 8
    with pytest.raises(ValueError, match="policy head"):
        AviCollector(game, 8, epsilon=0.0, gamma=1.0, seed=0, sample_actions=2,
                     sample_by="prior").step(network_value_fn(game, policy_head=False))


def test_the_settings_are_checked_by_name():
    with pytest.raises(ValueError, match="sample_actions must be >= 0"):
        SelfPlayConfig(sample_actions=-1)
    with pytest.raises(ValueError, match="sample_by must be one of uniform, prior"):
        SelfPlayConfig(sample_by="best")
    with pytest.raises(ValueError, match="sample_actions must be >= 0"):
        AviCollector(games.make("tictactoe"), 2, epsilon=0.0, gamma=1.0, seed=0, sample_actions=-2)
    with pytest.raises(ConfigError, match="network.policy_head must be true"):
        resolve("tictactoe", overrides=["actors.sample_actions=2", "actors.sample_by=prior"])
    with pytest.raises(ConfigError, match="inference server"):
        resolve("tictactoe", overrides=["actors.sample_actions=2", "actors.sample_by=prior",
                                         "network.policy_head=true", "actors.inference_servers=1"])
    config = resolve("othello", overrides=["actors.sample_actions=4"])
    assert config.actors.sample_actions == 4 and config.actors.sample_by == "uniform"
