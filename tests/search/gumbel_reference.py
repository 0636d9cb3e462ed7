"""Reference answers of mctx (DeepMind's JAX MCTS library, the Gumbel paper's own
implementation) for tests/search/test_gumbel.py, written to data/gumbel_mctx.npz (the
search's pieces) and data/gumbel_mctx_search.npz (whole searches).

mctx and JAX are not dependencies of this project (JAX's CPU build alone is ~90 MB), so
the answers are computed once and committed; to compute them again, in any environment
with mctx (tested with mctx 0.0.71, jax 0.10.2):

    python -m venv /tmp/mctxenv && /tmp/mctxenv/bin/pip install mctx "jax[cpu]"
    /tmp/mctxenv/bin/python tests/search/gumbel_reference.py            # both files
    /tmp/mctxenv/bin/python tests/search/gumbel_reference.py search     # or one: pieces, search

Inputs are random (seeded) and written beside the answers, so the test feeds our code
exactly what mctx saw:
- ``schedule/m{m}_n{n}``: Sequential Halving's considered visits;
- ``q/*``: one node per tree (B trees, A actions) with random prior logits (some actions
  invalid), visit counts (some zero), children values and rewards, and raw value:
  ``qtransform_completed_by_mix_value``, ``gumbel_muzero_interior_action_selection`` and
  the root's Sequential Halving score at each possible considered visit count;
- ``policy/*``: the final action and ``action_weights`` of ``gumbel_muzero_policy`` on a
  one-node search (1 simulation budget is not used: the summary of the given root stats
  is computed as mctx's policy does after its search).

and in gumbel_mctx_search.npz, whole runs of ``gumbel_muzero_policy`` on a synthetic
environment given as tables over K node ids (``env/*``): the child ``child[n, a]`` of node
``n`` by action ``a``, the reward of that move for its mover, whether it ends the game
(``done``: mctx's discount 0 on that edge, else -1), and each node's prior logits and
value. Nodes 0..B-1 are the B roots (``env/invalid`` [B, A]: their invalid actions); no
child is a root, and every action below the roots is valid (mctx masks only the root).
``gumbel`` [B, A] is the noise mctx drew (one key for every run), and for each simulation
budget n and ``max_num_considered_actions`` m, ``n{n}_m{m}/*`` holds the chosen
``action`` [B], the improved policy ``weights`` [B, A], the root's ``visits`` [B, A] and
the root's mean ``value`` [B].
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx
import numpy as np
from mctx._src import action_selection, seq_halving

OUT = Path(__file__).with_name("data") / "gumbel_mctx.npz"
OUT_SEARCH = Path(__file__).with_name("data") / "gumbel_mctx_search.npz"
B, A = 64, 7
# The whole searches: trees, actions, node ids, budgets, considered actions (16 > A: all).
SEARCH_B, SEARCH_A, SEARCH_K = 32, 8, 384
BUDGETS, CONSIDERED = (1, 2, 4, 8, 16, 32), (1, 2, 3, 4, 16)


def one_node_tree(prior_logits, visits, values, rewards, raw_value, invalid):
    """An mctx Tree whose root (node 0) has the given edge statistics; the children are
    not materialised (children_index -1), which qtransform and the selections never read."""
    b, a = prior_logits.shape
    n = 1
    f32 = jnp.float32
    return mctx.Tree(
        node_visits=jnp.asarray(visits.sum(1, keepdims=True) + 1, jnp.int32),
        raw_values=jnp.asarray(raw_value[:, None], f32),
        node_values=jnp.zeros((b, n), f32),
        parents=jnp.full((b, n), -1, jnp.int32),
        action_from_parent=jnp.full((b, n), -1, jnp.int32),
        children_index=jnp.full((b, n, a), -1, jnp.int32),
        children_prior_logits=jnp.asarray(prior_logits[:, None], f32),
        children_visits=jnp.asarray(visits[:, None], jnp.int32),
        children_rewards=jnp.asarray(rewards[:, None], f32),
        children_discounts=jnp.full((b, n, a), -1.0, f32),  # two players, zero sum
        children_values=jnp.asarray(values[:, None], f32),
        embeddings=jnp.zeros((b, n), f32),
        root_invalid_actions=jnp.asarray(invalid, f32),
        extra_data=None)


def pieces() -> None:
    rng = np.random.default_rng(2022)
    out: dict[str, np.ndarray] = {}
    for m in range(1, 17):
        for n in (1, 2, 3, 4, 8, 16, 32, 50, 64, 200):
            out[f"schedule/m{m}_n{n}"] = np.asarray(seq_halving.get_sequence_of_considered_visits(m, n), np.int32)

    invalid = rng.random((B, A)) < 0.25
    invalid[np.arange(B), rng.integers(A, size=B)] = False  # at least one legal action
    logits = rng.normal(0, 1.5, (B, A)).astype(np.float32)
    visits = np.where(invalid, 0, rng.integers(0, 6, (B, A)) * (rng.random((B, A)) < 0.6)).astype(np.int32)
    values = rng.uniform(-1, 1, (B, A)).astype(np.float32)
    rewards = np.where(rng.random((B, A)) < 0.2, rng.choice([-1.0, 0.0, 1.0], (B, A)), 0.0).astype(np.float32)
    raw_value = rng.uniform(-1, 1, B).astype(np.float32)
    gumbel = rng.gumbel(size=(B, A)).astype(np.float32)
    masked = np.where(invalid, -np.inf, logits)
    masked = (masked - masked.max(1, keepdims=True)).astype(np.float32)
    out.update({"q/invalid": invalid, "q/logits": masked, "q/visits": visits, "q/values": values,
                "q/rewards": rewards, "q/raw_value": raw_value, "q/gumbel": gumbel})

    tree = one_node_tree(masked, visits, values, rewards, raw_value, invalid)
    qtransform = mctx.qtransform_completed_by_mix_value
    completed = jax.vmap(qtransform, in_axes=[0, None])(tree, 0)
    out["q/completed"] = np.asarray(completed)
    key = jax.random.PRNGKey(0)
    interior = jax.vmap(functools.partial(action_selection.gumbel_muzero_interior_action_selection,
                                          qtransform=qtransform), in_axes=[None, 0, None, None])
    out["q/interior_action"] = np.asarray(interior(key, tree, 0, 0))
    # The root's score for each considered visit count 0..5 (every visit count present).
    scores = [seq_halving.score_considered(jnp.full((B, 1), v), jnp.asarray(gumbel), jnp.asarray(masked),
                                           completed, jnp.asarray(visits)) for v in range(6)]
    out["q/root_scores"] = np.stack([np.asarray(s) for s in scores])
    # gumbel_muzero_policy's ending: the action among the most visited, and the weights.
    considered_visit = jnp.max(jnp.asarray(visits), axis=-1, keepdims=True)
    to_argmax = seq_halving.score_considered(considered_visit, jnp.asarray(gumbel), jnp.asarray(masked), completed,
                                             jnp.asarray(visits))
    out["policy/action"] = np.asarray(action_selection.masked_argmax(to_argmax, jnp.asarray(invalid)))
    completed_logits = jnp.asarray(masked) + completed
    out["policy/weights"] = np.asarray(jax.nn.softmax(jnp.where(jnp.asarray(invalid), -jnp.inf, completed_logits)))
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"{OUT}: {len(out)} arrays, mctx {mctx.__version__}, jax {jax.__version__}")


def search_environment(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The tables of the synthetic environment (see the module docstring)."""
    b, a, k = SEARCH_B, SEARCH_A, SEARCH_K
    invalid = rng.random((b, a)) < 0.3
    invalid[np.arange(b), rng.integers(a, size=b)] = False  # at least one valid action
    invalid[0] = True
    invalid[0, 3] = False  # one root with a single valid action
    invalid[1] = [False, True] * (a // 2)  # one with two
    done = rng.random((k, a)) < 0.12
    reward = np.where(done, rng.choice([-1.0, 0.0, 1.0], (k, a)),
                      np.where(rng.random((k, a)) < 0.3, rng.uniform(-0.3, 0.3, (k, a)), 0.0))
    return {"env/child": rng.integers(b, k, (k, a)).astype(np.int16),  # never a root
            "env/reward": reward.astype(np.float32), "env/done": done,
            "env/logits": rng.normal(0, 1.5, (k, a)).astype(np.float32),
            "env/value": rng.uniform(-1, 1, k).astype(np.float32), "env/invalid": invalid}


def whole_search() -> None:
    env = search_environment(np.random.default_rng(40))
    child, reward, done = (jnp.asarray(env[f"env/{name}"]) for name in ("child", "reward", "done"))
    logits, value = jnp.asarray(env["env/logits"]), jnp.asarray(env["env/value"])
    roots = jnp.arange(SEARCH_B, dtype=jnp.int32)

    def recurrent_fn(params, rng_key, action, node):
        """One move from the nodes ``node`` [B]: two players, zero sum (discount -1), a
        move that ends the game has discount 0 (what follows it counts for nothing)."""
        del params, rng_key
        nxt = child[node, action].astype(jnp.int32)
        out = mctx.RecurrentFnOutput(reward=reward[node, action], discount=jnp.where(done[node, action], 0.0, -1.0),
                                     prior_logits=logits[nxt], value=value[nxt])
        return out, nxt

    root = mctx.RootFnOutput(prior_logits=logits[roots], value=value[roots], embedding=roots)
    invalid = jnp.asarray(env["env/invalid"])
    key = jax.random.PRNGKey(40)
    out = dict(env)
    for n in BUDGETS:
        for m in CONSIDERED:
            policy = jax.jit(functools.partial(mctx.gumbel_muzero_policy, num_simulations=n,
                                               max_num_considered_actions=m, recurrent_fn=recurrent_fn))
            result = policy(None, key, root, invalid_actions=invalid)
            gumbel = np.asarray(result.search_tree.extra_data.root_gumbel)
            if "gumbel" not in out:
                out["gumbel"] = gumbel
            assert np.array_equal(out["gumbel"], gumbel)  # one key, the same noise in every run
            summary = result.search_tree.summary()
            out[f"n{n}_m{m}/action"] = np.asarray(result.action, np.int8)
            out[f"n{n}_m{m}/weights"] = np.asarray(result.action_weights, np.float32)
            out[f"n{n}_m{m}/visits"] = np.asarray(summary.visit_counts, np.int8)
            out[f"n{n}_m{m}/value"] = np.asarray(summary.value, np.float32)
    np.savez_compressed(OUT_SEARCH, **out)
    print(f"{OUT_SEARCH}: {len(out)} arrays, mctx {mctx.__version__}, jax {jax.__version__}")


if __name__ == "__main__":
    chosen = sys.argv[1:] or ["pieces", "search"]
    if "pieces" in chosen:
        pieces()
    if "search" in chosen:
        whole_search()
