"""The policy registry (evaluation/policy_registry.py): a policy registered once is played
by the evaluator's suites, the board's agent and a GTP engine with no other edit; its
names, descriptions and the errors naming what a checkpoint lacks."""

from __future__ import annotations

import json

import numpy as np
import pytest

import games
from board.cli import build_table, play_parser
from board.session import Session
from evaluation import policy_registry
from evaluation.checkpoints import CheckpointMismatchError
from evaluation.config import EvaluationConfig
from evaluation.exact import enumerate_and_solve
from evaluation.network import NetworkModel
from evaluation.runner import evaluate_checkpoint
from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
from learner.learner import Learner
from inference.networks import NetworkConfig

VALUE_NET = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16)
FIRST_LEGAL = "first-legal"


def write_checkpoint(path, game, algo="avi", config=VALUE_NET):
    """An untrained network's checkpoint, as ``python -m launch`` saves one."""
    learner = Learner(game, config, device="cpu")
    save_run_checkpoint(path, RunCheckpoint(counters={"updates": 1}, learner=LearnerState(learner.state_dict(), {}),
                                            actors=[], faults={},
                                            config=json.dumps({"algo": algo, "game": game.name, "gamma": 1.0,
                                                               "game_params": game.params})))
    return path


def lowest_legal(game, states) -> np.ndarray:
    return game.legal(states).argmax(axis=1).astype(np.int64)


@pytest.fixture
def first_legal():
    """A policy that plays the lowest legal action, needing no network, registered for one test."""
    policy_registry.register(policy_registry.PolicyEntry(
        FIRST_LEGAL, "the lowest legal action", lambda inputs: lambda states: lowest_legal(inputs.game, states),
        needs=()))
    yield FIRST_LEGAL
    policy_registry.unregister(FIRST_LEGAL)


def test_the_registry_lists_and_describes_the_policies_and_names_what_is_missing():
    assert policy_registry.names() == ("greedy", "policy-head", "mcts", "gumbel", "minimax")
    assert policy_registry.choices() == ("auto", *policy_registry.names())
    assert "needs a network's policy head" in policy_registry.describe("policy-head")
    assert "settings simulations, seed, reuse" in policy_registry.describe("mcts")
    assert policy_registry.resolve("auto", True) == "policy-head" and policy_registry.resolve("auto", False) == "greedy"
    game = games.make("tictactoe")
    value_net = NetworkModel(game, VALUE_NET)
    with pytest.raises(ValueError, match=r"unknown policy 'telepathy'; known: greedy, policy-head, mcts"):
        policy_registry.make("telepathy", game, value_net)
    with pytest.raises(policy_registry.PolicyUnavailable,
                       match=r"policy-head needs a policy head; this checkpoint's network has none "
                             r"\(policies for a value network: greedy, mcts, gumbel, minimax\)"):
        policy_registry.make("policy-head", game, value_net)
    with pytest.raises(policy_registry.PolicyUnavailable, match="used by mcts only, not by the 'greedy' policy"):
        policy_registry.make("greedy", game, value_net, prior=value_net)
    with pytest.raises(policy_registry.PolicyUnavailable, match="no network is given"):
        policy_registry.make("greedy", game, None)
    with pytest.raises(ValueError, match="registered already"):
        policy_registry.register(policy_registry.PolicyEntry("mcts", "again", lambda inputs: None))
    with pytest.raises(ValueError, match=r"unknown needs \['telepathy'\]"):
        policy_registry.PolicyEntry("x", "x", lambda inputs: None, needs=("telepathy",))
    with pytest.raises(ValueError, match=r"unknown parameters \['budget'\]"):
        policy_registry.PolicyEntry("x", "x", lambda inputs: None, parameters=("budget",))
    oracle_player = policy_registry.PolicyEntry("oracle-player", "x", lambda inputs: None, needs=("oracle",))
    policy_registry.register(oracle_player)
    try:
        with pytest.raises(policy_registry.PolicyUnavailable, match="needs the game's exact oracle; none is given"):
            policy_registry.make("oracle-player", game, value_net)
    finally:
        policy_registry.unregister("oracle-player")
    assert "oracle-player" not in policy_registry.names()


def test_a_policy_head_asked_of_a_value_checkpoint_is_refused_naming_the_head(tmp_path):
    path = write_checkpoint(tmp_path / "ttt.pt", games.make("tictactoe"))
    with pytest.raises(CheckpointMismatchError, match="policy-head needs a policy head; this checkpoint's network"):
        evaluate_checkpoint(path, "tictactoe", evaluation=EvaluationConfig(policy="policy-head"))


def test_a_registered_policy_is_played_by_the_evaluators_suites(tmp_path, first_legal):
    """On Tic-tac-toe's states suite its regret is that of the lowest legal action against
    the enumerated labels; on Chomp's play suite (Tic-tac-toe has none) every move the
    agent made against the oracle is the lowest legal one."""
    tictactoe = games.make("tictactoe")
    path = write_checkpoint(tmp_path / "ttt.pt", tictactoe)
    metrics = evaluate_checkpoint(path, "tictactoe", ["tictactoe-states"],
                                  evaluation=EvaluationConfig(policy=first_legal))
    labels = enumerate_and_solve(tictactoe)
    q_first = labels.q_star[np.arange(len(labels.v_star)), lowest_legal(tictactoe, labels.states)]
    regret = labels.q_star.max(axis=1) - q_first
    assert regret.max() > 0  # the lowest legal action is not always optimal: the policy is told apart
    assert metrics["eval/tictactoe-states/policy_regret"] == pytest.approx(regret.mean(), abs=1e-6)
    assert metrics["eval/tictactoe-states/optimal_move_rate"] == pytest.approx((regret <= 1e-6).mean(), abs=1e-6)

    chomp = games.make("chomp", rows=3, cols=3)
    records = []
    evaluate_checkpoint(write_checkpoint(tmp_path / "chomp.pt", chomp), "chomp", ["chomp-3x3-play"],
                        evaluation=EvaluationConfig(policy=first_legal), oracle_store=None, games_out=records)
    agent_plies = [(r["moves"][:i], a) for r in records for i, (a, w) in enumerate(zip(r["moves"], r["who"]))
                   if w == "agent"]
    assert len(records) >= 2 and len(agent_plies) >= len(records) // 2
    for before, action in agent_plies:
        assert action == lowest_legal(chomp, chomp.from_moves([before]))[0], (before, action)


def test_a_registered_policy_is_the_boards_agent(tmp_path, first_legal):
    """``launch play --policy first-legal`` on a Tic-tac-toe checkpoint: the agent, watching
    itself, plays the lowest legal action at every ply, and the page shows the move alone."""
    tictactoe = games.make("tictactoe")
    path = write_checkpoint(tmp_path / "ttt.pt", tictactoe)
    args = play_parser().parse_args(["--game", "tictactoe", "--checkpoint", str(path), "--policy", first_legal])
    table = build_table(args)
    assert first_legal in table.agent.name
    session = Session(table, human=None)
    while not session.done():
        before = session.state()
        session.step()
        assert session.moves[-1] == lowest_legal(tictactoe, before)[0]
    assert len(session.moves) >= 5
    assert session.to_json()["values"] == {"kind": "move"}


def test_a_registered_policy_is_a_gtp_engine(tmp_path, first_legal):
    """``launch gtp --policy first-legal`` (GTP plays Connect Four, not Tic-tac-toe):
    genmove answers the lowest legal column, a full column skipped."""
    from gtp import vertices
    from launch.gtp_serve import checkpoint_server

    connect4 = games.make("connect4")
    server = checkpoint_server(write_checkpoint(tmp_path / "c4.pt", connect4), policy=first_legal)
    assert server.version == first_legal
    for ply in range(6):  # the first column filled, the colours alternating
        answer = server.handle(f"genmove {'bw'[ply % 2]}").strip()
        assert answer == "= " + vertices.vertex(connect4, 0, server.moves[:-1]), answer
    answer = server.handle("genmove b").strip()
    assert answer == "= " + vertices.vertex(connect4, 1, server.moves[:-1]) and server.moves == [0] * 6 + [1]
