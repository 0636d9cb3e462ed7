"""The evaluation suites against outside engines (go-gnugo, othello-grhino): registered for
their games, played from the openings on both sides, scored with W/D/L counts and a
Student-t interval, each game kept as SGF; a bad engine level is an error up front."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sgfmill import sgf

import games
from evaluation.config import EvaluationConfig
from evaluation.cli import evaluate_main
from evaluation.runner import evaluate_checkpoint
from evaluation.suites import suites_for


def test_the_engine_suites_are_registered_off_by_default():
    go = {s.name: s for s in suites_for(games.make("go"))}
    othello = {s.name: s for s in suites_for(games.make("othello"))}
    assert go["go-gnugo"].kind == othello["othello-grhino"].kind == "engine"
    assert not go["go-gnugo"].default and not othello["othello-grhino"].default
    assert go["go-gnugo"].dataset == "go-openings" and othello["othello-grhino"].dataset == "othello-openings"
    assert "go-gnugo" not in {s.name for s in suites_for(games.make("go", size=7))}


def test_othello_against_gtp_rhino_from_the_openings_both_sides(rhino, checkpoint_of, tmp_path):
    m = evaluate_checkpoint(checkpoint_of("othello"), "othello", ["othello-grhino"],
                            evaluation=EvaluationConfig(max_openings=1), engine_level=1, engine_tables=2, sgf_dir=tmp_path)  # the first of the 54 openings
    k = "eval/othello-grhino/"
    assert m[k + "games"] == 2 and m[k + "failures"] == 0 and m[k + "disagreements"] == 0
    assert m[k + "wins"] + m[k + "draws"] + m[k + "losses"] == 2
    assert -1 <= m[k + "score"] <= 1 and m[k + "score_ci95"] >= 0 and m[k + "engine_level"] == 1
    assert m[k + "agent_moves"] > 0 and m[k + "inference_evals"] > 0
    lines = [json.loads(x) for x in (tmp_path / "othello-grhino.jsonl").read_text().splitlines()]
    assert [x["black"] for x in lines] == ["agent", "gtp-rhino-1"]
    assert lines[0]["opening"] == [19, 18, 17] and lines[0]["vertices"][:3] == ["d3", "c3", "b3"]
    # The margin: the agent's disc difference, Black's count turned for the game it played White.
    agent_margins = [x["score"] * (1 if x["black"] == "agent" else -1) for x in lines]
    assert m[k + "margin"] == pytest.approx(np.mean(agent_margins)) and m[k + "margin_ci95"] >= 0
    assert all(np.sign(d) == (x["outcome"] if x["black"] == "agent" else -x["outcome"])
               for d, x in zip(agent_margins, lines))
    for x in lines:
        game = sgf.Sgf_game.from_bytes((tmp_path / x["sgf"]).read_bytes())
        assert len(game.get_main_sequence()) == len(x["moves"]) + 1


def test_an_engine_level_out_of_range_is_an_error(checkpoint_of, capsys):
    path = checkpoint_of("othello")
    code = evaluate_main(["--checkpoint", str(path), "--game", "othello", "--suite", "othello-grhino",
                          "--engine-level", "9"])
    assert code == 2 and "level must lie in 1..5, got 9" in capsys.readouterr().err


def test_in_training_the_engine_suites_run_on_the_game_suites_cadence():
    from launch.evaluator import EvaluatorWorker, chosen_suites
    from inference.game_network import GameNetwork
    from inference.networks import NetworkConfig

    assert chosen_suites("go", "go-gnugo") == ["go-gnugo"]
    network = NetworkConfig(kind="mlp", width=16, blocks=1, layers_per_block=1, head_width=16)
    worker = EvaluatorWorker(game_network=GameNetwork(game="othello", network=network),
                             config=EvaluationConfig(suites="othello-grhino", simulations=8, max_openings=3),
                             gamma=1.0, oracle_store=None)
    assert worker.play_suites() == ["othello-grhino"]  # every eval_play_every-th evaluation, not every one


def test_engine_games_split_over_ray_tasks_are_the_games_played_here(rhino, ray_session, checkpoint_of, tmp_path):
    """engine_workers=2: the games go to two Ray tasks, each building its own agent from the
    runner's policy and weights; the records come back in order, the same games as in one
    process, and so the same metrics."""
    from evaluation.engine_suites import engine_match

    path = checkpoint_of("othello")
    options = dict(evaluation=EvaluationConfig(max_openings=2), engine_level=1)
    here = evaluate_checkpoint(path, "othello", ["othello-grhino"], engine_tables=2, sgf_dir=tmp_path / "here",
                               **options)
    on_ray = evaluate_checkpoint(path, "othello", ["othello-grhino"], engine_workers=2, sgf_dir=tmp_path / "ray",
                                 **options)
    k = "eval/othello-grhino/"
    assert on_ray[k + "games"] == 4 and on_ray[k + "failures"] == 0
    assert {m: on_ray[k + m] for m in ("score", "wins", "draws", "losses", "agent_moves")} == {
        m: here[k + m] for m in ("score", "wins", "draws", "losses", "agent_moves")}
    lines = {where: [json.loads(x) for x in (tmp_path / where / "othello-grhino.jsonl").read_text().splitlines()]
             for where in ("here", "ray")}
    assert [x["moves"] for x in lines["here"]] == [x["moves"] for x in lines["ray"]]
    assert [x["black"] for x in lines["ray"]] == ["agent", "agent", "gtp-rhino-1", "gtp-rhino-1"]
    with pytest.raises(ValueError, match="workers > 1 needs make_choose"):
        engine_match(games.make("othello"), None, "othello-grhino", [[19, 18, 17]], level=1, workers=2)
