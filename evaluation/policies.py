"""Policies and value functions for evaluation, behind two plain callables:

    choose(states) -> int64[B]      a move for each live state (a policy)
    value(states)  -> float32[B]    a value for the player to move

so the metrics take any of: the greedy one-step policy of a value network (AVI's
G(V)), the argmax of a policy head, MCTS (``search.mcts``) or minimax over a value
network (``search.minimax``). MCTS may take its prior from a second network and its
leaf values from the first: the AVI paper's cross-inference (section 4.3, Figure 2), a
diagnostic that keeps AlphaZero's policy and search fixed and swaps the value. The
network itself is ``evaluation.network.NetworkModel``; this module needs no torch.

The greedy policy and the searches also answer ``choose.think(state) -> (action, info)``
on a one-state batch: the move with the reasoning the board shows (``board.agents``).
Which policy a name plays, and what it needs, is ``evaluation.policy_registry``'s.
"""

from __future__ import annotations

from collections.abc import Callable
import numpy as np

from evaluation.exact import greedy_q
from games import Game
from search.gumbel import GumbelConfig, GumbelMCTS
from search.mcts import MCTS, MCTSConfig
from search.minimax import minimax_actions
from search.reuse import TreeReuse

Choose = Callable[[object], np.ndarray]  # state batch B -> int64[B]
Value = Callable[[object], np.ndarray]  # state batch B -> float32[B]


def state_value(game: Game, value_obs: Callable[[np.ndarray], np.ndarray]) -> Value:
    """A value of states from a value of encodings (``inference.network.ValueFunction``,
    ``evaluation.network.NetworkModel.value_obs``)."""
    return lambda states: np.asarray(value_obs(game.encode(states)), np.float32)


def per_legal_action(row: np.ndarray, legal: np.ndarray, digits: int = 4) -> dict:
    """``{"action": value}`` of ``row`` [A] over the ``legal`` [A] actions (JSON for the board)."""
    return {str(int(a)): round(float(row[a]), digits) for a in np.flatnonzero(legal)}


def greedy_policy(game: Game, value_obs: Callable[[np.ndarray], np.ndarray], gamma: float = 1.0) -> Choose:
    """AVI's G(V): argmax_a r(s, a) - gamma V(f(s, a)), one batched network call over
    every live child; ties go to the lowest action. ``think`` shows every child's value."""
    def choose(states):
        return greedy_q(game, states, value_obs, gamma).argmax(axis=1).astype(np.int64)

    def think(state) -> tuple[int, dict]:
        legal = game.legal(state)[0]  # [A]
        q = greedy_q(game, state, value_obs, gamma)[0]  # [A], -inf where illegal
        return int(q.argmax()), {"kind": "values", "values": per_legal_action(q, legal)}

    choose.think = think
    return choose


def policy_head_policy(game: Game, model) -> Choose:
    """argmax of the policy head's logits over the legal moves (``model``: an
    ``evaluation.network.NetworkModel``)."""
    if not model.has_policy:
        raise ValueError(f"{game.name}: the network has no policy head; the policy-head policy needs one")

    def choose(states):
        logits = np.where(game.legal(states), model.logits(states), -np.inf)
        return logits.argmax(axis=1).astype(np.int64)

    return choose


def _search_policy(search, evaluate, seed: int, reuse: bool, name: str, improved_policy: bool = False) -> Choose:
    """``choose`` playing ``search``'s move; with ``reuse`` each search starts from the
    subtree the previous moves' searches kept of its position (``search.reuse``), and the
    ``TreeReuse`` is ``choose.reuse`` (None without). ``think`` shows the prior, the
    visits and the root value (the board draws every search so, as "mcts", with the
    search's ``name``), and with ``improved_policy`` the search's policy target (Gumbel's
    improved policy, which is not the visits')."""
    rng = np.random.default_rng(seed)
    trees = TreeReuse() if reuse else None
    game = search.game

    def choose(states):
        return np.asarray(search.search(states, evaluate, rng, reuse=trees).action, np.int64)

    def think(state) -> tuple[int, dict]:
        legal = game.legal(state)[0]  # [A]
        logits, _ = evaluate(state)
        logits = np.where(legal, logits[0], -np.inf)
        prior = np.exp(logits - logits.max())
        prior /= prior.sum()
        result = search.search(state, evaluate, rng, reuse=trees)
        info = {"kind": "mcts", "search": name, "prior": per_legal_action(prior, legal),
                "visits": {k: int(v) for k, v in per_legal_action(result.visits[0], legal).items()},
                "root_value": round(float(result.root_value[0]), 4)}
        if improved_policy:
            info["policy"] = per_legal_action(result.policy[0], legal)
        return int(result.action[0]), info

    choose.reuse, choose.think = trees, think
    return choose


def mcts_policy(game: Game, evaluate, *, simulations: int = 64, c_puct: float = 3.0, c_init: float = 1.25,
                c_base: float = 0.0, seed: int = 0, reuse: bool = False) -> Choose:
    """``search.mcts.MCTS`` without root noise, playing the most visited move;
    ``evaluate(states) -> (logits, values)`` is e.g. ``NetworkModel.evaluate``. ``reuse``:
    tree reuse between moves (``search.reuse``); off by default, so that the move is a
    function of the position alone and a suite's results do not depend on its batching."""
    mcts = MCTS(game, MCTSConfig(simulations=simulations, c_puct=c_puct, c_init=c_init, c_base=c_base,
                                 noise_fraction=0.0, temperature=0.0))
    return _search_policy(mcts, evaluate, seed, reuse, "mcts")


def gumbel_policy(game: Game, evaluate, *, simulations: int = 64, seed: int = 0, reuse: bool = False) -> Choose:
    """Gumbel AlphaZero's search (``search.gumbel``) without Gumbel noise (the paper's
    setting for evaluation), playing its Sequential Halving winner; ``reuse`` as
    :func:`mcts_policy`'s."""
    search = GumbelMCTS(game, MCTSConfig(simulations=simulations), GumbelConfig(gumbel_scale=0.0))
    return _search_policy(search, evaluate, seed, reuse, "gumbel", improved_policy=True)


def cross_evaluator(value_model, prior_model):
    """The search's evaluator with the prior of ``prior_model`` (its policy head's
    logits) and the leaf values of ``value_model`` (clipped to [-1, 1]): two backbone
    evaluations per position, both counted by their models."""
    if not prior_model.has_policy:
        raise ValueError("cross-inference: the prior network has no policy head (an AlphaZero or AZAL "
                         "checkpoint gives the prior; the value may come from any network)")

    def evaluate(states):
        return prior_model.logits(states), np.clip(value_model.value(states), -1.0, 1.0)

    return evaluate


def minimax_policy(game: Game, value_obs, *, depth: int = 2, gamma: float = 1.0, seed: int = 0) -> Choose:
    """``search.minimax.minimax_actions`` to ``depth`` plies over a value of encodings."""
    rng = np.random.default_rng(seed)
    return lambda states: minimax_actions(game, states, value_obs, depth, rng, gamma)
