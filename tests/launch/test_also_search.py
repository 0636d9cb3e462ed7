"""A run whose algorithm searches scores every suite twice: with its evaluation policy
(the policy head) and with the search it trains with at its training budget
(``evaluation.also_search``, launch/evaluator.py). What the evaluator plans to score,
the setting's flow through ``--set`` and experiment specs, and the wall clock's plan of
both runs of a game suite; the real runs are in test_evaluator_in_training.py."""

from __future__ import annotations

import pytest

from evaluation.config import EvaluationConfig
from launch.config import ConfigError, resolve
from launch.eval_plan import EXIT_SECONDS, FIRST_CHECKPOINT_SECONDS, EvaluationPlan
from launch.evaluator import EvaluatorWorker, evaluated_runs, training_search, training_search_settings

BOARD = ['game_params={"rows": 4, "cols": 5}']
OWN = ["chomp-4x5-states", "chomp-4x5-play", "chomp-4x5-traces"]


def test_alphazero_plans_its_suites_with_the_search_at_the_actors_simulations():
    config = resolve("chomp", "small", [*BOARD, "actors.mcts.simulations=24"], algo="alphazero")
    assert training_search(config) == "mcts24"
    assert evaluated_runs(config) == OWN + [f"{s}@mcts24" for s in OWN]
    # Gumbel self-play is scored by Gumbel's search, AZAL's as AlphaZero's.
    gumbel = resolve("chomp", "small", [*BOARD, "actors.search=gumbel", "actors.mcts.simulations=8"], algo="azal")
    assert evaluated_runs(gumbel)[3:] == [f"{s}@gumbel8" for s in OWN]


def test_the_search_is_scored_with_the_exploration_constants_it_trained_with():
    """A tuned c_puct (or AlphaZero's c_init / c_base schedule) is the search's own: scoring
    it with the registry's default constant would score another search."""
    from evaluation.runner import evaluation_policies

    config = resolve("chomp", "small", [*BOARD, "actors.mcts.simulations=24", "actors.mcts.c_puct=1.5"],
                     algo="alphazero")
    own, also = evaluation_policies(config.evaluation, policy_head=True, training_search=training_search(config),
                                    search_settings=training_search_settings(config))
    assert (also.policy, also.simulations, also.c_puct) == ("mcts", 24, 1.5) and own.policy == "policy-head"
    schedule = resolve("chomp", "small", [*BOARD, "actors.mcts.c_base=19652", "actors.mcts.c_init=1.25"],
                       algo="alphazero")
    _, also = evaluation_policies(schedule.evaluation, policy_head=True, training_search=training_search(schedule),
                                  search_settings=training_search_settings(schedule))
    assert (also.c_base, also.c_init) == (19652, 1.25)
    # A search named explicitly is not the training search: it plays the registry's constants.
    named = EvaluationConfig(also_search="mcts16")
    _, also = evaluation_policies(named, policy_head=True, training_search=training_search(config),
                                  search_settings=training_search_settings(config))
    assert (also.simulations, also.c_puct) == (16, 3.0)


@pytest.mark.parametrize("algo", ["avi", "hybrid"])
def test_an_algorithm_that_searches_no_tree_plans_its_own_policy_only(algo):
    config = resolve("chomp", "small", BOARD, algo=algo)
    assert training_search(config) is None and evaluated_runs(config) == OWN


def test_the_setting_flows_through_set_and_names_itself_when_wrong():
    az = [*BOARD, "actors.mcts.simulations=24"]
    assert evaluated_runs(resolve("chomp", "small", [*az, "evaluation.also_search=none"], algo="alphazero")) == OWN
    explicit = resolve("chomp", "small", [*az, "evaluation.also_search=mcts128"], algo="alphazero")
    assert evaluated_runs(explicit)[3:] == [f"{s}@mcts128" for s in OWN]
    # A bare search plays at evaluation.simulations; AVI may be scored by any policy too.
    bare = resolve("chomp", "small", [*BOARD, "evaluation.also_search=minimax", "evaluation.depth=3"], algo="avi")
    assert evaluated_runs(bare)[3:] == [f"{s}@minimax3" for s in OWN]
    # The search the evaluation already plays is not played twice.
    same = resolve("chomp", "small", [*az, "evaluation.policy=mcts", "evaluation.simulations=24"], algo="alphazero")
    assert evaluated_runs(same) == OWN
    for bad, why in (("telepathy", "got 'telepathy'"), ("greedy4", "greedy has no budget"),
                     ("mcts0", "simulations must be >= 1")):
        with pytest.raises(ConfigError, match=f"evaluation.also_search={bad}.*also_search must be auto, none or "
                                              f"a policy.*{why}"):
            resolve("chomp", "small", [*BOARD, f"evaluation.also_search={bad}"], algo="alphazero")


def test_an_experiment_specs_evaluation_table_sets_it(tmp_path):
    from launch.experiments.spec import SpecError, load_spec, plan

    text = """name = "also"
game = "chomp"
game_params = {{ rows = 4, cols = 5 }}
[arms.az]
algo = "alphazero"
[sizes.small]
updates = 8
evaluation = {{ also_search = "{value}" }}
[sizes.full]
updates = 8
"""
    path = tmp_path / "also.toml"
    path.write_text(text.format(value="gumbel16"))
    trial = plan(load_spec(str(path)), "small").trials[0]
    assert trial.config.evaluation.also_search == "gumbel16"
    assert evaluated_runs(trial.config)[3:] == [f"{s}@gumbel16" for s in OWN]
    path.write_text(text.format(value="mcts-2"))
    with pytest.raises(SpecError, match="size 'small'.*also_search must be auto, none or a policy"):
        plan(load_spec(str(path)), "small")


def test_the_evaluator_scores_what_was_planned_and_the_clock_keeps_time_for_both_runs():
    config = resolve("chomp", "small", [*BOARD, "actors.mcts.simulations=24"], algo="alphazero")
    worker = EvaluatorWorker(game_network=config.game_network, config=config.evaluation, gamma=config.gamma,
                             oracle_store=None, training_search=training_search(config))
    assert worker.suites() == evaluated_runs(config)
    # The costly runs: the game suites by both policies, and the states suite by the search
    # (its simulations a state), which a wall clock plans and may leave out.
    assert worker.play_suites() == ["chomp-4x5-play", "chomp-4x5-traces", "chomp-4x5-states@mcts24",
                                    "chomp-4x5-play@mcts24", "chomp-4x5-traces@mcts24"]
    # A wall clock (launch/eval_plan.py) plans each run of a game suite on its own: the
    # final evaluation keeps the search's measured cost beside the policy head's.
    plan = EvaluationPlan(start=0.0, end=600.0, share=0.2, costly=["chomp-4x5-play", "chomp-4x5-play@mcts24"],
                          clock=lambda: 500.0)
    plan.record(seconds=44.0, cheap=True, suite_seconds={"chomp-4x5-play": 2.0, "chomp-4x5-play@mcts24": 40.0},
                abandoned={})
    assert plan.train_deadline() == pytest.approx(600 - 42.0 - 2.0 - FIRST_CHECKPOINT_SECONDS - EXIT_SECONDS)
    # 76 s left: the policy head's 2 s now, with both runs' 42 s kept for the end, fit;
    # the search's 40 s more do not.
    assert plan.choose(final=False).costly == ["chomp-4x5-play"]
    assert "needs about 40 s" in plan.skipped["chomp-4x5-play@mcts24"]


def test_auto_plays_nothing_more_outside_a_run():
    # launch evaluate and a bare SuiteRunner know no training search: --policy alone plays.
    assert EvaluationConfig().also_policy() is None
    assert EvaluationConfig().also_policy("gumbel16") == "gumbel16"
    assert EvaluationConfig(also_search="mcts", simulations=12).also_policy("gumbel16") == "mcts12"
