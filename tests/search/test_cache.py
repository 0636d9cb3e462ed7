"""The evaluation cache (search/cache.py): each distinct input evaluated once per weight
version, with answers equal to the uncached ones.

- keys: equal rows get equal keys and different rows different ones, in both key kinds;
- counters on a case with known repeats (128 tic-tac-toe games at the empty board share
  9 children) and, step by step, against a count of the distinct children made here;
- AVI collection and MCTS (AlphaZero self-play) with the cache give bitwise the rows of
  the uncached run under a batch-invariant function; with real preset networks every
  answer stays within 1e-6 of the network's uncached answer for the same input;
- a new weight version clears the table; memory stays within ``max_entries``;
- the actor's ``eval_cache`` option."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import algorithms
import games
from actors.alphazero import AlphaZeroCollector
from actors.avi import AviCollector
from games.testing import random_move_lists
from inference.network import ValueFunction
from inference.tensors import numpy_weights
from inference.networks import PRESET_NETWORKS, build_network
from search import MCTS, MCTSConfig
from search.cache import CachedEvaluator, CachedValueFn, EvaluationCache, row_keys

TTT = games.make("tictactoe")
C4 = games.make("connect4")


def hashed_value(obs: np.ndarray) -> np.ndarray:
    """A pseudo-random value in [-1, 1) of each row's bytes, computed row by row in integer
    arithmetic: the same row gets bitwise the same value in any batch."""
    obs = np.ascontiguousarray(obs)
    rows = obs.reshape(len(obs), obs[0].size if len(obs) else 1).view(np.uint8).astype(np.uint64)
    weights = np.arange(1, rows.shape[1] + 1, dtype=np.uint64) * np.uint64(2654435761)
    h = (rows * weights).sum(axis=1) % np.uint64(65521)
    return (h.astype(np.float32) / 32760.5 - 1.0).astype(np.float32)


class Counted:
    """``fn`` with the inputs it was called on recorded, and a ``version``."""

    def __init__(self, fn, version=0):
        self.fn, self.version, self.calls = fn, version, []

    def __call__(self, x):
        self.calls.append(np.array(x))
        return self.fn(x)


def first_equal_row(x: np.ndarray) -> np.ndarray:
    """For each row of ``x``, the index of the first row equal to it."""
    _, first, inverse = np.unique(x.reshape(len(x), -1), axis=0, return_index=True, return_inverse=True)
    return first[inverse.ravel()]


def test_keys_are_equal_exactly_for_equal_rows():
    rng = np.random.default_rng(0)
    binary = (rng.random((300, 2, 6, 7)) < 0.3).astype(np.float32)
    binary[100:150] = binary[:50]  # repeats
    keys = row_keys(binary)
    np.testing.assert_array_equal(first_equal_row(keys), first_equal_row(binary))
    assert (first_equal_row(keys)[100:150] == np.arange(50)).all()
    assert keys.shape == (300, 1 + 2)  # the tag word and 84 bits in two words
    # Not binary: the bytes themselves. A 0.5 must not pack to the same key as a 1.
    halves = binary.copy()
    halves[0, 0, 0, 0] = 0.5
    raw = row_keys(halves)
    assert raw[0, 0] != keys[0, 0] and raw.shape == (300, 1 + 84 * 4 // 8)
    np.testing.assert_array_equal(first_equal_row(raw), first_equal_row(halves))


def test_counters_on_the_empty_board_and_step_by_step():
    """128 envs at the empty board: 1152 children, 9 distinct. Then every step's counts
    equal those of a set of the children's bytes kept here."""
    inner = Counted(hashed_value)
    cached = CachedValueFn(inner)
    collector = AviCollector(TTT, 128, epsilon=1.0, gamma=1.0, seed=0)
    collector.step(cached)
    c = cached.cache
    assert (c.lookups, c.evaluated, c.hits_batch, c.hits_cache) == (1152, 9, 1143, 0)
    assert len(inner.calls) == 1 and len(inner.calls[0]) == 9
    seen = {bytes(o) for o in inner.calls[0].astype(np.uint8)}
    for _ in range(12):
        before = (c.lookups, c.evaluated, c.hits_cache)
        probe = Counted(lambda x: cached(x))
        collector.step(probe)
        asked = [bytes(o) for o in probe.calls[0].astype(np.uint8)]
        new = set(asked) - seen
        assert c.lookups - before[0] == len(asked)
        assert c.evaluated - before[1] == len(new)
        assert c.hits_cache - before[2] == sum(a in seen for a in asked)
        seen |= new
    assert c.hits_cache > 0 and c.size == len(seen)


@pytest.mark.parametrize("game,persist", [(TTT, True), (TTT, False), (C4, True)])
def test_avi_rows_are_bitwise_those_of_the_uncached_run(game, persist):
    plain = AviCollector(game, 64, epsilon=0.3, gamma=0.99, seed=1)
    cached_run = AviCollector(game, 64, epsilon=0.3, gamma=0.99, seed=1)
    cached = CachedValueFn(hashed_value, persist=persist)
    for _ in range(40):
        a, b = plain.step(hashed_value), cached_run.step(cached)
        np.testing.assert_array_equal(a["obs"], b["obs"])
        np.testing.assert_array_equal(a["target"], b["target"])
    assert cached.cache.evaluated < cached.cache.lookups
    if not persist:
        assert cached.cache.hits_cache == 0


def preset_value_function(game, name):
    torch.manual_seed(0)
    vf = ValueFunction(game, PRESET_NETWORKS[name])
    vf.set_weights(numpy_weights(build_network(game, PRESET_NETWORKS[name])), version=0)
    return vf


@pytest.mark.parametrize("name", ["tictactoe", "connect4"])
def test_real_network_answers_match_the_uncached_network(name):
    """Over 8 AVI steps with the preset network, every answer of the cache is within 1e-6
    of the network on the same inputs in one uncached batch. Not bitwise: the matrix
    kernels round a row by its place in the batch (at most 1e-7 measured, in a few rows
    of a thousand, with or without the cache); values lie in [-1, 1], so 1e-6 is about
    ten units in the last place and far below any difference that matters to a target."""
    game = games.make(name)
    vf = preset_value_function(game, name)
    cached = CachedValueFn(vf)
    asked, answered = [], []

    def recording(obs):
        out = cached(obs)
        asked.append(obs.copy())
        answered.append(out.copy())
        return out

    collector = AviCollector(game, 32, epsilon=0.3, gamma=1.0, seed=0)
    collector.collect(recording, 8)
    assert vf.samples_forward == cached.cache.evaluated * 2 ** (name == "connect4")  # mirror images
    assert cached.cache.hit_rate > 0.2
    obs, got = np.concatenate(asked), np.concatenate(answered)
    np.testing.assert_allclose(got, vf(obs), rtol=0, atol=1e-6)


def test_a_new_weight_version_clears_the_cache():
    inner = Counted(hashed_value, version=0)
    cached = CachedValueFn(inner)
    obs = TTT.encode(TTT.from_moves([[4], [0], [4, 0]]))
    first = cached(obs)
    assert cached.cache.size == 3 and cached(obs).tolist() == first.tolist() and len(inner.calls) == 1
    inner.fn, inner.version = (lambda x: -hashed_value(x)), 1  # new weights
    np.testing.assert_array_equal(cached(obs), -first)  # no stale answer
    assert len(inner.calls) == 2 and cached.cache.size == 3


def test_memory_stays_within_max_entries_and_answers_stay_right():
    cached = CachedValueFn(hashed_value, max_entries=50)
    rng = np.random.default_rng(0)
    for n in (30, 30, 10, 120, 7):  # the fourth call is larger than the table
        obs = (rng.random((n, 2, 6, 7)) < 0.5).astype(np.float32)
        obs = np.concatenate([obs, obs[: n // 3]])  # with repeats
        np.testing.assert_array_equal(cached(obs), hashed_value(obs))
        assert cached.cache.size <= 50
    assert cached.cache.max_entries == 50 and cached.cache.flushes >= 2
    assert cached.cache.keys.shape[0] == 50 and cached.cache.slots.size <= 128


def hashed_evaluator(game):
    """Logits and value as batch-invariant functions of the encoding."""
    def evaluate(states):
        obs = game.encode(states)
        v = hashed_value(obs)
        logits = np.stack([hashed_value(obs + a) for a in range(game.num_actions)], axis=1)
        return logits, v
    return evaluate


def test_mcts_with_the_cache_searches_exactly_as_without():
    """Same visits, policy, moves and root values; 16 trees from the empty board make
    1 root evaluation instead of 16, and repeated positions across trees are shared."""
    inner = Counted(hashed_evaluator(C4))
    cached = CachedEvaluator(C4, inner, persist=False)
    roots = C4.init(16)
    mcts = MCTS(C4, MCTSConfig(simulations=24))
    a = mcts.search(roots, hashed_evaluator(C4), np.random.default_rng(3))
    b = mcts.search(roots, cached, np.random.default_rng(3))
    for field in ("visits", "policy", "action", "root_value"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert a.evaluations == b.evaluations
    assert len(inner.calls[0][0]) == 1  # the 16 roots: one evaluation
    assert cached.cache.evaluated < 0.6 * cached.cache.lookups


def test_alphazero_rows_with_a_persistent_cache_equal_the_uncached_rows():
    config = MCTSConfig(simulations=16)
    plain = AlphaZeroCollector(TTT, 8, mcts=config, seed=0)
    cached_run = AlphaZeroCollector(TTT, 8, mcts=config, seed=0)
    cached = CachedEvaluator(TTT, hashed_evaluator(TTT))
    a, b = plain.collect(hashed_evaluator(TTT), 12), cached_run.collect(cached, 12)
    assert len(a["target"]) > 0
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert cached.cache.hits_cache > 0  # later searches re-met earlier positions


def test_real_policy_value_network_through_the_cache():
    from inference.network import NetworkEvaluator

    config = dataclasses.replace(PRESET_NETWORKS["connect4"], policy_head=True)
    net = NetworkEvaluator(C4, config)
    torch.manual_seed(0)
    net.set_weights(numpy_weights(build_network(C4, config)), version=0)
    cached = CachedEvaluator(C4, net)
    states = C4.from_moves(random_move_lists(C4, 40, np.random.default_rng(0), max_plies=6) * 2)
    logits, values = cached(states)
    ref_logits, ref_values = net(states)
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=1e-6)
    np.testing.assert_allclose(logits, ref_logits, rtol=0, atol=1e-5)  # logits are not in [-1, 1]
    assert cached.cache.evaluated <= 40 and cached.version == 0


def test_the_cache_takes_no_empty_or_bad_arguments():
    assert CachedValueFn(hashed_value)(np.zeros((0, 2, 3, 3), np.float32)).shape == (0,)
    with pytest.raises(ValueError, match="max_entries"):
        EvaluationCache(max_entries=0)


def test_the_actor_option():
    from actors.pool import SelfPlayWorker

    from actors.config import SelfPlayConfig
    from inference.game_network import GameNetwork

    def worker(algo="avi", **config):
        network = dataclasses.replace(PRESET_NETWORKS["tictactoe"], policy_head=algo != "avi")
        return SelfPlayWorker(game_network=GameNetwork(game="tictactoe", network=network),
                              algo=algorithms.descriptor(algo), seed=0,
                              index=0, replay=None,
                              config=SelfPlayConfig(num_envs=4, mcts=MCTSConfig(simulations=2), **config))

    with pytest.raises(ValueError, match="eval_cache"):
        worker(eval_cache="sometimes")
    assert isinstance(worker().value_fn, CachedValueFn)  # on by default for AVI
    assert isinstance(worker(eval_cache="off").value_fn, ValueFunction)
    assert not isinstance(worker("alphazero").value_fn, CachedEvaluator)  # off for AlphaZero
    assert isinstance(worker("alphazero", eval_cache="cache").value_fn, CachedEvaluator)


def test_images_under_the_symmetries_share_one_entry():
    """With ``symmetries``, a Connect Four position and its mirror image are one entry (the
    second is a hit, answered with the first's value); without, two. A function that is
    not invariant shows which answer was given."""
    from search.cache import CachedValueFn
    game = games.make("connect4")
    state = game.from_moves([[0, 1, 0], [6, 5, 6]])  # mirror images of each other
    obs = game.encode(state)
    assert np.array_equal(obs[1], obs[0][..., ::-1]) and not np.array_equal(obs[0], obs[1])
    calls = []

    def lopsided(x):  # not invariant: the left half's stones count, the right's do not
        calls.append(len(x))
        return x[..., :3].sum(axis=tuple(range(1, x.ndim))).astype(np.float32)

    images = [s.obs for s in game.symmetries()]
    shared = CachedValueFn(lopsided, symmetries=images)
    out = shared(obs)
    assert calls == [1] and out[0] == out[1] and shared.cache.evaluated == 1 and shared.cache.lookups == 2
    calls.clear()
    plain = CachedValueFn(lopsided)
    out = plain(obs)
    assert calls == [2] and out[0] != out[1]
