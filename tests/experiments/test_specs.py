"""Experiment specs (launch/experiments/spec.py), without Ray: every named spec reads and
plans at both sizes; the full ones place on a cluster of the papers' kind and carry the
papers' budgets; bad fields, unmatched budgets and trials too big for the cluster are
refused with messages that name what is wrong."""

from __future__ import annotations

from dataclasses import replace

import pytest

import algorithms
from launch.experiments.spec import SPEC_DIR, SpecError, check_placement, load_spec, plan
from launch.experiments.tune_run import EXPERIMENT_FILE, prepare

NAMED = ("smoke", "avi-vs-az-connect4", "avi-vs-az-hex", "fgames", "azal-chomp", "azal-connect4",
         "gumbel-vs-puct-connect4", "gumbel-vs-puct-hex", "ladder-connect4", "ladder-hex",
         "hybrid-vs-avi-vs-az-connect4", "hybrid-vs-avi-vs-az-hex", "sampled-avi-othello", "sampled-avi-hex",
         "sampled-avi-go", "sampled-avi-connect4", "archive-starts-connect4", "archive-starts-chomp", "archive-starts-hex",
         "figure1-small")
# A cluster of the kind the full specs are for: four 16-CPU workers and one GPU node.
CLUSTER = [{"CPU": 16.0}] * 4 + [{"CPU": 16.0, "GPU": 1.0}]
THIS_MACHINE = [{"CPU": 2.0}]


def test_the_named_specs_are_the_ones_asked_for():
    assert {p.stem for p in SPEC_DIR.glob("*.toml")} == set(NAMED)


@pytest.mark.parametrize("name", NAMED)
def test_every_named_spec_plans_at_both_sizes_and_the_full_one_places_on_a_cluster(name):
    spec = load_spec(name)
    small = plan(spec, "small")
    assert check_placement(small, THIS_MACHINE) >= 1  # small runs here
    full = plan(spec, "full", gpus=1)
    assert len(full.trials) >= len(small.trials)
    assert check_placement(full, CLUSTER) >= 1
    instances = {i.name: i for i in spec.instances}
    budget = spec.sizes["full"]["updates"]
    for trial in full.trials:  # one run directory per trial, each config resolved and checked
        assert trial.config.game == instances[trial.instance].game
        assert trial.updates == (budget[trial.instance] if isinstance(budget, dict) else budget)
        assert any("GPU" in b for b in trial.bundles) == (trial.config.learner.device != "cpu")


def test_connect4_full_is_the_papers_grid_and_budget():
    full = plan(load_spec("avi-vs-az-connect4"), "full", gpus=1)
    seeds = {arm: sum(t.arm == arm for t in full.trials) for arm in {t.arm for t in full.trials}}
    assert seeds == {"avi": 20, "az32": 5, "az64": 5, "az128": 5, "az256": 5, "az512": 5}  # AVI paper 4.6
    sims = sorted({t.config.actors.mcts.simulations for t in full.trials if t.config.algo == "alphazero"})
    assert sims == [32, 64, 128, 256, 512]
    # Section 5.1: 2.4M gradient updates; Tables 3-4: 128 x 128 rows per iteration, 256 updates each.
    assert set(full.budgets.values()) == {(2_400_000, 2_400_000 // 256 * 128 * 128)}
    # Table 2: AVI against each budget over the 5 seeds both have.
    assert sorted((m["opponent"], m["seed"]) for m in full.matches) == sorted(
        (f"az{s}", seed) for s in (32, 64, 128, 256, 512) for seed in range(5))
    # Figure 2: cross-inference on the 5 seeds that have AlphaZero S=32's prior (native and
    # AVI's values), minimax over every seed of both networks, all openings (no cap at full).
    cross = [p for p in full.inference if p["entry"] == "cross-inference"]
    assert sorted((p["arm"], p["seed"], p["budget"]) for p in cross) == sorted(
        (arm, seed, b) for arm in ("az32", "avi") for seed in range(5) for b in (16, 64, 256))
    assert {p["prior_trial"] for p in cross if p["arm"] == "avi"} == {f"az32-s{seed}" for seed in range(5)}
    minimax = [p for p in full.inference if p["entry"] == "minimax"]
    assert len(minimax) == (20 + 5) * 3 and not any("max_openings" in p for p in full.inference)


def test_connect4_small_fits_this_machine_in_under_two_hours():
    small = plan(load_spec("avi-vs-az-connect4"), "small")
    arms = sorted((t.arm, t.config.algo, t.config.actors.mcts.simulations if t.config.algo != "avi" else 0)
                  for t in small.trials)
    assert arms == [("avi", "avi", 0)] * 3 + [("az32", "alphazero", 32)] * 2
    (updates, rows), = set(small.budgets.values())  # matched: one budget for both arms
    assert rows == updates // 256 * 128 * 128
    assert small.after_seconds > 0  # the matches and the inference study count too
    assert small.wall_seconds(1) < 2 * 3600
    assert small.wall_seconds(1) == pytest.approx(sum(small.estimated_seconds.values()) + small.after_seconds)


def test_the_dry_run_describes_the_trials_the_study_and_the_whole_wall_time():
    from launch.experiment import describe

    text = describe(plan(load_spec("avi-vs-az-connect4"), "small"), THIS_MACHINE, max_concurrent=1)
    assert "5 trials on connect4" in text
    assert "avi: seeds 0, 1, 2; 2048 updates, 131072 rows" in text
    assert "head-to-head: 2 matches after the trials (avi vs az32)" in text
    assert "inference study: 27 evaluations after the trials" in text
    # 3 x (2048 / 6.5 + 40) + 2 x (2048 / 2.3 + 40) + 1000 seconds: 65 min, 17 of them after the trials
    assert "estimated wall time: 65 min (17 of them after the trials)" in text


@pytest.mark.parametrize("game", ["connect4", "hex"])
def test_gumbel_vs_puct_has_its_arms_matched_with_three_seeds_and_small_fits_two_hours(game):
    """The gumbel-vs-puct specs: Gumbel AlphaZero at 4 and 16 simulations, PUCT at 16 and 64, AVI,
    one budget of rows and updates for all, 3 seeds each; small under 2 hours here."""
    spec = load_spec(f"gumbel-vs-puct-{game}")
    for size in ("small", "full"):
        p = plan(spec, size, gpus=1)
        arms = sorted((t.arm, t.config.algo, t.config.actors.search if t.config.algo != "avi" else "",
                       t.config.actors.mcts.simulations if t.config.algo != "avi" else 0) for t in p.trials)
        assert arms == sorted([("avi", "avi", "", 0)] * 3 + [("gumbel4", "alphazero", "gumbel", 4)] * 3
                              + [("gumbel16", "alphazero", "gumbel", 16)] * 3 + [("az16", "alphazero", "puct", 16)] * 3
                              + [("az64", "alphazero", "puct", 64)] * 3)
        (updates, rows), = set(p.budgets.values())  # matched
        assert rows == updates // 256 * 128 * 128
    small = plan(spec, "small")
    assert check_placement(small, THIS_MACHINE) >= 1
    assert all(seconds is not None for seconds in small.estimated_seconds.values())
    assert small.after_seconds > 0 and small.wall_seconds(1) <= 2 * 3600
    assert {m["arm"] for m in small.matches} == {"gumbel16"} and len(small.inference) == 2 * 3 * 2 * 3


def test_azal_specs_have_the_three_arms_of_the_paper():
    chomp = plan(load_spec("azal-chomp"), "full", gpus=1)
    arms = {(t.arm, t.config.algo, t.config.game_params.get("frames", 1)) for t in chomp.trials}
    assert arms == {("vanilla", "alphazero", 1), ("multiframe", "alphazero", 3), ("azal", "azal", 1)}
    assert {t.config.actors.mcts.simulations for t in chomp.trials} == {800}  # AZAL Table 5
    assert {(t.config.game_params["rows"], t.config.game_params["cols"]) for t in chomp.trials} == {(9, 10), (10, 11)}
    assert {t.seed for t in chomp.trials} == {0, 1, 2}


def test_fgames_full_is_three_shapes_of_ten_games():
    full = plan(load_spec("fgames"), "full", gpus=1)
    shapes = {(t.config.game_params["depth"], t.config.game_params["branching"]) for t in full.trials}
    assert shapes == {(20, 2), (10, 5), (5, 20)}
    assert len({t.instance for t in full.trials}) == 30


def _write(tmp_path, text: str, name: str = "spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


BASE = """
name = "t"
game = "tictactoe"
[arms.avi]
algo = "avi"
[arms.az]
algo = "alphazero"
{arm_extra}
[sizes.small]
updates = 64
{size_extra}
[sizes.full]
updates = 128
"""


@pytest.mark.parametrize("arm_extra, size_extra, message", [
    ("set = { no_such_field = 1 }", "", r"arm 'az', arm 'az' 'set'.*unknown config key 'no_such_field'"),
    ("set = { actors = { mcts = { simulation = 8 } } }", "",
     r"arm 'az'.*unknown config key 'actors.mcts.simulation'; keys of actors.mcts: c_base"),
    ("set = { mcts = { simulations = 8 } }", "",
     r"arm 'az'.*'mcts.simulations' is now actors.mcts.simulations \(each role owns its settings\)"),
    ("set = { learner = { batch_size = \"big\" } }", "", r"arm 'az'.*learner.batch_size=big.*invalid literal"),
    ("set = { seed = 3 }", "", r"arm 'az', key 'set': 'seed' is set by the size's 'seeds'"),
    ("colour = \"red\"", "", r"arm 'az': unknown key 'colour'"),
    ("compare_to = \"avi_archive\"", "", r"arm 'az', key 'compare_to': 'avi_archive' is not another arm; arms: avi, az"),
    ("compare_to = \"az\"", "", r"arm 'az', key 'compare_to': 'az' is not another arm"),
    ("", "seeds = { avi = 2, alphazero = 2 }", r"size 'small', key 'seeds': 'alphazero' is not an arm"),
    ("", "updates_per_second = { avi = -1 }", r"'updates_per_second.avi' must be a number > 0"),
    ("", "after_seconds = -60", r"size 'small', key 'after_seconds' must be >= 0, got -60"),
    ("", "evaluation = { suites = \"tictactoe-states,hex-play\" }",
     r"size 'small', arm 'avi': evaluation.suites: hex-play is not among the suites of "
     r"games.make\('tictactoe'\) \(tictactoe-states\)"),
    ("", "eval_every = 2", r"size 'small': key 'eval_every' is now 'evaluation.every' \(evaluation = \{ every = ... \}\)"),
    ("", "evaluation = { every = 0 }", r"size 'small'.*'evaluation.every=0': every must be >= 1, got 0"),
    ("[[head_to_head]]\narm = \"avi\"\nopponent = \"nobody\"\nsuite = \"x\"", "",
     r"head_to_head\[0\], key 'opponent': 'nobody' is not an arm"),
    ("[[head_to_head]]\narm = \"avi\"\nopponent = \"az\"\nsuite = \"tictactoe-states\"", "",
     r"head_to_head\[0\], key 'suite': 'tictactoe-states' is not a head-to-head suite of tictactoe"),
    ("", "order = \"random\"", r"size 'small', key 'order': 'random'; one of 'spec', 'seeds'"),
    ("", "rows = 5000", r"size 'small', arm 'avi', key 'rows': 5000 rows stated, but 64 updates .* collect 4096"),
])
def test_a_bad_field_is_refused_naming_the_file_arm_and_key(tmp_path, arm_extra, size_extra, message):
    path = _write(tmp_path, BASE.format(arm_extra=arm_extra, size_extra=size_extra))
    with pytest.raises(SpecError, match=message) as err:
        plan(load_spec(path), "small")
    assert path in str(err.value)


def test_bad_spec_files_are_refused_at_reading(tmp_path):
    with pytest.raises(SpecError, match="missing key 'game'"):
        load_spec(_write(tmp_path, 'name = "t"\n[arms.a]\nalgo = "avi"\n[sizes.small]\nupdates = 1\n'))
    with pytest.raises(SpecError, match="sizes: missing full"):
        load_spec(_write(tmp_path, 'name = "t"\ngame = "tictactoe"\n[arms.a]\nalgo = "avi"\n[sizes.small]\nupdates = 1\n'))
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(_write(tmp_path, "name = \n"))
    with pytest.raises(SpecError, match="no spec named 'nope'.*named specs: .*smoke"):
        load_spec("nope")


def test_unmatched_budgets_are_refused_unless_the_spec_says_so(tmp_path):
    # Half the epochs per iteration: twice the rows for the same updates (4,096 rows and
    # 32 updates an iteration instead of 64).
    text = BASE.format(arm_extra="set = { learner = { epochs_per_iteration = 2.0 } }", size_extra="")
    with pytest.raises(SpecError, match=r"budgets do not match \(avi: 64 updates, 4096 rows; az: 64 updates, "
                                        r"8192 rows\).*matched_budget = false"):
        plan(load_spec(_write(tmp_path, text)), "small")
    unmatched = plan(load_spec(_write(tmp_path, "matched_budget = false\n" + text, "b.toml")), "small")
    assert sorted(unmatched.budgets.values()) == [(64, 4096), (64, 8192)]


def test_a_trial_that_needs_more_cpus_than_the_cluster_is_refused_saying_what_is_missing(tmp_path):
    text = BASE.format(arm_extra="", size_extra="set = { actors = { num_actors = 8, num_envs = 256 } }")
    big = plan(load_spec(_write(tmp_path, text)), "small")
    with pytest.raises(SpecError, match=r"trial avi-s0 \(arm avi\) needs 9 CPU \(8 self-play actors and a CPU "
                                        r"learner\); the cluster has 2 CPU: missing 7 CPU"):
        check_placement(big, THIS_MACHINE)
    # Enough CPUs in all, but a GPU learner on a cluster without GPUs is missing the GPU.
    gpu = plan(load_spec(_write(tmp_path, BASE.format(arm_extra="", size_extra="set = { learner = { device = \"cuda\" } }"),
                                "g.toml")), "small", gpus=1)
    with pytest.raises(SpecError, match="missing 1 GPU"):
        check_placement(gpu, [{"CPU": 64.0}])
    assert check_placement(big, [{"CPU": 9.0}, {"CPU": 9.0}]) == 2  # two trials at once


def test_resume_needs_an_experiment_and_a_new_one_an_empty_directory(tmp_path):
    with pytest.raises(SpecError, match=f"--resume {tmp_path}: no experiment.json there"):
        prepare("smoke", tmp_path, size=None, updates=None, resume=True, embedded=True)
    (tmp_path / EXPERIMENT_FILE).write_text("{}")
    with pytest.raises(SpecError, match="already holds an experiment; use --resume"):
        prepare("smoke", tmp_path, size="small", updates=None, resume=False, embedded=True)
    plan_, manifest = prepare("smoke", tmp_path / "new", size=None, updates=32, resume=False, embedded=True)
    assert plan_.size == "small" and manifest["updates_override"] == 32
    assert {t["run_dir"] for t in manifest["trials"]} == {"smoke-avi-s0", "smoke-avi-s1", "smoke-az16-s0",
                                                           "smoke-az16-s1"}


def test_a_dataset_that_is_not_built_is_refused_at_start_up(tmp_path, monkeypatch):
    """A committed dataset without its file (the Hex sets before their hours of solver
    time) refuses the experiment before Ray starts, naming the suites, the dataset and
    the build command; nothing is written to the experiment directory."""
    import evaluation.datasets as datasets
    from launch.experiments.spec import check_datasets

    check_datasets(plan(load_spec("avi-vs-az-connect4"), "small"))  # the committed Connect Four sets are there
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "no-data")
    with pytest.raises(SpecError) as err:
        prepare("avi-vs-az-connect4", tmp_path / "exp", size="small", updates=None, resume=False, embedded=True)
    message = str(err.value)
    assert "size 'small'" in message
    assert "the committed set(s) connect4-uniform, connect4-eps-optimal, connect4-openings are missing" in message
    assert "build them with `python -m evaluation build --game connect4`" in message
    assert not (tmp_path / "exp").exists()


def _smoke_with(tmp_path, stop_when: str):
    text = (SPEC_DIR / "smoke.toml").read_text().replace("[sizes.test]\n", f"[sizes.test]\nstop_when = {stop_when}\n")
    path = tmp_path / "smoke-stop.toml"
    path.write_text(text)
    return load_spec(str(path))


def test_a_size_may_end_its_trials_at_a_goal(tmp_path):
    from launch.experiments.spec import reached

    spec = _smoke_with(tmp_path, '{ "eval/tictactoe-states/value_mae" = 0.05, "eval/tictactoe-states/policy_regret" = 0 }')
    trials = plan(spec, "test").trials
    assert trials and all(t.stop_when == {"eval/tictactoe-states/value_mae": 0.05,
                                          "eval/tictactoe-states/policy_regret": 0} for t in trials)
    assert trials[0].to_dict()["stop_when"] == trials[0].stop_when  # what the Tune trial receives
    goal = trials[0].stop_when
    assert reached(goal, {"eval/tictactoe-states/value_mae": 0.05, "eval/tictactoe-states/policy_regret": 0.0})
    assert not reached(goal, {"eval/tictactoe-states/value_mae": 0.049, "eval/tictactoe-states/policy_regret": 0.01})
    assert not reached(goal, {"eval/tictactoe-states/value_mae": 0.01})  # a record without every key: not yet
    assert not reached({}, {"eval/tictactoe-states/value_mae": 0.0})  # no goal: the budget ends the trial
    # A key with * names the suite of whichever board a trial is on.
    board = {"eval/*-play/error_rate": 0.0}
    assert reached(board, {"eval/connect4-5x4-play/error_rate": 0.0, "eval/connect4-5x4-uniform/value_mae": 0.3})
    assert not reached(board, {"eval/connect4-5x4-play/error_rate": 0.02})
    assert not reached(board, {"eval/connect4-5x4-uniform/value_mae": 0.0})  # no play record yet


def test_a_goal_is_met_only_once_it_holds_at_evaluations_in_a_row(tmp_path):
    from launch.experiments.spec import MIN_HOLD, GoalWatch

    assert plan(_smoke_with(tmp_path, '{ "eval/tictactoe-states/value_mae" = 0.05 }'), "test").trials[0].hold == 3
    play = "eval/connect4-4x4-play/error_rate"
    watch = GoalWatch({"eval/*-play/error_rate": 0.0}, hold=MIN_HOLD)
    # 0, a loss, then 0 three times with records between them that evaluate no play suite.
    seen = [watch.observe(r) for r in ({play: 0.0}, {play: 0.01}, {play: 0.0}, {"updates": 64},
                                       {"eval/connect4-4x4-uniform/value_mae": 0.2}, {play: 0.0}, {play: 0.0})]
    assert seen == [False, False, False, False, False, False, True]
    assert not GoalWatch({}, hold=3).observe({play: 0.0})  # no goal: the budget ends the trial
    # A resumed run logs again the evaluations after its checkpoint (at 256): they replace
    # the first run's from there, not add to its count.
    resumed = GoalWatch({"eval/*-play/error_rate": 0.0}, hold=3)
    first_run = [{"updates": 128, play: 0.0}, {"updates": 256, play: 0.0}, {"updates": 384, play: 0.1}]
    assert [resumed.observe(r) for r in first_run] == [False, False, False]
    # Resumed from 256: its 384 replaces the first run's (not added after it): 3 in a row.
    assert resumed.observe({"updates": 384, play: 0.0}) and resumed.streak == 3
    twice = GoalWatch({"eval/*-play/error_rate": 0.0}, hold=3)
    assert not any(twice.observe(r) for r in [{"updates": 128, play: 0.0}, {"updates": 256, play: 0.0},
                                               {"updates": 256, play: 0.0}])  # 256 logged twice: 2, not 3
    assert twice.streak == 2
    again = GoalWatch({"eval/*-play/error_rate": 0.0}, hold=3)
    for r in [{"updates": 128, play: 0.1}, {"updates": 256, play: 0.0}, {"updates": 384, play: 0.0}]:
        again.observe(r)
    assert not again.observe({"updates": 256, play: 0.0})  # resumed from 128: 256 again, one in a row
    assert again.streak == 1


@pytest.mark.parametrize("hold, message", [("2", "must hold at 3 or more evaluations"),
                                           ("true", "key .hold. must be an integer")])
def test_a_goal_held_at_fewer_than_three_evaluations_is_refused(tmp_path, hold, message):
    with pytest.raises(SpecError, match=message):
        _smoke_with(tmp_path, '{ "eval/tictactoe-states/value_mae" = 0.05 }\nhold = ' + hold)


def test_a_goal_that_names_no_evaluation_is_refused(tmp_path):
    with pytest.raises(SpecError, match="key 'stop_when': 'updates'"):
        _smoke_with(tmp_path, '{ updates = 100 }')


@pytest.mark.parametrize("name, boards", [("ladder-connect4", {"4x4": (4, 4), "5x4": (5, 4), "5x5": (5, 5)}),
                                          ("ladder-hex", {"3x3": (3, 3), "4x4": (4, 4), "5x5": (5, 5)})])
def test_a_ladder_trains_each_board_with_its_preset_until_its_goal(name, boards):
    small = plan(load_spec(name), "small")
    assert {t.instance for t in small.trials} == set(boards)
    for trial in small.trials:
        config, (w, h) = trial.config, boards[trial.instance]
        assert config.game_params == ({"width": w, "height": h} if config.game == "connect4" else {"size": w})
        assert config.actors.collect_steps == 32  # the small boards' preset (games/<game>.py preset_at)
        assert config.replay.capacity == 32768  # the last 8 iterations' rows: fresh one-step targets
        assert trial.stop_when == {"eval/*-play/error_rate": 0.0}
    # One seed of every board and arm runs first: a ladder stopped by its clock spans its boards.
    ran = small.in_run_order()
    per_seed = len(boards) * len({t.arm for t in small.trials})
    assert [(t.instance, t.arm) for t in ran[:per_seed]] == [(t.instance, t.arm) for t in small.trials if t.seed == 0]
    assert [t.seed for t in ran] == sorted(t.seed for t in small.trials)
    assert sorted(t.name for t in ran) == sorted(t.name for t in small.trials)
    assert [t.seed for t in small.trials[:3]] == [0, 1, 2]  # the manifest and report keep the spec's order


@pytest.mark.parametrize("name", ["hybrid-vs-avi-vs-az-connect4", "hybrid-vs-avi-vs-az-hex"])
def test_the_hybrid_is_matched_with_avi_and_alphazero_and_scored_by_its_value_head(name):
    small = plan(load_spec(name), "small")
    arms = {t.arm: t.config for t in small.trials}
    assert {a: c.algo for a, c in arms.items()} == {"avi": "avi", "hybrid": "hybrid", "az32": "alphazero"}
    assert arms["hybrid"].network.policy_head and arms["hybrid"].evaluation.policy == "greedy"
    assert len({(t.updates, t.config.rows_per_iteration) for t in small.trials}) == 1  # matched rows and updates
    assert {t.seed for t in small.trials} == {0, 1, 2}
    assert {p["policy"] for p in small.inference} == {"mcts"} and {p["arm"] for p in small.inference} == {"hybrid", "az32"}
    board = small.trials[0].instance  # "play": the board's own play suite
    assert {p["suite"] for p in small.inference} == {f"{small.trials[0].config.game}-{board}-play"}
    assert {p["suite"] for p in plan(load_spec(name), "test").inference} == {
        f"{small.trials[0].config.game}-{'4x4' if 'connect4' in name else '3x3'}-play"}


@pytest.mark.parametrize("game, boards", [("hex", {"3x3", "4x4", "5x5"}), ("connect4", {"4x4"})])
def test_the_hybrids_ladder_size_is_the_ladders_avi_with_a_policy_head(game, boards):
    """Its trials are compared with the ladder's AVI and AlphaZero trials of the same board and
    seed, which it does not run again: they must differ from the ladder's AVI only by what
    the hybrid adds (its algorithm and its policy head)."""
    hybrid = plan(load_spec(f"hybrid-vs-avi-vs-az-{game}"), "ladder")
    ladder = {(t.instance, t.seed): t for t in plan(load_spec(f"ladder-{game}"), "small").trials
              if t.arm == "avi" and t.instance in boards}
    assert {t.arm for t in hybrid.trials} == {"hybrid"}
    assert {(t.instance, t.seed) for t in hybrid.trials} == set(ladder) and len(ladder) == 3 * len(boards)
    assert [t.seed for t in hybrid.in_run_order()] == sorted(t.seed for t in hybrid.trials)
    for trial in hybrid.trials:
        avi = ladder[(trial.instance, trial.seed)]
        assert (trial.updates, trial.rows, trial.stop_when) == (avi.updates, avi.rows, avi.stop_when)
        assert trial.config.network.policy_head and not avi.config.network.policy_head
        # Both play greedily on their values: AVI's "auto" is its greedy policy.
        assert trial.config.evaluation.policy == algorithms.descriptor("avi").report_policy == "greedy"
        assert replace(trial.config, algo="avi", algorithm=avi.config.algorithm, network=avi.config.network,
                       evaluation=replace(trial.config.evaluation, policy=avi.config.evaluation.policy)) == avi.config


@pytest.mark.parametrize("name, k", [("sampled-avi-othello", 4), ("sampled-avi-go", 4), ("sampled-avi-hex", 4),
                                     ("sampled-avi-connect4", 2)])
def test_sampled_avi_arms_sample_k_moves_beside_exhaustive_avi(name, k):
    arms = {t.arm: t.config.actors for t in plan(load_spec(name), "small").trials}
    assert arms["avi"].sample_actions == 0
    assert (arms[f"avi_k{k}"].sample_actions, arms[f"avi_k{k}"].sample_by) == (k, "uniform")
    assert (arms[f"hybrid_k{k}"].sample_actions, arms[f"hybrid_k{k}"].sample_by) == (k, "prior")


@pytest.mark.parametrize("name, engine", [("sampled-avi-othello", "othello-grhino"), ("sampled-avi-go", "go-gnugo")])
def test_sampled_avi_on_an_engines_game_plays_the_engine_in_training(name, engine):
    """Othello and Go have no oracle: their trials are scored against the outside engine,
    which is not among the games' default suites, so each size but the test one names it."""
    from launch.evaluator import evaluated_suites

    for size in ("small", "full"):
        for trial in plan(load_spec(name), size, gpus=1).trials:
            suites = {s.name: s.kind for s in evaluated_suites(trial.config.game_network.make_game(),
                                                               trial.config.evaluation.suites)}
            assert suites.get(engine) == "engine", (size, trial.arm, trial.config.evaluation.suites)
            assert trial.config.evaluation.play_every >= 1


def test_the_sampled_avi_ladder_size_is_the_hex_ladders_avi_sampling_four_moves():
    """Its trials are compared with the ladder's AVI trial of the same board and seed (every
    move evaluated), which it does not run again: uniform sampling must differ from it by
    the sample alone, the prior's sampling by the hybrid's algorithm and policy head too."""
    sampled = plan(load_spec("sampled-avi-hex"), "ladder")
    ladder = {(t.instance, t.seed): t for t in plan(load_spec("ladder-hex"), "small").trials
              if t.arm == "avi" and t.instance in ("4x4", "5x5")}
    assert sorted((t.arm, t.instance, t.seed) for t in sampled.trials) == sorted(
        (arm, board, seed) for arm in ("avi_k4", "hybrid_k4") for (board, seed) in ladder)
    assert [t.seed for t in sampled.in_run_order()][:4] == [0, 0, 0, 0]
    for trial in sampled.trials:
        avi = ladder[(trial.instance, trial.seed)]
        assert (trial.updates, trial.rows, trial.stop_when) == (avi.updates, avi.rows, avi.stop_when)
        actors = trial.config.actors
        assert actors.sample_actions == 4 and avi.config.actors.sample_actions == 0
        unsampled = replace(trial.config, algo="avi", algorithm=avi.config.algorithm, network=avi.config.network,
                            actors=replace(actors, sample_actions=0, sample_by=avi.config.actors.sample_by),
                            evaluation=replace(trial.config.evaluation, policy=avi.config.evaluation.policy))
        assert unsampled == avi.config
        if trial.arm == "avi_k4":
            assert trial.config == replace(avi.config, actors=replace(avi.config.actors, sample_actions=4))
        else:
            assert trial.config.algo == "hybrid" and actors.sample_by == "prior" and trial.config.network.policy_head
            # It plays greedily on its values, as AVI's "auto" does.
            assert trial.config.evaluation.policy == algorithms.descriptor("avi").report_policy == "greedy"


def test_the_connect4_sampled_avi_ladder_size_is_the_ladders_avi_with_and_without_the_sample():
    """Every seed a triple on 4x4: exhaustive AVI is the Connect Four ladder's AVI trial of the
    same seed, run again; uniform sampling differs from it by the sample alone, the prior's
    by the hybrid's algorithm and policy head too."""
    sampled = plan(load_spec("sampled-avi-connect4"), "ladder")
    ladder = {t.seed: t for t in plan(load_spec("ladder-connect4"), "small").trials
              if t.arm == "avi" and t.instance == "4x4"}
    assert sorted((t.arm, t.seed) for t in sampled.trials) == sorted(
        (arm, seed) for arm in ("avi", "avi_k2", "hybrid_k2") for seed in ladder)
    assert {t.instance for t in sampled.trials} == {"4x4"}
    assert [t.seed for t in sampled.in_run_order()][:3] == [0, 0, 0]
    for trial in sampled.trials:
        avi = ladder[trial.seed]
        assert (trial.updates, trial.rows, trial.stop_when) == (avi.updates, avi.rows, avi.stop_when)
        if trial.arm == "avi":
            assert trial.config == avi.config
        elif trial.arm == "avi_k2":
            assert trial.config == replace(avi.config, actors=replace(avi.config.actors, sample_actions=2))
        else:
            actors = trial.config.actors
            assert (actors.sample_actions, actors.sample_by) == (2, "prior") and trial.config.network.policy_head
            assert trial.config.evaluation.policy == algorithms.descriptor("avi").report_policy == "greedy"
            assert replace(trial.config, algo="avi", algorithm=avi.config.algorithm, network=avi.config.network,
                           actors=replace(actors, sample_actions=0, sample_by=avi.config.actors.sample_by),
                           evaluation=replace(trial.config.evaluation, policy=avi.config.evaluation.policy)) == avi.config


@pytest.mark.parametrize("name,bases", [("archive-starts-connect4", ("az32", "azal", "avi")),
                                        ("archive-starts-chomp", ("az32", "azal", "avi")), ("archive-starts-hex", ("az32",))])
def test_archive_starts_arms_differ_only_in_the_archive(name, bases):
    configs = {t.arm: t.config for t in plan(load_spec(name), "small").trials}
    assert set(configs) == {arm for base in bases for arm in (base, f"{base}_archive")}
    spec = load_spec(name)
    for base in bases:
        plain, archive = configs[base], configs[f"{base}_archive"]
        assert spec.arms[f"{base}_archive"].compare_to == base  # the report pairs it with its algorithm
        assert plain.actors.archive_start == 0.0 and archive.actors.archive_start == 0.5
        assert archive == replace(plain, actors=replace(plain.actors, archive_start=0.5))


@pytest.mark.parametrize("name,ladder_name,board,arms", [
    ("archive-starts-hex", "ladder-hex", "5x5", {"az32_archive": "az32"}),
    ("archive-starts-connect4", "ladder-connect4", "4x4",
     {"az32": "az32", "az32_archive": "az32", "azal": "azal32", "azal_archive": "azal32"})])
def test_an_archive_ladder_size_is_the_ladders_trials_with_archive_starts(name, ladder_name, board, arms):
    """Its trials are compared with the ladder's trials of the same algorithm, board and
    seed (Hex: the ladder's own, not run again; Connect Four: run again in the experiment):
    an archive arm differs from them by the archive alone, an arm without it not at all."""
    archive = plan(load_spec(name), "ladder")
    ladder = {(t.arm, t.seed): t for t in plan(load_spec(ladder_name), "small").trials if t.instance == board}
    seeds = sorted({seed for _, seed in ladder})
    assert sorted((t.arm, t.seed) for t in archive.trials) == sorted((arm, s) for arm in arms for s in seeds)
    for trial in archive.trials:
        plain = ladder[arms[trial.arm], trial.seed]
        assert trial.group == plain.group  # the report joins them by group and seed (--beside)
        assert (trial.updates, trial.rows, trial.stop_when) == (plain.updates, plain.rows, plain.stop_when)
        archive_start = 0.5 if trial.arm.endswith("_archive") else 0.0
        assert trial.config == replace(plain.config, actors=replace(plain.config.actors, archive_start=archive_start))


@pytest.mark.parametrize("name, arms", [
    ("hybrid-vs-avi-vs-az-hex", {"hybrid": "avi"}),
    ("sampled-avi-hex", {"avi_k4": "avi", "hybrid_k4": "avi"}),
    ("archive-starts-hex", {"az32_archive": "az32"})])
def test_a_held_ladder_size_joins_the_hex_ladders_held_trials(name, arms):
    """The results pages draw these trials beside the ladder's `small-held` trials of the same
    board and seed: each must be that trial but for what its arm changes (the hybrid's
    algorithm and policy head, the sample, the archive), with the same budget, goal, hold
    and kept checkpoints, and every seed of a board before the next board."""
    held = plan(load_spec(name), "ladder-held")
    ladder = {(t.arm, t.instance, t.seed): t for t in plan(load_spec("ladder-hex"), "small-held").trials}
    assert sorted((t.arm, t.instance, t.seed) for t in held.trials) == sorted(
        (arm, board, seed) for arm in arms for (base, board, seed) in ladder if base == arms[arm])
    assert [t.instance for t in held.in_run_order()] == sorted(t.instance for t in held.trials)
    for trial in held.trials:
        base = ladder[arms[trial.arm], trial.instance, trial.seed]
        assert trial.group == base.group
        assert (trial.updates, trial.rows, trial.stop_when, trial.hold) == (base.updates, base.rows, base.stop_when, base.hold)
        config, actors = trial.config, trial.config.actors
        undone = replace(config, algo=base.config.algo, algorithm=base.config.algorithm, network=base.config.network,
                         actors=replace(actors, sample_actions=base.config.actors.sample_actions,
                                        sample_by=base.config.actors.sample_by,
                                        archive_start=base.config.actors.archive_start),
                         evaluation=replace(config.evaluation, policy=base.config.evaluation.policy))
        assert undone == base.config, trial.name
