"""Reference answers of mctx (DeepMind's JAX MCTS library, the Gumbel paper's own
implementation) for tests/search/test_gumbel.py, written to data/gumbel_mctx.npz.

mctx and JAX are not dependencies of this project (JAX's CPU build alone is ~90 MB), so
the answers are computed once and committed; to compute them again, in any environment
with mctx (tested with mctx 0.0.71, jax 0.10.2):

    python -m venv /tmp/mctxenv && /tmp/mctxenv/bin/pip install mctx "jax[cpu]"
    /tmp/mctxenv/bin/python tests/search/gumbel_reference.py

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
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx
import numpy as np
from mctx._src import action_selection, seq_halving

OUT = Path(__file__).with_name("data") / "gumbel_mctx.npz"
B, A = 64, 7


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


def main() -> None:
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


if __name__ == "__main__":
    main()
