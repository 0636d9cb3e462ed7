"""The real `python -m oracle_service solve` command, with good and bad lines mixed:
each good line is answered in order, each bad one gets one error line naming its line
number and problem, and the exit status is non-zero when any line was bad."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import games
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_solver import Connect4Solver
from oracle_service.fgame_oracle import FGamePathOracle

REPO = Path(__file__).resolve().parents[2]


def run(args, lines):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "oracle_service", "solve", *args],
                          input="".join(f"{x}\n" for x in lines), capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)


def check_errors(stderr, expected):
    """expected: [(line number, words in the problem)], in order, one error line each."""
    got = stderr.strip().splitlines()
    assert len(got) == len(expected), stderr
    for line, (number, words) in zip(got, expected, strict=True):
        assert line.startswith(f"error: line {number}: "), line
        assert words in line, line


def test_chomp_mixed_lines(tmp_path):
    rows, cols = 3, 9
    table = ChompTable(rows, cols, use_disk=False)
    lines = ["9,9,9", "3,2,1", "", "9,9", "3,4,1", "1,0,0", "x,1,0", "10,2,1", "0,0,0", "2,2,0", "4,3,0"]
    proc = run(["--game", "chomp", "--rows", "3", "--cols", "9", "--cache-dir", str(tmp_path)], lines)
    assert proc.returncode == 1
    expected = []
    for p in ([9, 9, 9], [3, 2, 1], [2, 2, 0], [4, 3, 0]):
        cells = ",".join(str(a) for a in table.winning_actions(p)) or "-"
        expected.append(f"{','.join(map(str, p))} {table.grundy(p)} {cells}")
    assert proc.stdout.splitlines() == expected
    assert expected[-1] == "4,3,0 0 -"  # [a, a - 1] on two rows: a P-position, no winning cell
    # [2,2] moves to [1,1] (Grundy 1), [2,0] (1) or [2,1] (0): Grundy 2, one winning
    # cell, (1, 1) = action 1 * 9 + 1.
    assert expected[2] == "2,2,0 2 10"
    check_errors(proc.stderr, [(4, "wrong board size"), (5, "non-increasing"), (6, "already over"),
                               (7, "malformed profile"), (8, "wrong board size"), (9, "poisoned square")])
    assert (tmp_path / "grundy_3x9.npy").exists()

    good = run(["--game", "chomp", "--rows", "3", "--cols", "9", "--cache-dir", str(tmp_path)], lines[:2])
    assert (good.returncode, good.stderr) == (0, "")
    assert good.stdout.splitlines() == expected[:2]


def test_fgame_mixed_lines():
    params = dict(depth=4, branching=3, beta=0.3, seed=1)
    oracle = FGamePathOracle(**params)
    leaf = [2]
    while not oracle.over([leaf])[0]:
        leaf.append(2)
    lines = ["-", "0", "5", "0,1", "0,-1", ",".join(map(str, leaf)), ",".join(map(str, leaf + [0]))]
    proc = run(["--game", "fgame"] + [f"--{k}={v}" for k, v in params.items()], lines)
    assert proc.returncode == 1
    expected = [f"{line} {oracle.value(p)} {','.join(map(str, oracle.optimal_actions(p)))}"
                for line, p in (("-", []), ("0", [0]), ("0,1", [0, 1]))]
    assert expected[0].startswith("- 1 ")  # the root is a first-player win
    assert proc.stdout.splitlines() == expected
    check_errors(proc.stderr, [(3, "out of range"), (5, "malformed path"), (6, "already over"),
                               (7, "illegal path")])


@pytest.mark.slow
def test_option_errors():
    for args in (["--game", "chomp", "--rows", "3"], ["--game", "chomp", "--rows", "3", "--cols", "4", "--weak"],
                 ["--game", "chomp", "--rows", "40", "--cols", "4"], ["--game", "fgame", "--depth", "3", "--rows", "2"]):
        proc = run(args, [])
        assert proc.returncode == 2 and "error:" in proc.stderr, (args, proc.stderr)


def connect4_position(rng, plies):
    """Column 1 filled (no four: colours alternate), then random moves; never over."""
    game = games.make("connect4")
    while True:
        actions = [0] * 6
        state = game.from_moves([actions])
        while len(actions) < plies:
            a = int(rng.choice(np.flatnonzero(game.legal(state)[0])))
            state, _, done = game.step(state, np.array([a]))
            actions.append(a)
            if done[0]:
                break
        if not game.terminal(state)[0]:
            return "".join(str(a + 1) for a in actions)


@pytest.mark.slow
def test_connect4_mixed_lines():
    solver = Connect4Solver(tt_log2_size=20)
    rng = np.random.default_rng(0)
    good = [connect4_position(rng, 30) for _ in range(2)]
    lines = [good[0], "1111111", "4484", good[1], "1212121"]
    proc = run(["--game", "connect4"], lines)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"{m} {solver.solve(m)}" for m in good]
    check_errors(proc.stderr, [(2, "full"), (3, "8"), (5, "won")])

    proc = run(["--game", "connect4", "--analyze"], [good[0], "1111111"])
    assert proc.returncode == 1
    fields = proc.stdout.split()
    assert fields[0] == good[0] and fields[1] == "-"  # column 1 is full
    assert fields[1:] == ["-" if s is None else str(s) for s in solver.analyze(good[0])]
    check_errors(proc.stderr, [(2, "full")])

    proc = run(["--game", "connect4", "--weak"], good)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [f"{m} {solver.solve(m, weak=True)}" for m in good]


def test_fgame_parameters_default_to_the_game_defaults():
    """Without --beta and --seed the answers are those of games.make("fgame") defaults."""
    out = subprocess.run([sys.executable, "-m", "oracle_service", "solve", "--game", "fgame"],
                         input="0,3,1\n", capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    game = games.make("fgame")
    value = int(game.value(game.from_moves([[0, 3, 1]]))[0])
    assert out.stdout.split()[:2] == ["0,3,1", str(value)]
