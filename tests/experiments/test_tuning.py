"""Tuning an arm's exploration parameter (launch/experiments/tuning.py): each algorithm's
space names a field its config has and reads, the trials' configs are the experiment
planner's at seeds the comparison does not use (a colliding seed is refused), the
scheduler keeps its decisions, and an interrupted tuning chooses nothing. A real tuning
run on Ray is tests/experiments/test_study_steps.py's, as an experiment's step."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace

import pytest

import algorithms
from launch.config import TrainConfig, resolve, resolved
from launch.experiments.spec import SpecError
from launch.experiments.tuning import (SEED_BASE, _scheduler_class, arm_set, default_space,
                                       field_value, prepare_tuning, space_for, tune_main, with_value)

SPACES = {algo: default_space(algo) for algo in algorithms.BUILTIN}  # each algorithm's exploration parameter's


def test_every_built_in_algorithm_has_a_space():
    assert all(SPACES.values()), SPACES
    assert SPACES["avi"].key == "actors.epsilon" and SPACES["alphazero"].key == "actors.mcts.c_puct"


@pytest.mark.parametrize("algo", sorted(SPACES))
def test_each_space_names_a_real_config_field_and_the_value_lands_in_the_resolved_config(algo):
    space = SPACES[algo]
    config = resolve("connect4", None, algo=algo, seed=SEED_BASE)  # a game every algorithm trains on (AZAL: a labeller)
    default = field_value(config, space.key)
    for value in space.grid(5):
        assert space.low <= value <= space.high
        tuned = with_value(config, space.key, value)
        assert field_value(tuned, space.key) == value
        # What the run writes to config.json (every auto made concrete) and what a Tune
        # trial rebuilds from its JSON both keep it.
        assert field_value(resolved(tuned, cpus=2, gpus=0), space.key) == value
        assert field_value(TrainConfig.from_dict(json.loads(tuned.to_json())), space.key) == value
    assert field_value(config, space.key) == default  # the config itself is untouched
    assert any(v != default for v in space.grid(5))


def test_the_grid_spans_the_range_on_its_scale_at_multiples_of_its_step():
    space = SPACES["avi"]
    values = space.grid(5)
    assert values[0] == space.low and values[-1] == space.high
    assert values == sorted(values)
    ratios = [b / a for a, b in zip(values, values[1:])]
    assert max(ratios) / min(ratios) < 1.1  # log scale: even ratios
    assert all(abs(v / space.step - round(v / space.step)) < 1e-9 for v in values)
    assert space_for("avi", scale="linear").grid(3) == [0.02, 0.26, 0.5]


def test_a_chosen_end_of_the_range_is_extended_past_it_on_the_grids_spacing_up_to_the_limit():
    """epsilon's grid of 4 over [0.02, 0.5] steps by a factor of about 2.9: past 0.5 the
    next values would pass 1 (every move random), so two are spread up to 1; c_puct's
    grid over [0.5, 5] steps by about 2.15, so two values lie below 0.5 at that spacing."""
    epsilon, c_puct = SPACES["avi"], SPACES["alphazero"]
    assert epsilon.beyond(0.5, 4, 2).grid(2) == [0.708, 1.0]
    assert c_puct.beyond(0.5, 4, 2).grid(2) == [0.11, 0.23]
    assert c_puct.beyond(5.0, 4, 2).grid(2) == [10.8, 23.32]
    # Inside the range, at a limit, or asked for no values: nothing to extend.
    assert c_puct.beyond(1.08, 4, 2) is None and epsilon.beyond(0.5, 4, 0) is None
    assert replace(epsilon, high=1.0).beyond(1.0, 4, 2) is None
    # The limit too near for two new values at the step: none.
    assert replace(epsilon, low=0.5, high=0.999).beyond(0.999, 2, 2) is None
    # One value past the end: a range of one value, which a tuning step runs.
    one = epsilon.beyond(0.5, 2, 1)
    assert (one.low, one.high, one.grid(1)) == (1.0, 1.0, [1.0])
    assert prepare_tuning("ladder-hex", "avi", size="test", samples=1, low=one.low, high=one.high).values == (1.0,)
    with pytest.raises(SpecError, match=r"the range \[0.5, 0.2\] on a log scale is empty"):
        prepare_tuning("ladder-hex", "avi", size="test", samples=2, low=0.5, high=0.2)


def test_trial_configs_are_the_planners_at_the_tuning_seeds():
    plan = prepare_tuning("ladder-hex", "az32", size="test", samples=3)
    assert plan.seeds == (SEED_BASE, SEED_BASE + 1, SEED_BASE + 2) and plan.comparison_seeds == (0,)
    assert plan.instance == "3x3" and plan.metric == "eval/hex-3x3-play/error_rate"
    template = plan.template
    assert template.arm == "az32" and template.instance == "3x3"
    for seed, config in zip(plan.seeds, plan.configs):
        assert config.seed == seed
        assert replace(config, seed=template.seed) == template.config  # the experiment's trial, but for the seed
        assert config.actors.mcts.simulations == 32  # the arm's own set is kept
    assert plan.values == (0.5, 1.58, 5.0)
    assert plan.scheduler["time_attr"] == "updates" and plan.scheduler["mode"] == "min"
    assert plan.scheduler["max_t"] == 128 and plan.scheduler["grace_period"] == 128  # 3 evaluations, capped


def test_a_seed_of_the_comparison_is_refused(capsys):
    with pytest.raises(SpecError, match=r"tuning seeds 1, 2 are seeds of the comparison \(it runs seeds 0, 1, 2\)"):
        prepare_tuning("ladder-hex", "avi", size="small", seed_base=1, samples=4)
    prepare_tuning("ladder-hex", "avi", size="small", seed_base=3, samples=4)  # 3..6: clear of 0..2
    assert tune_main(["ladder-hex", "--arm", "avi", "--out", "unused", "--seed-base", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "tuning seeds 0, 1, 2" in err and "--seed-base" in err


def test_a_parameter_the_arms_config_does_not_read_or_a_bad_arm_is_refused():
    with pytest.raises(SpecError, match=r"c_base=19652\), which does not read c_puct"):
        prepare_tuning("fgames", "az32")  # F-Games' AlphaZero: the c_init / c_base schedule
    assert prepare_tuning("fgames", "az32", key="actors.mcts.c_init", low=0.5, high=5.0).space.key == \
        "actors.mcts.c_init"
    with pytest.raises(SpecError, match=r"--arm 'nope' is not an arm; arms: avi, az32"):
        prepare_tuning("ladder-hex", "nope")
    with pytest.raises(SpecError, match=r"'actors.nope' is not a field of the config"):
        prepare_tuning("smoke", "avi", key="actors.nope", low=0.1, high=1.0)
    with pytest.raises(SpecError, match=r"epsilon must lie in \[0, 1\]"):
        prepare_tuning("smoke", "avi", high=2.0)
    with pytest.raises(SpecError, match=r"--instance '9x9' is not an instance size 'test' runs arm 'avi' on"):
        prepare_tuning("ladder-hex", "avi", size="test", instance="9x9")


def test_the_scheduler_remembers_the_trials_it_stopped():
    """Tune ends a trial ASHA stopped as it ends one that finished: tune.json's
    stopped_by_asha comes from the scheduler's own decisions."""
    from types import SimpleNamespace

    scheduler = _scheduler_class()(time_attr="updates", metric="m", mode="min", max_t=128, grace_period=64,
                                   reduction_factor=2, stop_last_trials=False)
    good, poor = SimpleNamespace(trial_id="good"), SimpleNamespace(trial_id="poor")
    for trial in (good, poor):
        scheduler.on_trial_add(None, trial)
    assert scheduler.on_trial_result(None, poor, {"updates": 64}) == "CONTINUE"  # no metric: no decision
    assert scheduler.on_trial_result(None, good, {"updates": 64, "m": 0.1}) == "CONTINUE"
    assert scheduler.on_trial_result(None, poor, {"updates": 64, "m": 0.5}) == "STOP"
    assert scheduler.stopped_at == {"poor": 64}


def test_an_interrupted_tuning_chooses_nothing(tmp_path):
    """Tune answers Ctrl-C by saving its state and returning: a trial without its DONE_FILE,
    or one that never reported (Tune has no config of it), must not leave a choice among the
    others recorded as the step's end."""
    from ray.tune import Result

    from launch.experiments.layout import DONE_FILE
    from launch.experiments.tuning import TuningInterrupted, _finished_trials

    plan = prepare_tuning("ladder-hex", "avi", size="test", samples=2)
    scheduler = _scheduler_class()(**plan.scheduler)
    ended, cut = (tmp_path / "ended", tmp_path / "cut")
    for d in (ended, cut):
        d.mkdir()
    (ended / DONE_FILE).write_text(json.dumps({"end": "budget"}))

    def result(run_dir, value):
        entry = {"name": run_dir.name, "seed": 1, "run_dir": str(run_dir), "value": value}
        return Result(metrics={"config": {"trial": entry}, "updates": 64, plan.metric: 0.3, "trial_id": run_dir.name},
                      checkpoint=None, error=None, path=str(run_dir))

    assert [t["end"] for t in _finished_trials([result(ended, 0.1)], plan, scheduler)] == ["budget"]
    with pytest.raises(TuningInterrupted, match=r"stopped before 1 of its 2 trials ended; no value was chosen"):
        _finished_trials([result(ended, 0.1), result(cut, 0.2)], plan, scheduler)
    never = Result(metrics=None, checkpoint=None, error=None, path=str(tmp_path / "never"))
    with pytest.raises(TuningInterrupted, match=r"stopped before 1 of its 2 trials ended"):
        _finished_trials([result(ended, 0.1), never], plan, scheduler)


def test_the_chosen_value_reads_back_as_the_arms_set_table():
    text = arm_set({"actors.mcts.simulations": 32}, "actors.mcts.c_puct", 1.58)
    assert tomllib.loads(text) == {"set": {"actors": {"mcts": {"simulations": 32, "c_puct": 1.58}}}}
