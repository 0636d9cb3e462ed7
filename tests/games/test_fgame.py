"""F-Game tests: exhaustive negamax consistency on small trees, the generator's
distributions, an independent pure-Python generator as reference, and the batched API.

The contract-wide checks (legal masks, determinism of play, from_moves, ...) run in
test_conformance.py; here are the F-Game specifics.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import games
from games.testing import assert_expand_matches_step
from games import random_legal_actions, take

SMALL = [(4, 3), (6, 2)]  # (depth, branching) of trees enumerated node by node

# ---------------------------------------------------------------- reference generator
# A slow, independent transcription of the generator spelled out in games/fgame.py's
# header, with Python integers; it pins the hash layout so that saved datasets of
# paths keep their values.

MASK = (1 << 64) - 1
GOLDEN, ROOT_SALT = 0x9E3779B97F4A7C15, 0x2545F4914F6CDD1D
SPECIAL_SALT, VALUE_SALT, LEAF_SALT = 0x5851F42D4C957F2D, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F


def ref_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def ref_below(x, n):
    return ((x >> 32) * n) >> 32


def ref_tree(depth, branching, beta, seed):
    """{path tuple: (value for the mover, is a leaf)} of every node, built top-down."""
    nodes = {}

    def grow(path, key, value, leaf):
        nodes[path] = (value, leaf)
        if leaf:
            return
        special = ref_below(ref_mix(key ^ SPECIAL_SALT), branching)
        for a in range(branching):
            child = ref_mix((key + (a + 1) * GOLDEN) & MASK)
            if a == special:
                v = -value
            else:
                allowed = [x for x in (-1, 0, 1) if x >= -value]  # mu restricted to [-v, 1]
                v = allowed[ref_below(ref_mix(child ^ VALUE_SALT), len(allowed))]
            early = (ref_mix(child ^ LEAF_SALT) >> 11) / 2.0**53 < beta
            grow(path + (a,), child, v, len(path) + 1 == depth or early)

    grow((), ref_mix(seed ^ ROOT_SALT), 1, False)
    return nodes


# ------------------------------------------------------------------------ helpers


def levels(game):
    """Breadth-first walk of the whole tree: per depth, (parents, expansion) where the
    parents are that depth's inner nodes."""
    parents = game.init(1)
    while len(parents.over):
        exp = game.expand(parents)
        yield parents, exp
        children = exp.children
        parents = take(children, exp.legal.reshape(-1) & ~children.over)


def engine_tree(game):
    """{path tuple: (value, is a leaf)} of every node, from the engine's expansions."""
    nodes = {(): (int(game.value(game.init(1))[0]), False)}
    for _parents, exp in levels(game):
        ch = exp.children
        for row in np.flatnonzero(exp.legal.reshape(-1)):
            path = tuple(int(a) for a in ch.path[row, : ch.length[row]])
            nodes[path] = (int(ch.value[row]), bool(ch.over[row]))
    return nodes


def play_random(game, batch, rng, first_player_optimal=False):
    """Random games from the root, all to the end: (outcome for the first player [B],
    plies [B])."""
    state = game.init(batch)
    outcome, plies = np.zeros(batch), np.zeros(batch, np.int64)
    for ply in range(game.max_length):
        live = ~game.terminal(state)
        if not live.any():
            break
        mask = game.optimal_actions(state) if first_player_optimal and ply % 2 == 0 else game.legal(state)
        leaf_values = game.child_values(state)
        actions = random_legal_actions(mask, rng)
        state, reward, done = games.step_live(game, state, actions, live)
        # A finished game's reward is the negated value of the leaf entered.
        np.testing.assert_array_equal(reward[done], -leaf_values[done, actions[done]])
        assert not reward[~done].any()
        outcome[done] = reward[done] * (1 if ply % 2 == 0 else -1)
        plies[done] = ply + 1
    assert game.terminal(state).all(), "a game outlived the tree's height"
    return outcome, plies


# -------------------------------------------------------------- the generated trees


@pytest.mark.parametrize("depth,branching", SMALL)
@pytest.mark.parametrize("beta", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_engine_tree_equals_reference_generator(depth, branching, beta, seed):
    game = games.make("fgame", depth=depth, branching=branching, beta=beta, seed=seed)
    assert engine_tree(game) == ref_tree(depth, branching, beta, seed)


@pytest.mark.parametrize("depth,branching", SMALL)
@pytest.mark.parametrize("beta", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_values_are_the_minimax_of_the_leaves(depth, branching, beta, seed):
    """Every inner node's value is what negamax search over the leaves alone gives,
    the root's is +1, leaves sit at depth h or (beta > 0) earlier, never at the root."""
    game = games.make("fgame", depth=depth, branching=branching, beta=beta, seed=seed)
    nodes = engine_tree(game)

    def negamax(path):
        value, leaf = nodes[path]
        if leaf:
            return value
        return max(-negamax(path + (a,)) for a in range(branching))

    for path, (value, leaf) in nodes.items():
        assert value == negamax(path), f"node {path}"
        assert leaf == (len(path) == depth) or (beta > 0 and leaf and 0 < len(path) < depth), f"node {path}"
        if not leaf:  # the special child carries -v
            assert any(nodes[path + (a,)][0] == -value for a in range(branching)), f"node {path}"
    assert nodes[()] == (1, False)
    if beta == 0:
        assert len(nodes) == sum(branching**d for d in range(depth + 1))


@pytest.mark.parametrize("depth,branching", SMALL)
def test_child_values_optimal_actions_and_rewards(depth, branching):
    game = games.make("fgame", depth=depth, branching=branching, beta=0.3, seed=3)
    for parents, exp in levels(game):
        child_value = exp.children.value.reshape(-1, branching)  # [B, A]
        np.testing.assert_array_equal(game.child_values(parents), child_value)
        np.testing.assert_array_equal(game.optimal_actions(parents), -child_value == parents.value[:, None])
        # Entering a leaf pays the mover the negated leaf value; nothing else pays.
        np.testing.assert_array_equal(exp.done, exp.children.over.reshape(-1, branching))
        np.testing.assert_array_equal(exp.reward, np.where(exp.done, -child_value, 0))
    leaves = take(exp.children, exp.children.over)
    np.testing.assert_array_equal(game.value(leaves), leaves.value)
    assert not game.child_values(leaves).any() and not game.optimal_actions(leaves).any()


def test_seeds_give_different_trees_and_same_seed_the_same():
    def tree(seed):
        return engine_tree(games.make("fgame", depth=4, branching=3, beta=0.3, seed=seed))

    assert tree(5) == tree(5)
    trees = [tree(s) for s in range(4)]
    assert all(trees[i] != trees[j] for i in range(4) for j in range(i))


def test_the_first_player_wins_with_optimal_play():
    """Root value +1: optimal moves win against any opponent, here a random one."""
    rng = np.random.default_rng(0)
    for depth, branching in [(10, 5), (20, 2), (5, 20)]:
        game = games.make("fgame", depth=depth, branching=branching, seed=11)
        outcome, _ = play_random(game, 256, rng, first_player_optimal=True)
        assert (outcome == 1).all(), (depth, branching)


# ------------------------------------------------------------ generator statistics


def test_child_value_distribution_given_the_parent():
    """Children of v = +1 are -1 (special) plus b - 1 uniform on {-1, 0, 1}; of v = 0:
    one 0 plus uniform on {0, 1}; of v = -1: all +1. The special child's index is uniform."""
    b = 5
    game = games.make("fgame", depth=6, branching=b, beta=0.0, seed=4)
    by_parent = {v: [] for v in (-1, 0, 1)}
    for parents, exp in levels(game):
        child_value = exp.children.value.reshape(-1, b)
        for v in (-1, 0, 1):
            by_parent[v].append(child_value[parents.value == v])
    by_parent = {v: np.concatenate(x) for v, x in by_parent.items()}  # [n_v, b]
    assert (by_parent[-1] == 1).all() and len(by_parent[-1]) > 100

    for v, allowed in [(1, (-1, 0, 1)), (0, (0, 1))]:
        kids = by_parent[v]
        n = kids.size
        assert np.isin(kids, allowed).all() and ((kids == -v).sum(axis=1) >= 1).all()
        for x in allowed:
            p = ((x == -v) + (b - 1) / len(allowed)) / b
            sigma = np.sqrt(p * (1 - p) / n)
            assert abs((kids == x).mean() - p) < 5 * sigma, (v, x, (kids == x).mean(), p)
        # Per action index, the frequency of -v is the same: no index is favoured as special.
        p = (1 + (b - 1) / len(allowed)) / b
        per_index = (kids == -v).mean(axis=0)  # [b]
        assert np.all(np.abs(per_index - p) < 5 * np.sqrt(p * (1 - p) / len(kids))), per_index


def test_early_leaf_frequency_matches_beta():
    beta, depth, b = 0.3, 10, 4
    game = games.make("fgame", depth=depth, branching=b, beta=beta, seed=9)
    done = [exp.done[parents.length < depth - 1] for parents, exp in levels(game)]
    done = np.concatenate([d.reshape(-1) for d in done])  # children above the last level
    sigma = np.sqrt(beta * (1 - beta) / done.size)
    assert done.size > 10_000 and abs(done.mean() - beta) < 5 * sigma, (done.mean(), done.size)


def test_root_never_ends_even_with_beta_one():
    game = games.make("fgame", depth=5, branching=3, beta=1.0)
    root = game.init(2)
    assert not game.terminal(root).any() and game.legal(root).all()
    exp = game.expand(root)
    assert exp.done.all() and (exp.reward == -exp.children.value.reshape(2, 3)).all()
    assert (exp.reward.max(axis=1) == 1).all()  # the special child is a lost leaf for the opponent


# ------------------------------------------------------------------ batched API


@pytest.mark.parametrize("depth,branching", [(20, 2), (5, 20), (10, 5)])
def test_paper_shapes_play_random_games_fast(depth, branching):
    game = games.make("fgame", depth=depth, branching=branching, seed=1)
    rng = np.random.default_rng(depth)
    play_random(game, 64, rng)  # compile
    start = time.perf_counter()
    outcome, plies = play_random(game, 1024, rng)
    assert time.perf_counter() - start < 2.0
    assert set(np.unique(outcome)) <= {-1, 0, 1} and (plies >= 1).all() and (plies <= depth).all()
    # With beta = 0.05 many games reach the full height, some end early.
    assert (plies == depth).any() and (plies < depth).any()


@pytest.mark.parametrize("depth,branching", [(5, 20), (20, 2)])
def test_expand_equals_stepping_each_action(depth, branching):
    game = games.make("fgame", depth=depth, branching=branching, beta=0.2, seed=2)
    rng = np.random.default_rng(0)
    # Random walks from the root, each stopping at its own target length or a leaf.
    state, target = game.init(40), rng.integers(0, depth, 40)
    for _ in range(depth):
        moving = ~state.over & (state.length < target)
        if not moving.any():
            break
        actions = np.zeros(len(moving), np.int64)
        actions[moving] = rng.integers(0, branching, moving.sum())  # the draws of the moving walks only
        state, _, _ = games.step_live(game, state, actions, moving)
    assert state.over.any() and (~state.over).any()
    exp = game.expand(state)
    assert exp.legal.sum(axis=1).tolist() == [0 if o else branching for o in state.over]
    assert_expand_matches_step(game, state)


def test_encode_is_the_one_hot_action_sequence():
    game = games.make("fgame", depth=6, branching=3, beta=0.0, seed=0)
    moves = [[], [2], [0, 1, 2, 2], [1, 0, 1, 0, 2, 2]]
    obs = game.encode(game.from_moves(moves))
    assert obs.shape == (4, 6, 4) and obs.dtype == np.float32 and game.obs_shape == (6, 4)
    assert (obs.sum(axis=2) == 1).all()
    for i, m in enumerate(moves):
        expected = np.zeros((6, 4), np.float32)
        expected[np.arange(6), m + [3] * (6 - len(m))] = 1  # 3 = the "unknown" token
        np.testing.assert_array_equal(obs[i], expected)


def test_render_names_and_metadata():
    game = games.make("fgame")
    assert game.params == {"depth": 10, "branching": 5, "beta": 0.05, "seed": 0}
    assert (game.num_actions, game.max_length, game.obs_shape) == (5, 10, (10, 6))
    assert [s.name for s in game.symmetries()] == ["identity"]
    state = game.init(1)
    for _ in range(3):  # three plies, each into the last child that is not a leaf
        exp = game.expand(state)
        state = take(exp.children, [np.flatnonzero(~exp.done[0])[-1]])
    moves = " ".join(str(a) for a in state.path[0, :3])
    text = game.render(state, 0)
    assert moves in text and "3/10" in text and f"{int(state.value[0]):+d}" in text
    assert game.action_name(4) == "4"


@pytest.mark.parametrize("params,name", [
    ({"depth": 0}, "depth"), ({"depth": 128}, "depth"), ({"depth": 2.5}, "depth"),
    ({"branching": 1}, "branching"), ({"branching": 200}, "branching"),
    ({"beta": -0.1}, "beta"), ({"beta": 1.5}, "beta"), ({"beta": "x"}, "beta"),
    ({"seed": -1}, "seed"), ({"seed": 1.0}, "seed"),
])
def test_invalid_parameters_raise(params, name):
    with pytest.raises(ValueError, match=rf"fgame: {name} must be"):
        games.make("fgame", **params)
