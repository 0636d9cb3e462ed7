"""Every ``benchmarks/`` script's real entry point at a tiny size, so that a changed
signature or argument fails the suite rather than the next person who runs it.

Scripts that pin their process to one core or set torch's threads at import run as
``python -m benchmarks.<name>`` subprocesses; those on Ray run ``main(argv)`` in the
test process on the session's cluster (``ray_session``: ``start_ray`` joins it). Each
case checks the report, not only the exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "launch" / "data" / "old-avi-run"  # a run directory of 8 updates, with its checkpoint

# Script -> the test(s) below (or elsewhere) that run its entry point. A new script
# without one fails test_every_benchmark_has_a_smoke_test.
COVERED = {
    "avi_sampled_actions": "test_subprocess[avi_sampled_actions]",
    "avi_speed": "test_avi_speed_pools_on_ray, test_subprocess[avi_speed_hit_rates]",
    "azal_speed": "test_azal_speed_on_ray",
    "chomp_grundy_speed": "test_subprocess[chomp_grundy_speed]",
    "connect4_solver_speed": "test_subprocess[connect4_solver_speed]",
    "end_records": "test_subprocess[end_records] (a committed run directory against itself)",
    "evaluation_speed": "test_subprocess[evaluation_speed]",
    "games_speed": "test_subprocess[games_speed]",
    "gpu_node": "tests/launch/test_gpu_node_command.py (its small size, end to end)",
    "hex_solver_speed": "test_subprocess[hex_solver_speed]",
    "mcts_speed": "test_subprocess[mcts_speed]",
    "network_speed": "test_subprocess[network_speed]",
    "node_wheels": "test_node_wheels_without_network",
    "oracle_store_speed": "test_subprocess[oracle_store_speed]",
    "peer_speed": "test_subprocess[peer_speed_ours]; tests/benchmarks/test_peer_speed.py",
    "phase_threads": "test_subprocess[phase_threads]",
    "replay_speed": "test_replay_speed_on_ray",
    "soak": "test_subprocess[soak_help] (its imports and arguments) and tests/benchmarks/test_soak.py (its parts; "
            "a soak is minutes of training with faults and a Redis server)",
    "tree_reuse": "test_subprocess[tree_reuse]",
}


def test_every_benchmark_has_a_smoke_test():
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(COVERED), (f"benchmarks without a smoke test: {sorted(scripts - set(COVERED))}; "
                                     f"listed but gone: {sorted(set(COVERED) - scripts)}")


def run(module: str, *args: str, timeout: float = 240) -> str:
    """``python -m benchmarks.<module> args`` from the repository root: its stdout (fails
    with its stderr's tail on a non-zero exit)."""
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{module} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def json_doc(out: str):
    """The first JSON document of ``out`` (a report may print it over several lines)."""
    start = min(i for i in (out.find("{"), out.find("[")) if i >= 0)
    return json.JSONDecoder().raw_decode(out[start:])[0]


# (id, module, arguments, a check of stdout, seconds over ~5: slow)
CASES = [
    ("avi_sampled_actions", "avi_sampled_actions",
     ["--game", "tictactoe", "--k", "0", "2", "--num-envs", "8", "--warmup", "2", "--phase-steps", "2", "--phases", "1"],
     lambda out: json_doc(out)["game"] == "tictactoe" and set(json_doc(out)["by_k"]) == {"0", "2"}, True),
    ("avi_speed_hit_rates", "avi_speed",
     ["--hit-rates", "--games", "tictactoe", "--num-envs", "8", "--warmup", "2", "--phases", "1", "--phase-steps", "2"],
     lambda out: "| tictactoe |" in out, True),
    ("chomp_grundy_speed", "chomp_grundy_speed", ["--boards", "3x4", "--queries", "1000", "--json"],
     lambda out: bool(json_doc(out)), True),
    ("connect4_solver_speed", "connect4_solver_speed", ["--early", "1", "--json"],
     lambda out: len(json_lines(out)) >= 1, True),
    ("end_records", "end_records", [str(OLD_RUN), str(OLD_RUN), "--json"],
     lambda out: json_doc(out)["bitwise"] and json_doc(out)["fields"] > 0 and not json_doc(out)["differ"], False),
    ("evaluation_speed", "evaluation_speed", ["--threads", "1", "--repeats", "1", "--openings", "1", "--json"],
     lambda out: len(json_lines(out)) >= 1, True),
    ("games_speed", "games_speed", ["--games", "tictactoe", "--batch", "8", "--seconds", "0.05", "--repeats", "1",
                                    "--no-compile", "--json"],
     lambda out: "tictactoe" in out, False),
    ("hex_solver_speed", "hex_solver_speed", ["--hsearch", "2", "--json"], lambda out: len(json_lines(out)) >= 1, False),
    ("mcts_speed", "mcts_speed", ["--batches", "2", "--simulations", "4", "--seconds", "0.05", "--repeats", "1",
                                  "--json"],
     lambda out: all(row["sims_per_s"] > 0 for row in json_doc(out)) and len(json_doc(out)) == 2, True),
    ("network_speed", "network_speed", ["--games", "tictactoe", "--batch", "16", "--train-batch", "8", "--seconds",
                                        "0.05", "--repeats", "1", "--json"],
     lambda out: "tictactoe" in json_doc(out), True),
    ("oracle_store_speed", "oracle_store_speed", ["--positions", "200", "--batch", "50", "--repeats", "1"],
     lambda out: "sqlite:" in out, False),
    ("phase_threads", "phase_threads", ["--game", "tictactoe", "--threads", "1", "--steps", "1", "--seconds", "0.05",
                                        "--repeats", "1", "--json"],
     lambda out: bool(json_doc(out)), True),
    ("tree_reuse", "tree_reuse", ["--simulations", "4", "--openings", "1", "--repeats", "1", "--json"],
     lambda out: bool(json_doc(out)), True),
    ("soak_help", "soak", ["--help"], lambda out: "--fault-every" in out and "--hosts" in out, True),
    ("peer_speed_ours", "peer_speed", ["--tiny", "--ours-only", "--json", "--tasks", "alphazero_puct_connect4",
                                       "avi_connect4", "learner_alphazero_connect4"],
     lambda out: {row["task"] for row in json_lines(out)} >= {"alphazero_puct_connect4", "avi_connect4",
                                                                "learner_alphazero_connect4"}
     and all(row["ours"] > 0 for row in json_lines(out)), True),
]


@pytest.mark.parametrize("module, args, check", [
    pytest.param(module, args, check, id=name, marks=[pytest.mark.slow] if slow else [])
    for name, module, args, check, slow in CASES])
def test_subprocess(module, args, check):
    out = run(module, *args)
    assert check(out), f"{module}: unexpected report:\n{out[-3000:]}"


def test_avi_speed_pools_on_ray(ray_session, capsys):
    from benchmarks import avi_speed

    avi_speed.main(["--game", "tictactoe", "--steps", "1", "--repeats", "1", "--updates", "2", "--actors", "1",
                    "--set", "actors.num_envs=8", "--set", "learner.batch_size=8"])
    out = capsys.readouterr().out
    assert "1 actor(s), eval_cache=off" in out and "learner:" in out and "updates/s" in out


def test_azal_speed_on_ray(ray_session, capsys, monkeypatch):
    from benchmarks import azal_speed
    from launch import config as launch_config

    real = launch_config.resolve

    def small(game, preset=None, overrides=(), algo="avi", seed=None):  # 4 environments, 2 simulations
        return real(game, preset, [*overrides, "actors.num_envs=4", "actors.mcts.simulations=2"], algo, seed)

    monkeypatch.setattr(azal_speed, "resolve", small)
    azal_speed.main(["--steps", "2", "--repeats", "1", "--json"])
    out = capsys.readouterr().out
    assert "| AlphaZero | - |" in out and "| AZAL | 1 |" in out


def test_replay_speed_on_ray(ray_session, capsys):
    from benchmarks import replay_speed

    replay_speed.main(["--seconds", "0.2", "--repeats", "1", "--capacity", "20000", "--rows-per-add", "64",
                       "--batch", "16", "--producers", "1"])
    out = capsys.readouterr().out
    assert "rows/s" in out or "batches/s" in out, out


def test_node_wheels_without_network(tmp_path, monkeypatch):
    """The download is the network's part; the rest (the slimmed Ray wheel, the RECORD
    without the dropped entries, the listing) runs for real on a wheel built here."""
    from benchmarks import node_wheels

    def download(requirement: str, out: Path, python_version: str) -> Path:
        name = requirement.split("==")[0].replace("-", "_")
        wheel = out / f"{name}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            kept, dropped = f"{name}/__init__.py", f"{name}/{node_wheels.RAY_UNUSED[0].split('/', 1)[-1]}x.jar"
            z.writestr(kept, "")
            z.writestr(dropped if name == "ray" else f"{name}/more.py", "x")
            z.writestr(f"{name}-1.0.dist-info/RECORD", f"{kept},,\n{dropped},,\n")
        return wheel

    monkeypatch.setattr(node_wheels, "download", download)
    assert node_wheels.main(["--out", str(tmp_path / "whl")]) == 0
    ray_wheel = zipfile.ZipFile(next((tmp_path / "whl").glob("ray-*.whl")))
    names = ray_wheel.namelist()
    assert "ray/__init__.py" in names and not any(n.startswith(node_wheels.RAY_UNUSED) for n in names)
    assert node_wheels.RAY_UNUSED[0] not in ray_wheel.read("ray-1.0.dist-info/RECORD").decode()
