"""Checkpoint evaluation end to end (real checkpoints, real datasets), the policy
adapters, the compute count, the report, and bad input named in the errors."""

import dataclasses
import json

import numpy as np
import pytest

import games
from evaluation.config import EvaluationConfig
from evaluation import policies as P
from evaluation import policy_registry
from evaluation.datasets import DatasetError, committed_file_present, load_dataset
from evaluation.exact import enumerate_and_solve
from evaluation.metrics import state_metrics
from evaluation.network import NetworkModel
from evaluation.report import report_main, write_report
from evaluation.checkpoints import CheckpointMismatchError
from evaluation.cli import evaluate_main
from evaluation.runner import SuiteRunner, evaluate_checkpoint
from learner.checkpoint import (
    CorruptCheckpointError,
    LearnerState,
    RunCheckpoint,
    save_checkpoint,
    save_run_checkpoint,
)
from learner.learner import Learner
from inference.tensors import numpy_weights
from inference.networks import NetworkConfig, build_network

SMALL = NetworkConfig("mlp", width=32, blocks=1, layers_per_block=1, head_width=32)


def _checkpoint(tmp_path, game, config=SMALL, algo="avi"):
    learner = Learner(game, config, device="cpu")
    path = tmp_path / "checkpoints" / "ckpt-000000007.pt"
    # As launch/train.py's Run.checkpoint writes it: the learner actor's state.
    save_run_checkpoint(path, RunCheckpoint(counters={"updates": 7}, learner=LearnerState(learner.state_dict(), {}),
                                            actors=[], config=json.dumps({"algo": algo, "game": game.name, "gamma": 1.0}),
                                            faults={}))
    return path, learner.get_weights()


def test_evaluate_checkpoint_chomp(tmp_path):
    game = games.make("chomp", rows=4, cols=5)
    path, weights = _checkpoint(tmp_path, game)
    m = evaluate_checkpoint(path, "chomp")
    assert m["eval/chomp-4x5-play/games"] == 2 * 19 and m["eval/chomp-4x5-traces/traces"] == 19
    few = evaluate_checkpoint(path, "chomp", ["chomp-4x5-play"], evaluation=EvaluationConfig(max_openings=3))
    assert few["eval/chomp-4x5-play/games"] == 6
    for key in ("eval/chomp-4x5-states/value_mae", "eval/chomp-4x5-states/policy_regret",
                "eval/chomp-4x5-play/error_rate", "eval/chomp-4x5-play/blunder_rate",
                "eval/chomp-4x5-traces/match_p1", "eval/chomp-4x5-traces/losing_but_won"):
        assert key in m
    # The same numbers as the metric functions applied by hand to the same network.
    model = NetworkModel(game, SMALL, weights)
    labels = enumerate_and_solve(game)
    by_hand = state_metrics(labels, choose=P.greedy_policy(game, model.value_obs),
                            value=P.state_value(game, model.value_obs))
    assert m["eval/chomp-4x5-states/policy_regret"] == pytest.approx(by_hand["policy_regret"])
    assert m["eval/chomp-4x5-states/value_mae"] == pytest.approx(by_hand["value_mae"], abs=1e-6)
    # Compute: the greedy policy evaluates every live child of every state once.
    exp = game.expand(labels.states)
    assert m["eval/chomp-4x5-states/inference_evals"] == int((exp.legal & ~exp.done).sum())


def test_symmetrized_network_counts_both_images():
    game = games.make("connect4")
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, symmetrize=True)
    model = NetworkModel(game, config, Learner(game, config, device="cpu").get_weights())
    states = game.from_moves([[3, 3, 2], [0]])
    P.greedy_policy(game, model.value_obs)(states)
    assert model.evaluations == 2 * 14  # 7 children each, two images per child


def test_checkpoint_errors_name_the_problem(tmp_path, capsys):
    game = games.make("chomp", rows=4, cols=5)
    path, _ = _checkpoint(tmp_path, game)
    with pytest.raises(CheckpointMismatchError, match=r"is of game 'chomp'.*not 'connect4'"):
        evaluate_checkpoint(path, "connect4")
    with pytest.raises(CheckpointMismatchError, match=r"algorithm 'avi', not 'alphazero'"):
        evaluate_checkpoint(path, "chomp", algo="alphazero")
    with pytest.raises(CheckpointMismatchError, match="policy head"):
        evaluate_checkpoint(path, "chomp", evaluation=EvaluationConfig(policy="policy-head"))
    with pytest.raises(DatasetError, match="unknown suite"):
        evaluate_checkpoint(path, "chomp", ["connect4-uniform"])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpointError, match="ckpt-000000007.pt"):
        evaluate_checkpoint(path, "chomp")
    assert evaluate_main(["--checkpoint", str(path), "--game", "chomp"]) == 2
    assert "ckpt-000000007.pt" in capsys.readouterr().err
    save_checkpoint(tmp_path / "other.pt", {"weights": {"x": 1}})
    assert evaluate_main(["--checkpoint", str(tmp_path / "other.pt"), "--game", "chomp"]) == 2
    assert "holds no learner state" in capsys.readouterr().err


def test_evaluate_main_json(tmp_path, capsys):
    game = games.make("fgame", depth=5, branching=3, beta=0.0, seed=1)
    path, _ = _checkpoint(tmp_path, game)
    assert evaluate_main(["--checkpoint", str(path), "--game", "fgame", "--suite", "fgame-states", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eval/fgame-states/states"] == 1 + 3 + 9 + 27 + 81  # every inner node of the tree


def test_evaluate_main_with_an_oracle_service(ray_session, tmp_path, capsys):
    """``--oracle-replicas N`` starts the service on the Ray this process has, reports its
    statistics, and leaves that Ray running (it did not start it)."""
    game = games.make("connect4")
    path, _ = _checkpoint(tmp_path, game)
    argv = ["--checkpoint", str(path), "--game", "connect4", "--suite", "connect4-uniform", "--json",
            "--oracle-replicas", "2", "--oracle-store", str(tmp_path / "store.sqlite")]
    assert evaluate_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eval/connect4-uniform/states"] == 1500
    assert out["oracle/replicas_alive"] == 2 and out["oracle/errors"] == 0
    assert ray_session.is_initialized()
    with pytest.raises(SystemExit):
        evaluate_main(argv[:-4] + ["--oracle-replicas", "-1"])
    assert "--oracle-replicas must be >= 0" in capsys.readouterr().err


def test_play_against_either_oracle_engine_gives_the_same_games(tmp_path, capsys):
    """``--oracle-engine bitbully`` (the optional extra) plays and scores the same games as
    our engine: both are exact, and ties between best moves break the same way."""
    pytest.importorskip("bitbully", reason="the optional AGPL engine: pip install 'selfplay[bitbully]'")
    path, _ = _checkpoint(tmp_path, games.make("connect4"))
    results = {}
    for engine in ("ours", "bitbully"):
        argv = ["--checkpoint", str(path), "--game", "connect4", "--suite", "connect4-play", "--json",
                "--max-openings", "6", "--oracle-store", "none", "--oracle-engine", engine]
        assert evaluate_main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        results[engine] = {k: v for k, v in out.items() if not k.endswith("seconds")}
    assert results["ours"]["eval/connect4-play/games"] == 12
    assert results["ours"] == results["bitbully"]
    with pytest.raises(SystemExit):
        evaluate_main(argv[:-1] + ["pons"])
    assert "invalid choice: 'pons'" in capsys.readouterr().err


def test_evaluator_inside_training_and_match_suites():
    game = games.make("hex", size=7)
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16)
    ev = SuiteRunner(game, config, suites=["hex-random"])
    m = ev.evaluate(Learner(game, config, device="cpu").get_weights())
    # From the labelled openings, both sides (the unlabelled random ones without them).
    starts = "hex-openings" if committed_file_present("hex-openings") else "hex-random-openings"
    assert m["eval/hex-random/games"] == 2 * len(load_dataset(starts)) and -1 <= m["eval/hex-random/score"] <= 1
    with pytest.raises(ValueError, match="needs an opponent"):
        SuiteRunner(game, config, suites=["hex-h2h"])


def test_policy_adapters_on_exact_values():
    game = games.make("chomp", rows=3, cols=4)
    labels = enumerate_and_solve(game)
    exact = {bytes(o): v for o, v in zip(game.encode(labels.states).astype(np.uint8), labels.v_star)}
    value_obs = lambda obs: np.array([exact.get(bytes(o.astype(np.uint8)), 0.0) for o in obs], np.float32)
    for choose in (P.greedy_policy(game, value_obs), P.minimax_policy(game, value_obs, depth=1)):
        assert state_metrics(labels, choose=choose)["policy_regret"] == 0.0
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, policy_head=True)
    model = NetworkModel(game, config, Learner(game, config, device="cpu").get_weights())
    head = P.policy_head_policy(game, model)
    actions = head(labels.states)
    assert game.legal(labels.states)[np.arange(len(actions)), actions].all()
    with pytest.raises(ValueError, match="no policy head"):
        P.policy_head_policy(game, NetworkModel(game, SMALL))
    before = model.evaluations
    mcts = P.mcts_policy(game, model.evaluate, simulations=8)
    few = games.take(labels.states, np.arange(5))
    actions = mcts(few)
    assert game.legal(few)[np.arange(5), actions].all() and model.evaluations > before
    # Gumbel's search without noise, on exact values and a uniform prior: with a visit for
    # every legal move (12 at most, 32 simulations), Sequential Halving keeps an optimal one.
    exact_state = lambda states: (np.zeros((len(game.encode(states)), game.num_actions), np.float32),
                                  value_obs(game.encode(states)))
    gumbel = P.gumbel_policy(game, exact_state, simulations=32)
    assert state_metrics(labels, choose=gumbel)["policy_regret"] == 0.0
    assert policy_registry.PolicySpec("gumbel", simulations=8).build(game, model)(few).shape == (5,)


def test_report(tmp_path, capsys):
    runs = []
    for seed, final in ((0, 0.2), (1, 0.4)):
        d = tmp_path / f"run{seed}"
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"algo": "avi", "game": "chomp", "game_params": {}}))
        recs = [{"updates": u, "compute": 100.0 * u, "eval/chomp-9x10/value_mae": v,
                 "eval/chomp-9x10-play/error_rate": v / 2}
                for u, v in ((0, 1.0), (10, 0.6), (20, final))]
        (d / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
        runs.append(d)
    summary = write_report(runs, tmp_path / "out")
    text = summary.read_text()
    # Two seeds: mean 0.3, half-width t(0.975, 1) * sd / sqrt(2) = 12.7062 * 0.1414 / 1.4142.
    assert "| avi chomp (2) | chomp-9x10/value_mae | 0.3000 ± 1.2706 |" in text
    for name in ("chomp-9x10_value_mae_vs_updates.png", "chomp-9x10_value_mae_vs_compute.png",
                 "chomp-9x10-play_error_rate_vs_updates.png"):
        assert (tmp_path / "out" / name).read_bytes()[:4] == b"\x89PNG"
    assert report_main([str(tmp_path / "missing")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err


def test_multi_frame_chomp_uses_the_single_frame_datasets():
    """Chomp's ``frames`` changes the network's input, not the rules: the 9x10 datasets
    serve it, with states replayed from their moves so that they carry earlier boards."""
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, policy_head=True)
    framed = SuiteRunner(games.make("chomp", rows=9, cols=10, frames=3), config)
    plain = SuiteRunner(games.make("chomp", rows=9, cols=10), config)
    (labels, _), (plain_labels, _) = framed._data["chomp-9x10"], plain._data["chomp-9x10"]
    np.testing.assert_array_equal(labels.states.profile, plain_labels.states.profile)
    np.testing.assert_array_equal(labels.v_star, plain_labels.v_star)
    assert labels.states.history.shape == (len(labels.v_star), 2, 9)
    assert labels.states.history[np.asarray(labels.states.moves) >= 2].any()  # earlier boards, not padding
    metrics = framed.evaluate(numpy_weights(build_network(framed.game, config)))
    assert metrics["eval/chomp-9x10/states"] == len(labels.v_star) and metrics["eval/chomp-9x10-play/games"] > 0
    with pytest.raises(DatasetError, match="dataset .chomp-10x11. is for"):
        SuiteRunner(games.make("chomp", rows=9, cols=10), config, suites=["chomp-9x10"])._dataset("chomp-10x11")


def test_games_out_records_every_play_suite_game_as_played(tmp_path, capsys):
    """``--games-out`` writes each game of the play suite: the opening's moves from the
    dataset, then the moves played; replayed by the rules it ends where the record says,
    with the outcome it gives; the error and blunder flags add up to the metrics; and the
    board opens any of them (``--replay FILE --replay-index N``)."""
    from board.replay import parse_replay
    from evaluation.datasets import load_dataset

    game = games.make("connect4")
    path, _ = _checkpoint(tmp_path, game)
    out_file = tmp_path / "games.jsonl"
    argv = ["--checkpoint", str(path), "--game", "connect4", "--suite", "connect4-play", "--json",
            "--max-openings", "3", "--oracle-store", "none", "--games-out", str(out_file)]
    assert evaluate_main(argv) == 0
    metrics = json.loads(capsys.readouterr().out)
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(records) == metrics["eval/connect4-play/games"] == 6
    assert sum(r["error"] for r in records) == metrics["eval/connect4-play/error_games"]
    assert sum(r["blunder"] for r in records) == metrics["eval/connect4-play/blunder_games"]
    openings = load_dataset("connect4-openings").moves[:3]
    for number, r in enumerate(records):
        k = r["opening_plies"]
        assert r["moves"][:k] == list(openings[number % 3]) and r["who"][:k] == ["opening"] * k
        # Replayed move by move: legal throughout, over only at the last move.
        state, done, reward = game.init(1), np.zeros(1, bool), np.zeros(1)
        for i, a in enumerate(r["moves"]):
            assert not done[0] and game.legal(state)[0, a], (number, i)
            state, reward, done = game.step(state, np.array([a]))
        assert done[0]
        mover_of_last = r["who"][-1]
        assert mover_of_last in ("agent", "oracle")
        assert r["agent_outcome"] == (reward[0] if mover_of_last == "agent" else -reward[0])
        assert (r["who"][k] == "agent") == (number < 3)  # the agent opens games 0..2, the oracle 3..5
        assert parse_replay(out_file.read_text(), game, number) == r["moves"]


def test_a_suite_past_its_time_is_abandoned_and_the_others_still_scored(tmp_path):
    """A wall-clock run's limits (launch/eval_plan.py): the play suite given no time is given
    up before its first move, its metrics left out and its time reported; a suite given
    time, and one with no limit, are scored as without limits."""
    game = games.make("chomp", rows=4, cols=5)
    _, weights = _checkpoint(tmp_path, game)
    runner = SuiteRunner(game, SMALL, suites=["chomp-4x5-states", "chomp-4x5-play", "chomp-4x5-traces"])
    plain = runner.evaluate(weights)
    limited = runner.evaluate(weights, limits={"chomp-4x5-play": 0.0, "chomp-4x5-traces": 600.0})
    assert set(runner.abandoned) == {"chomp-4x5-play"} and runner.abandoned["chomp-4x5-play"] >= 0
    assert not any(k.startswith("eval/chomp-4x5-play/") for k in limited)
    for key in ("eval/chomp-4x5-states/value_mae", "eval/chomp-4x5-traces/match_p1"):
        assert limited[key] == plain[key]
    # A deadline already past gives up every limited suite; skip leaves a suite out unasked.
    past = runner.evaluate(weights, limits={"chomp-4x5-traces": 600.0}, deadline=0.0, skip=["chomp-4x5-play"])
    assert set(runner.abandoned) == {"chomp-4x5-traces"}
    assert {k.split("/")[1] for k in past} == {"chomp-4x5-states"}


def test_a_second_policy_scores_every_suite_again_under_its_own_keys(tmp_path):
    """``training_search`` (a run's search at its training budget, ``also_search=auto``):
    every suite again under ``<suite>@mcts4``, the same numbers as a runner that plays that
    search alone, with no second value MAE, each run limited and reported by its own name."""
    game = games.make("chomp", rows=4, cols=5)
    az = dataclasses.replace(SMALL, policy_head=True)
    _, weights = _checkpoint(tmp_path, game, az, algo="alphazero")
    suites = ["chomp-4x5-states", "chomp-4x5-play"]
    both = SuiteRunner(game, az, suites=suites, training_search="mcts4")
    assert [r.name for r in both.runs] == [*suites, "chomp-4x5-states@mcts4", "chomp-4x5-play@mcts4"]
    m = both.evaluate(weights)
    head = SuiteRunner(game, az, suites=suites).evaluate(weights)  # no training search: auto plays nothing more
    search = SuiteRunner(game, az, suites=suites, evaluation=EvaluationConfig(policy="mcts", simulations=4),
                         training_search="mcts4").evaluate(weights)  # the search already: not played twice
    for suite in suites:
        for kind in ("policy_regret", "optimal_move_rate", "error_rate", "move_match_rate", "games", "states"):
            key = f"eval/{suite}/{kind}"
            if key in head:
                assert m[key] == head[key] and m[f"eval/{suite}@mcts4/{kind}"] == search[key], key
    assert "eval/chomp-4x5-states/value_mae" in m and "eval/chomp-4x5-states@mcts4/value_mae" not in m
    assert not any(k.startswith("eval/chomp-4x5-states@mcts4/") and "value" in k for k in m)
    assert m["eval/chomp-4x5-play/inference_evals_per_decision"] == 1.0  # the policy head: one evaluation
    # The search: up to its simulations (a terminal leaf costs none).
    assert 1 < m["eval/chomp-4x5-play@mcts4/inference_evals_per_decision"] <= 4 + 1
    assert 1 < m["eval/chomp-4x5-states@mcts4/inference_evals_per_decision"] <= 4 + 1
    assert not any("@" in k for k in head) and not any("@" in k for k in search)
    # Limits name a suite by one policy: the search's play given up, the head's scored.
    limited = both.evaluate(weights, limits={"chomp-4x5-play@mcts4": 0.0})
    assert set(both.abandoned) == {"chomp-4x5-play@mcts4"}
    assert "eval/chomp-4x5-play/error_rate" in limited and not any(k.startswith("eval/chomp-4x5-play@") for k in limited)


def test_evaluate_json_names_the_policy_and_budget_each_side_played(tmp_path, capsys):
    game = games.make("chomp", rows=4, cols=5)
    path, _ = _checkpoint(tmp_path, game)
    argv = ["--checkpoint", str(path), "--game", "chomp", "--suite", "chomp-4x5-play", "--max-openings", "2",
            "--policy", "mcts", "--simulations", "6", "--json"]
    assert evaluate_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["agent"] == {"policy": "mcts", "simulations": 6} and "opponent" not in out
    assert out["eval/chomp-4x5-play/inference_evals_per_decision"] > 1
    opponent, _ = _checkpoint(tmp_path / "opponent", game)
    argv = ["--checkpoint", str(path), "--game", "chomp", "--suite", "chomp-4x5-h2h", "--max-openings", "2",
            "--opponent", str(opponent), "--opponent-policy", "minimax", "--depth", "3", "--json"]
    assert evaluate_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["agent"] == {"policy": "greedy"}  # auto, on a network without a policy head
    assert out["opponent"] == {"policy": "minimax", "depth": 3}
    assert evaluate_main(argv[:-1]) == 0  # the text view shows them too
    assert '{"policy": "minimax", "depth": 3}' in capsys.readouterr().out
