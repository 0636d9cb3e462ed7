"""End-to-end AlphaZero on a real Ray: MCTS self-play actors, replay of finished games,
the policy-value learner; tic-tac-toe learned to perfect play against a perfect player."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from evaluation.exact import enumerate_and_solve, sample_random_play_states
from evaluation.checkpoints import read_checkpoint
from launch.config import resolve
from launch.metrics import read_metrics
from launch.train import train
from learner.checkpoint import latest_checkpoint
from inference.tensors import numpy_weights
from inference.networks import build_network
from search.mcts import MCTS, MCTSConfig
from inference.network import NetworkEvaluator


def losses_against_a_perfect_player(game, q_star_of, choose) -> dict:
    """Every game of the agent ``choose(states) -> actions`` against a perfect player
    that tries *every* optimal reply, with the agent first and second: the number of
    games and of games the agent lost, per side."""
    out = {}
    for agent in (0, 1):
        frontier, ply, lost, played = game.init(1), 0, 0, 0
        while len(frontier[0]):
            if ply % 2 == agent:
                actions = choose(frontier)
                parents = np.arange(len(actions))
            else:  # the perfect player branches on all its optimal moves
                q = np.stack([q_star_of[k] for k in games.state_keys(frontier)])  # [N, A]
                best = np.isclose(q, q.max(axis=1, keepdims=True))
                parents, actions = np.nonzero(best)
            state, reward, done = game.step(games.take(frontier, parents), actions)
            if ply % 2 != agent:
                lost += int((done & (reward > 0)).sum())
            played += int(done.sum())
            frontier, ply = games.take(state, ~done), ply + 1
        out[f"lost_as_{'first' if agent == 0 else 'second'}"] = lost
        out[f"games_as_{'first' if agent == 0 else 'second'}"] = played
    return out


def untrained_mcts_agent(game, config):
    """The agent of these tests: MCTS with 64 simulations over the network, no noise, the
    most visited move; it starts with the learner's initial weights (torch seeded as the
    learner seeds it). Returns the evaluator (to load later weights into) and the policy."""
    evaluator = NetworkEvaluator(game, config.network)
    search = MCTS(game, MCTSConfig(simulations=64, noise_fraction=0.0, temperature=0.0))
    rng = np.random.default_rng(0)
    torch.manual_seed(config.seed)
    evaluator.set_weights(numpy_weights(build_network(game, config.network)), 0)
    return evaluator, lambda states: search.search(states, evaluator, rng).action


def load_latest_weights(evaluator, run_dir, game, version) -> None:
    """The weights of the run's newest checkpoint, into ``evaluator``."""
    _, _, weights, _ = read_checkpoint(latest_checkpoint(run_dir / "checkpoints"), game.name)
    evaluator.set_weights(weights, version)


def test_the_perfect_player_check_catches_a_weak_agent():
    game = games.make("tictactoe")
    labels = enumerate_and_solve(game)
    q_star_of = dict(zip(games.state_keys(labels.states), labels.q_star))
    first_legal = lambda s: game.legal(s).argmax(axis=1)  # plays the first free cell
    weak = losses_against_a_perfect_player(game, q_star_of, first_legal)
    assert weak["lost_as_first"] > 0 and weak["lost_as_second"] > 0
    perfect = lambda s: np.stack([q_star_of[k] for k in games.state_keys(s)]).argmax(axis=1)
    best = losses_against_a_perfect_player(game, q_star_of, perfect)
    assert best["lost_as_first"] == best["lost_as_second"] == 0 and best["games_as_second"] > 1


# Budgets in updates, not minutes: a loaded machine takes longer instead of failing.
# Measured: 320 updates (20 s unloaded).
@pytest.mark.parametrize("budget_updates,search", [(3200, []), (3200, ["actors.search=gumbel", "actors.mcts.simulations=16"])],
                         ids=["puct-64", "gumbel-16"])
def test_alphazero_learns_to_never_lose_tictactoe(ray_session, tmp_path, budget_updates, search):
    """Within the budget, the AlphaZero agent (MCTS with 64 simulations over the learned
    network, no noise, most visited move) loses no game against a perfect player that
    tries every optimal reply, moving first or second. Checked on the checkpoint that
    the run writes every 5 iterations; the run stops as soon as it holds. Trained with
    PUCT at 64 simulations, and with Gumbel AlphaZero's search at 16."""
    game = games.make("tictactoe")
    labels = enumerate_and_solve(game)
    q_star_of = dict(zip(games.state_keys(labels.states), labels.q_star))
    # One torch thread for the learner and the actor: tic-tac-toe's 64-wide MLP gains nothing
    # from a second (docs/benchmarks.md, Precision and threads on the CPU), and beside the run's
    # other processes on 2 cores a second thread slows every update and search.
    config = resolve("tictactoe", "paper", ["checkpoint_every=5", "evaluation.every=5", "learner.threads=1",
                                            "actors.threads=1", *search], algo="alphazero")
    evaluator, choose = untrained_mcts_agent(game, config)
    # The same search over the untrained network loses as second player: there is something to learn.
    untrained = losses_against_a_perfect_player(game, q_star_of, choose)
    assert untrained["lost_as_second"] > 0, untrained
    run_dir = tmp_path / "run"
    results = []

    def never_loses(record) -> bool:
        if record["iteration"] % 5:
            return False
        load_latest_weights(evaluator, run_dir, game, record["version"])
        result = losses_against_a_perfect_player(game, q_star_of, choose)
        results.append((record["updates"], round(record["elapsed"]), result))
        return result["lost_as_first"] == result["lost_as_second"] == 0

    run_dir, _ = train(config, run_dir=run_dir, updates=budget_updates, wandb_mode="disabled", stop=never_loses)
    print("updates, seconds, games against the perfect player:", results)
    assert results and results[-1][2]["lost_as_first"] == results[-1][2]["lost_as_second"] == 0, results
    records = read_metrics(run_dir)
    assert records[-1]["policy_loss"] < records[1]["policy_loss"]  # the policy head learned
    assert "eval/value_mae" in records[-1]


def chomp_match_rate(game, states, winning, choose) -> float:
    """AZAL's oracle-match rate: over the states that have winning moves, the fraction
    where ``choose`` plays one of them."""
    labelled = winning.any(axis=1)
    actions = choose(games.take(states, labelled))
    return float(winning[labelled][np.arange(len(actions)), actions].mean())


# Measured: 160 updates (24 s unloaded).
@pytest.mark.parametrize("budget_updates", [1600])
def test_azal_matches_the_grundy_oracle_on_chomp_5x6(ray_session, tmp_path, budget_updates):
    """AZAL on 5x6 Chomp: the agent (MCTS with 64 simulations over the learned network,
    no noise, most visited move) plays a Grundy-0-restoring move in more than 95% of
    the states sampled by random play that have one, within the budget."""
    from oracle_service.chomp_grundy import ChompTable

    game = games.make("chomp", rows=5, cols=6)
    states = sample_random_play_states(game, count=1000, seed=1)
    winning = ChompTable(5, 6).winning_actions_batch(np.asarray(states.profile))  # bool[N, A]
    assert 0.3 < winning.any(axis=1).mean() < 1.0
    config = resolve("chomp", "paper", ['game_params={"rows": 5, "cols": 6}', "actors.num_envs=64", "actors.collect_steps=16",
                                        "checkpoint_every=5", "evaluation.every=5"], algo="azal")
    evaluator, choose = untrained_mcts_agent(game, config)
    untrained = chomp_match_rate(game, states, winning, choose)
    assert untrained < 0.95
    run_dir = tmp_path / "run"
    rates = []

    def matches(record) -> bool:
        if record["iteration"] % 5:
            return False
        load_latest_weights(evaluator, run_dir, game, record["version"])
        rates.append((record["updates"], round(record["elapsed"]), chomp_match_rate(game, states, winning, choose)))
        return rates[-1][2] > 0.95

    run_dir, _ = train(config, run_dir=run_dir, updates=budget_updates, wandb_mode="disabled", stop=matches)
    print(f"untrained match rate {untrained:.3f}; (updates, seconds, match rate):", rates)
    assert rates and rates[-1][2] > 0.95, rates
    records = read_metrics(run_dir)
    assert sum(r.get("oracle_unique", 0) for r in records) > 0
    assert 0 < records[-1]["aux_labelled_fraction"] < 1 and records[-1]["aux_loss"] > 0


def test_azal_labels_every_ply_of_connect4_4x4_through_the_oracle_service(ray_session, tmp_path):
    """AZAL on a Connect Four board other than 7x6: the oracle service's replicas (Ray
    actors) answer its labels with that board's solver, every ply (no books, no store, so
    no min_ply), and the run's evaluation plays that board against the solver."""
    config = resolve("connect4", "paper", ['game_params={"width": 4, "height": 4}', "actors.num_envs=32",
                                           "actors.collect_steps=8", "actors.mcts.simulations=8",
                                           "learner.batch_size=64", "replay.shards=1", "evaluation.every=2",
                                           "checkpoint_every=2"], algo="azal")
    run_dir, last = train(config, run_dir=tmp_path / "run", updates=4 * config.updates_per_iteration,
                          wandb_mode="disabled")
    records = read_metrics(run_dir)
    assert last["updates"] == 4 * config.updates_per_iteration
    assert last["oracle/solved"] > 0 and last["oracle/errors"] == 0
    assert last["aux_labelled_fraction"] == 1.0 and last["aux_loss"] > 0
    assert any("eval/connect4-4x4-play/error_rate" in r for r in records)
