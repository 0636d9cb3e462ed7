"""A spec over several games, per-board budgets and arms, and the tuning step that runs
before a board's trials (launch/experiments/spec.py, tune_run.py): planned without Ray,
then run once on Ray at a tiny size, and resumed."""

from __future__ import annotations

import json
import time

import pytest

from launch.experiments.layout import EXPERIMENT_FILE, TUNE_FILE, TUNING_DIR
from launch.experiments.spec import SpecError, load_spec, plan
from launch.experiments.tune_run import prepare, run_dir_name

TWO_GAMES = """
name = "two-games"
reference_arm = "avi"

[arms.avi]
algo = "avi"

[arms.az8]
algo = "alphazero"
set = {{ actors = {{ mcts = {{ simulations = 8 }} }} }}

[[instances]]
name = "hex3"
game = "hex"
params = {{ size = 3 }}
{hex_extra}

[[instances]]
name = "c4"
game = "connect4"
params = {{ width = 4, height = 4 }}

[sizes.small]
updates = {{ hex3 = 256, c4 = 512 }}
seeds = 2
order = "boards"
evaluation = {{ every = 1, play_every = 1 }}
{size_extra}
updates_per_second = {{ avi = 10.0, az8 = 5.0 }}
overhead_seconds = 0

[sizes.full]
updates = 512
"""


def _spec(tmp_path, hex_extra="", size_extra='tune = { samples = 2, share = 0.25 }', name="spec.toml"):
    path = tmp_path / name
    path.write_text(TWO_GAMES.format(hex_extra=hex_extra, size_extra=size_extra))
    return load_spec(str(path))


def test_a_spec_may_span_games_with_a_budget_and_arms_per_board(tmp_path):
    small = plan(_spec(tmp_path, hex_extra='arms = ["avi"]'), "small")
    by_board = {}
    for t in small.trials:
        by_board.setdefault(t.instance, set()).add((t.arm, t.config.game, t.updates))
    assert by_board == {"hex3": {("avi", "hex", 256)},
                        "c4": {("avi", "connect4", 512), ("az8", "connect4", 512)}}
    # Board by board, every arm at one seed before the next seed.
    assert [(t.instance, t.seed, t.arm) for t in small.in_run_order()] == [
        ("hex3", 0, "avi"), ("hex3", 1, "avi"), ("c4", 0, "avi"), ("c4", 0, "az8"), ("c4", 1, "avi"),
        ("c4", 1, "az8")]


def test_each_board_is_tuned_before_its_trials_at_a_share_of_their_budget(tmp_path):
    small = plan(_spec(tmp_path), "small")
    assert [(s.instance, s.arm, s.samples, s.updates) for s in small.tuning] == [
        ("hex3", "avi", 2, 64), ("hex3", "az8", 2, 64), ("c4", "avi", 2, 128), ("c4", "az8", 2, 128)]
    phases = small.phases()
    assert [([s.name for s in steps], sorted({t.instance for t in trials})) for steps, trials in phases] == [
        (["hex3-avi", "hex3-az8"], ["hex3"]), (["c4-avi", "c4-az8"], ["c4"])]
    # The estimate holds every sample run to its budget, and the 2 values past an end of the
    # range too: 4 x 64 / 10 and 4 x 64 / 5 on Hex.
    assert [s.estimated_seconds for s in small.tuning[:2]] == [pytest.approx(25.6), pytest.approx(51.2)]
    trials = 2 * (256 / 10 + 256 / 5) + 2 * (512 / 10 + 512 / 5)
    assert small.wall_seconds(1) == pytest.approx(sum(s.estimated_seconds for s in small.tuning) + trials)
    # A tuned value is the arm's on that board only.
    tuned = plan(_spec(tmp_path), "small", tuned={("c4", "az8"): {"actors.mcts.c_puct": 2.5}})
    c_puct = {(t.instance, t.arm): t.config.actors.mcts.c_puct for t in tuned.trials}
    untuned = {(t.instance, t.arm): t.config.actors.mcts.c_puct for t in small.trials}
    assert c_puct[("c4", "az8")] == 2.5 != untuned[("c4", "az8")]
    assert c_puct[("hex3", "az8")] == untuned[("hex3", "az8")]
    assert [t.tuned for t in tuned.trials if t.arm == "az8" and t.instance == "c4"] == [
        {"actors.mcts.c_puct": 2.5}] * 2


@pytest.mark.parametrize("hex_extra, size_extra, message", [
    ('arms = ["azal"]', "", "instance 'hex3', key 'arms': 'azal' is not an arm"),
    ("", 'tune = { samples = 2 }', "give the tuning trials' budget as 'updates' or as a 'share'"),
    ("", 'tune = { samples = 2, share = 1.5 }', "key 'share' must be in \\(0, 1\\]"),
    ("", 'tune = { samples = 0, updates = 8 }', "key 'samples' must be >= 1"),
    ("", 'tune = { samples = 2, updates = 8, arms = ["az64"] }', "'az64' is not an arm"),
])
def test_bad_boards_and_tuning_steps_are_refused_naming_the_key(tmp_path, hex_extra, size_extra, message):
    with pytest.raises(SpecError, match=message):
        _spec(tmp_path, hex_extra=hex_extra, size_extra=size_extra)


def test_an_instance_of_an_unknown_game_is_refused(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(TWO_GAMES.format(hex_extra="", size_extra="").replace('game = "hex"', 'game = "checkers"'))
    with pytest.raises(SpecError, match="instances\\[0\\], key 'game': 'checkers' is not a game"):
        load_spec(str(path))


def test_a_budget_table_must_cover_every_board(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TWO_GAMES.format(hex_extra="", size_extra="").replace("hex3 = 256, ", ""))
    with pytest.raises(SpecError, match="key 'updates': no budget for instance hex3"):
        load_spec(str(path))


def test_resume_keeps_started_trials_as_planned_and_gives_the_others_their_tuned_values(tmp_path):
    spec_path = tmp_path / "spec.toml"
    _spec(tmp_path)
    out = tmp_path / "exp"
    first, manifest = prepare(str(spec_path), out, size="small", updates=None, resume=False, embedded=True)
    out.mkdir()
    (out / "spec.toml").write_text(spec_path.read_text())
    (out / EXPERIMENT_FILE).write_text(json.dumps(manifest))
    # The Hex board's AlphaZero tuning chose c_puct 2.0 (the preset has 3.0): its trials, not started, take it.
    step = out / TUNING_DIR / "hex3-az8"
    step.mkdir(parents=True)
    (step / TUNE_FILE).write_text(json.dumps({"instance": "hex3", "arm": "az8", "space": {"key": "actors.mcts.c_puct"},
                                              "chosen": {"value": 2.0}}))
    resumed, manifest2 = prepare(str(spec_path), out, size=None, updates=None, resume=True, embedded=True)
    assert {t["name"]: t["tuned"] for t in manifest2["trials"] if t["tuned"]} == {
        "hex3-az8-s0": {"actors.mcts.c_puct": 2.0}, "hex3-az8-s1": {"actors.mcts.c_puct": 2.0}}
    # A trial that had started with the other value is not run with a changed config.
    started = next(t for t in first.trials if t.name == "hex3-az8-s0")
    (out / run_dir_name(first, started)).mkdir()
    with pytest.raises(SpecError, match=r"trial hex3-az8-s0 has started, and the saved spec now plans it with "
                                        r"actors.mcts.c_puct: 3.0 -> 2.0 \(the code's presets changed\?\)"):
        prepare(str(spec_path), out, size=None, updates=None, resume=True, embedded=True)
    # A field the code added since, saved without it, reads at its default: the trial resumes.
    saved = json.loads((out / EXPERIMENT_FILE).read_text())
    for trial in saved["trials"]:
        trial["tuned"] = {"actors.mcts.c_puct": 2.0} if trial["name"].startswith("hex3-az8") else trial["tuned"]
        if trial["name"] == "hex3-az8-s0":
            trial["config"]["actors"]["mcts"]["c_puct"] = 2.0
            del trial["config"]["actors"]["compile"]  # written before the field existed
    (out / EXPERIMENT_FILE).write_text(json.dumps(saved))
    prepare(str(spec_path), out, size=None, updates=None, resume=True, embedded=True)


def test_a_range_extended_past_its_chosen_end_gives_the_better_of_both_choices(tmp_path):
    """The step chose c_puct 0.5, the low end; the values past it chose 0.23. The trials take
    the better of the two by tuning's ranking (ran to its budget, then the lower error rate),
    whichever range it came from."""
    from launch.experiments.tune_run import better_of, tuned_values

    def record(values_metrics, chosen, **extra):
        trials = [{"name": f"t{v}", "value": v, "metric": m, "updates": 64, "end": "budget"} for v, m in values_metrics]
        best = next(t for t in trials if t["value"] == chosen)
        return {"instance": "hex3", "arm": "az8", "space": {"key": "actors.mcts.c_puct"}, "trials": trials,
                "chosen": {"value": chosen, "trial": best["name"], "metric": best["metric"]}, **extra}

    base = record([(0.5, 0.2), (5.0, 0.4)], 0.5)
    for wider_metric, best in ((0.1, 0.23), (0.3, 0.5)):
        wider = record([(0.11, 0.35), (0.23, wider_metric)], 0.23)
        assert better_of(base, wider)["value"] == best
        out = tmp_path / f"exp-{best}"
        for name, content in (("hex3-az8", base), ("hex3-az8-beyond", wider | {
                "extends": {"step": "hex3-az8", "chosen": base["chosen"]}, "chosen_overall": better_of(base, wider)})):
            (out / TUNING_DIR / name).mkdir(parents=True)
            (out / TUNING_DIR / name / TUNE_FILE).write_text(json.dumps(content))
        assert tuned_values(out) == {("hex3", "az8"): {"actors.mcts.c_puct": best}}
    # An ASHA-stopped trial past the end never beats one that ran to its budget.
    stopped = record([(0.11, 0.0), (0.23, 0.25)], 0.23)
    stopped["trials"][0]["end"] = "stopped by ASHA"
    assert better_of(base, stopped)["value"] == 0.5


@pytest.mark.slow
def test_a_tuning_step_runs_before_its_board_and_its_value_is_the_trials(ray_session, tmp_path):
    """On Ray: AVI's epsilon tuned on Hex 3x3 (2 trials of 64 updates, then 1 past the
    chosen end), then AVI's and AlphaZero S=8's trials; tune.json holds each trial's value,
    seed, metric, end and curve, the AVI trial trains with the chosen epsilon, the trials'
    placement groups are gone, and a resume runs nothing again."""
    from launch.experiments.layout import TUNE_REPORT
    from launch.experiments.tune_run import run_experiment
    from launch.experiments.tuning import SEED_BASE, run_tuning

    ray = ray_session
    total_cpus = ray.cluster_resources()["CPU"]
    path = tmp_path / "one-board.toml"
    path.write_text(TWO_GAMES.format(hex_extra="", size_extra="").replace(
        "[sizes.full]", '[sizes.test]\ninstances = ["hex3"]\nupdates = 64\nseeds = 1\n'
        'tune = { samples = 2, updates = 64, arms = ["avi"], beyond = 1 }\nset = { replay = { shards = 1 } }\n\n'
        '[sizes.full]'))
    out = tmp_path / "exp"
    outcome = run_experiment(str(path), out, size="test", wandb_mode="disabled", log=lambda line: None)
    assert outcome == {"hex3-avi-s0": "done", "hex3-az8-s0": "done"}
    step = out / TUNING_DIR / "hex3-avi"
    record = json.loads((step / TUNE_FILE).read_text())
    metric = "eval/hex-3x3-play/error_rate"
    assert record["scheduler"] == {"name": "ASHAScheduler", "time_attr": "updates", "metric": metric, "mode": "min",
                                   "max_t": 64, "grace_period": 64, "reduction_factor": 2, "stop_last_trials": False}
    assert record["space"]["key"] == "actors.epsilon" and record["search"]["values"] == [0.02, 0.5]
    assert record["seeds"] == {"tuning": [SEED_BASE, SEED_BASE + 1], "comparison": [0]}  # not the comparison's
    trials = record["trials"]
    assert {(t["value"], t["seed"]) for t in trials} == {(0.02, SEED_BASE), (0.5, SEED_BASE + 1)}
    for t in trials:
        assert t["error"] is None and t["end"] in ("budget", "goal", "stopped by ASHA"), t
        assert isinstance(t["stopped_by_asha"], bool) and (t["end"] == "stopped by ASHA") == t["stopped_by_asha"]
        assert 0.0 <= t["metric"] <= 1.0 and t["updates"] == 64
        assert t["curve"] and t["curve"][-1] == [t["updates"], t["metric"]]
        config = json.loads((step / t["run_dir"] / "config.json").read_text())
        assert config["actors"]["epsilon"] == t["value"] and config["seed"] == t["seed"]
    assert trials[0]["metric"] <= trials[1]["metric"] or trials[1]["stopped_by_asha"]  # sorted, best first
    chosen = record["chosen"]
    assert chosen["value"] in (0.02, 0.5) and chosen["set"] == f"actors.epsilon={chosen['value']}"
    assert chosen["arm_set"] == f"set = {{ actors = {{ epsilon = {chosen['value']} }} }}"
    report = (step / TUNE_REPORT).read_text()
    assert f"| rank | actors.epsilon | seed | {metric} | updates | ended |" in report
    assert f"--set actors.epsilon={chosen['value']}" in report and "--resume" in report
    # Two samples: the chosen value is an end of the range, so the next value past it is tuned
    # too, on the next tuning seed, and the trials take the better of both.
    wider = json.loads((out / TUNING_DIR / "hex3-avi-beyond" / TUNE_FILE).read_text())
    assert [t["seed"] for t in wider["trials"]] == [SEED_BASE + 2]
    assert wider["extends"] == {"step": "hex3-avi", "chosen": record["chosen"]}
    assert not set(t["value"] for t in wider["trials"]) & set(t["value"] for t in record["trials"])
    chosen = wider["chosen_overall"]["value"]
    assert chosen in [t["value"] for t in record["trials"] + wider["trials"]]
    trials = {t["name"]: t for t in json.loads((out / EXPERIMENT_FILE).read_text())["trials"]}
    assert trials["hex3-avi-s0"]["tuned"] == {"actors.epsilon": chosen}
    ran = json.loads((out / trials["hex3-avi-s0"]["run_dir"] / "config.json").read_text())
    assert ran["actors"]["epsilon"] == chosen
    assert trials["hex3-az8-s0"]["tuned"] == {}
    # The trials' placement groups are gone with them.
    deadline = time.time() + 60
    while ray.available_resources().get("CPU", 0) != total_cpus and time.time() < deadline:
        time.sleep(1)
    assert ray.available_resources().get("CPU", 0) == total_cpus
    before = sorted(p.name for p in (out / TUNING_DIR).rglob("*"))
    assert run_experiment(str(path), out, resume=True, wandb_mode="disabled", log=lambda line: None) == outcome
    assert sorted(p.name for p in (out / TUNING_DIR).rglob("*")) == before
    # A second tuning into a directory that holds one is refused rather than mixed with it.
    with pytest.raises(SpecError, match="already holds a tuning run"):
        run_tuning(str(out / "spec.toml"), "avi", step, size="test", instance="hex3", samples=2, updates=64)
    # A tuning step stopped before its tune.json (its board's trials not started): run
    # again, its finished trials give Tune their records again instead of training again,
    # and it chooses as it did.
    (step / TUNE_FILE).unlink()
    metrics = {p: p.stat().st_mtime_ns for p in step.glob("*/metrics.jsonl")}
    assert len(metrics) == 2
    run_tuning(str(out / "spec.toml"), "avi", step, size="test", instance="hex3", samples=2, updates=64,
               wandb_mode="disabled", log=lambda line: None)
    again = json.loads((step / TUNE_FILE).read_text())
    assert again["chosen"] == record["chosen"]
    assert [(t["seed"], t["metric"], t["updates"]) for t in again["trials"]] == [
        (t["seed"], t["metric"], t["updates"]) for t in record["trials"]]
    assert {p: p.stat().st_mtime_ns for p in step.glob("*/metrics.jsonl")} == metrics
