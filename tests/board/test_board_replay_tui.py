"""Replays (a game record, a Connect Four move string, SGF, a game of evaluation's play
suite), the real command in a subprocess, and the terminal fallback."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import games
from board.replay import ReplayError, parse_replay, play_suite_game
from board.session import Session, Table
from board.tui import run_tui
from evaluation.datasets import load_dataset
from tests.board.conftest import Client, ScriptedAgent

ROOT = Path(__file__).resolve().parents[2]


def test_replay_formats(connect4):
    assert parse_replay("4453", connect4) == [3, 3, 4, 2]
    assert parse_replay('{"game": "connect4", "moves": [3, 3]}', connect4) == [3, 3]
    lines = '{"game": "connect4", "moves": [0]}\n{"game": "connect4", "moves": [1, 2]}\n'
    assert parse_replay(lines, connect4, index=1) == [1, 2]
    with pytest.raises(ReplayError, match="of game 'chomp'"):
        parse_replay('{"game": "chomp", "moves": [1]}', connect4)
    with pytest.raises(ReplayError, match="neither a game record"):
        parse_replay("hello", connect4)
    with pytest.raises(ReplayError, match="holds 2 game"):
        parse_replay(lines, connect4, index=2)
    go = games.make("go", size=9)
    assert parse_replay("(;GM[1]SZ[9];B[cd];W[ee];B[])", go) == [3 * 9 + 2, 4 * 9 + 4, 81]
    with pytest.raises(ReplayError, match="SZ\\[19\\]"):
        parse_replay("(;GM[1]SZ[19];B[cd])", go)


def test_replay_marks_every_move_and_seeks(client, connect4):
    status, s = client.post("/api/replay", {"text": "1", "name": "opening.txt"})
    assert status == 200 and s["replay"] == {"length": 1, "cursor": 1, "source": "opening.txt"}
    assert s["oracle"]["marks"] == ["blunder"] and s["legal"] == [] and s["turn"] is None
    assert client.post("/api/move", {"action": 3})[0] == 400
    status, s = client.post("/api/seek", {"ply": 0})
    assert s["moves"] == [] and s["oracle"]["marks"] == []
    assert client.post("/api/seek", {"ply": 5}) == (400, {"error": "ply must be an integer 0..1, got 5"})
    status, answer = client.post("/api/replay", {"text": "4444444"})
    assert status == 400 and "not a legal connect4 game" in answer["error"] and "column 4 is full" in answer["error"]


def test_a_game_of_evaluations_play_suite_replays_with_its_marks(connect4, c4_oracle, c4_table):
    # Game 568 of connect4-play: the first opening with the agent second, as evaluation plays it;
    # the same game from evaluation.play.play_vs_oracle's own loop must have the same outcome.
    from evaluation.play import play_vs_oracle
    agent = c4_table.agent
    record = play_suite_game(connect4, agent.choose(), c4_oracle, 568)
    opening = [int(a) for a in load_dataset("connect4-openings").moves[0]]
    assert record["moves"][:4] == opening and record["agent_seat"] == 1 and "the agent second" in record["source"]
    first = play_suite_game(connect4, agent.choose(), c4_oracle, 0)
    metrics = play_vs_oracle(connect4, agent.choose(), c4_oracle, connect4.from_moves([opening]))
    assert metrics["games"] == 2  # agent first, then second, from the one opening: the same two games
    assert metrics["score"] == (first["agent_outcome"] + record["agent_outcome"]) / 2
    session = Session(c4_table)
    session.load_replay(parse_replay(json.dumps(record), connect4), record["source"], record["who"])
    s = session.to_json()
    assert [p["who"] for p in s["history"][3:6]] == ["opening", "oracle", "agent"]
    assert sum(s["oracle"]["agent_marks"].values()) == (len(record["moves"]) - 4) // 2
    assert s["done"] and len(s["oracle"]["marks"]) == len(record["moves"])
    theory = s["history"][4]["oracle"]["value"]  # the opening's value for the player to move: the oracle
    agent_marks = s["oracle"]["marks"][5::2]
    gave_up = any(m in ("error", "blunder") for m in agent_marks)
    assert gave_up == (record["agent_outcome"] < -theory)  # the agent lost outcome iff a move gave it up
    with pytest.raises(ReplayError, match="games 0..1135"):
        play_suite_game(connect4, agent.choose(), c4_oracle, 1136)


@pytest.mark.slow
def test_the_command_serves_and_reports_bad_input():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "launch", "play", "--game", "connect4", "--port", "0"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "connect4 against the exact oracle: http://127.0.0.1:" in line, (line, proc.stderr.read()[-2000:] if proc.poll() is not None else "")
        url = line.split(": ", 1)[1].split("/  ")[0]
        c = Client(url)
        assert c.post("/api/move", {"action": 3})[1]["moves"] == [3, 3]  # the oracle answers in the centre
        status, raw = c.raw("/api/move", b"{nope")
        assert status == 400 and b"malformed JSON" in raw
        assert c.get()[0] == 200 and proc.poll() is None  # still serving
        assert b"<svg id=\"board\"" in c.raw("/")[1]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_terminal_plays_with_the_same_marks(connect4, c4_oracle):
    table = Table(connect4, ScriptedAgent([0, 3]), oracle=c4_oracle)
    out = io.StringIO()
    assert run_tui(table, 1, inp=io.StringIO("9\n4\nu\nq\n"), out=out) == 0
    text = out.getvalue()
    assert "agent        1 [blunder]  position win; played -2" in text  # the agent's losing opening
    assert "error: '9' is not a legal move here" in text
    assert "human        4 [optimal]" in text
    assert "oracle, now (win for the side to move)" in text


def test_the_marks_count_what_evaluations_metrics_count(connect4, c4_oracle, c4_table):
    # The first three openings, both sides: play_vs_oracle's blunder games and outcome errors
    # against the board's marks on the same six games.
    from evaluation.play import play_vs_oracle
    agent = c4_table.agent
    openings = [[int(a) for a in m] for m in load_dataset("connect4-openings").moves[:3]]
    metrics = play_vs_oracle(connect4, agent.choose(), c4_oracle, connect4.from_moves(openings))
    blunder_games, errors, moves = 0, 0, 0
    for number in (0, 1, 2, 568, 569, 570):
        record = play_suite_game(connect4, agent.choose(), c4_oracle, number)
        session = Session(c4_table)
        session.load_replay(record["moves"], record["source"], record["who"])
        counts = session.to_json()["oracle"]["agent_marks"]
        blunder_games += counts["blunder"] > 0
        errors += counts["blunder"] + counts["error"]
        moves += sum(counts.values())
    assert metrics["blunder_games"] > 0 and errors > 0  # an untrained network: something to count
    assert moves == metrics["agent_moves"]
    assert blunder_games == metrics["blunder_games"]
    assert errors == round(metrics["move_error_rate"] * metrics["agent_moves"])
