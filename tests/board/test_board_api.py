"""The board's HTTP API over real HTTP (uvicorn on a free loopback port): a whole game,
bad input answered with 400 and a message, sessions kept apart, the oracle's marks
against published Connect Four values, and the command line's start-up errors."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import games
from board.cli import BackgroundServer, host_warning, play_main
from board.marks import mark
from board.session import Session, Table
from evaluation.oracles import Analysis
from tests.board.conftest import Client, ScriptedAgent, write_checkpoint

# The empty 7x6 board, solved (Allis 1988; Pons's solver prints these scores): only the
# centre column wins for the first player, columns 3 and 5 (1-based) draw, the rest lose;
# Pons scores, columns 1..7: -2 -1 0 1 0 -1 -2.
EMPTY_BOARD_SCORES = [-2, -1, 0, 1, 0, -1, -2]


def test_a_full_game_with_undo_and_new(client):
    status, s = client.post("/api/new", {"human": 0})
    assert status == 200 and s["moves"] == [] and s["legal"] == list(range(7)) and s["turn"] == "human"
    assert s["board"]["shape"] == "columns" and len(s["board"]["cells"]) == 6
    status, s = client.post("/api/move", {"action": 3})
    assert status == 200 and len(s["moves"]) == 2 and s["moves"][0] == 3  # the person's move and the reply
    assert s["history"][1]["who"] == "agent" and set(s["values"]["values"]) == set(map(str, range(7)))
    assert s["oracle"]["marks"][1] in ("optimal", "inaccuracy", "error", "blunder")
    discs = sorted(v for row in s["board"]["cells"] for v in row if v)
    assert discs == [1, 2] and s["board"]["cells"][5][3] == 1  # the person's disc at the bottom of column 4
    status, s = client.post("/api/undo", {})
    assert status == 200 and s["moves"] == []
    plies = 0
    while not s["done"]:
        status, s = client.post("/api/move", {"action": s["legal"][0]})
        assert status == 200, s
        plies += 1
        assert plies <= 21
    assert s["legal"] == [] and s["result"] is not None and len(s["oracle"]["marks"]) == len(s["moves"])
    assert sum(s["oracle"]["agent_marks"].values()) == len(s["moves"]) // 2
    status, s = client.post("/api/new", {"human": 1})  # the agent opens
    assert status == 200 and len(s["moves"]) == 1 and s["turn"] == "human"


@pytest.mark.parametrize("body, needle", [
    (b'{"action": 9}', "action 9 is out of range"),
    (b'{"action": -1}', "action -1 is out of range"),
    (b'{"action": "3"}', "action must be an integer"),
    (b'{"action": true}', "action must be an integer"),
    (b'{"action": 3.5}', "action must be an integer"),
    (b'{"move": 3}', "has no 'action'"),
    (b'{"action": 3', "malformed JSON"),
    (b'[3]', "must be a JSON object"),
    (b'\xff\xfe', "malformed JSON"),
])
def test_bad_moves_get_400_naming_the_problem(client, body, needle):
    client.post("/api/new", {"human": 0})
    status, before = client.get()
    status, raw = client.raw("/api/move", body)
    answer = json.loads(raw)
    assert status == 400 and needle in answer["error"], answer
    assert client.get()[1]["moves"] == before["moves"]  # nothing played; the server still serves


def test_a_full_column_and_a_finished_game_are_refused(c4_oracle, connect4):
    with BackgroundServer(Table(connect4, ScriptedAgent([3, 3, 3, 0, 0, 0]), oracle=c4_oracle)) as server:
        c = Client(server.url)
        for _ in range(3):
            assert c.post("/api/move", {"action": 3})[0] == 200
        status, answer = c.post("/api/move", {"action": 3})
        assert status == 400 and answer["error"] == "action 3 (4) is illegal: column 4 is full"
        for _ in range(3):
            assert c.post("/api/move", {"action": 1})[0] == 200
        status, s = c.post("/api/move", {"action": 1})  # four high in column 2
        assert status == 200 and s["done"] and s["result"] == {"winner": 0, "who": "human"}
        status, answer = c.post("/api/move", {"action": 2})
        assert status == 400 and "the game is over" in answer["error"]
        assert c.post("/api/unknown", {})[0] == 404
        assert c.get("/api/move") == (405, {"error": "GET /api/move: Method Not Allowed"})
        assert c.get("/nowhere")[0] == 404
        assert c.post("/api/new", {"human": 5}) == (400, {"error": "human must be 0 (move first), 1 (move second) "
                                                                  "or null (watch), got 5"})


def test_two_sessions_do_not_touch_each_other(c4_server):
    a, b = Client(c4_server.url), Client(c4_server.url)
    a.post("/api/new", {"human": 0})
    b.post("/api/new", {"human": 0})
    errors = []

    def play(client, column):
        for _ in range(3):
            status, s = client.post("/api/move", {"action": column})
            if status != 200:
                errors.append(s)
                return

    threads = [threading.Thread(target=play, args=(a, 0)), threading.Thread(target=play, args=(b, 6))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ma, mb = a.get()[1]["moves"], b.get()[1]["moves"]
    assert ma[0::2] == [0, 0, 0] and mb[0::2] == [6, 6, 6] and len(ma) == len(mb) == 6
    assert Client(c4_server.url).get()[1]["moves"] == []  # a third client: a game of its own


def test_the_oracle_scores_the_empty_board_as_published(client):
    status, s = client.post("/api/new", {"human": 0})
    now = s["oracle"]["position"]
    assert now["value"] == 1.0 and now["scores"]
    assert [now["moves"][str(c)]["score"] for c in range(7)] == EMPTY_BOARD_SCORES
    assert [c for c in range(7) if now["moves"][str(c)]["best"]] == [3]


@pytest.mark.parametrize("first, expected", [(3, "optimal"), (2, "error"), (4, "error"), (0, "blunder"), (6, "blunder")])
def test_the_agents_first_move_is_marked_by_the_published_values(connect4, c4_oracle, first, expected):
    # The agent opens; the empty board is won (only the centre wins), so a draw-keeping
    # column gives up outcome (an error) and a losing one turns the win into a loss (a blunder).
    session = Session(Table(connect4, ScriptedAgent([first]), oracle=c4_oracle), human=1)
    s = session.to_json()
    assert s["history"][0]["who"] == "agent" and s["oracle"]["marks"] == [expected]
    assert s["oracle"]["agent_marks"][expected] == 1


def test_marks_are_evaluations_definitions():
    inf = -np.inf
    # a won position: best (score 3), a slower win (1), a draw, a loss, an illegal column
    a = Analysis(np.array([1.0], np.float32), np.array([[1, 1, 0, -1, inf]], np.float32),
                 np.array([[3, 1, 0, -2, inf]], np.float32), np.array([[True, False, False, False, False]]),
                 np.array([True]))
    assert [mark(a, 0, i) for i in range(4)] == ["optimal", "inaccuracy", "error", "blunder"]
    # a lost Chomp position: no best set, every move loses: nothing better existed
    lost = Analysis(np.array([-1.0], np.float32), np.array([[-1, -1]], np.float32), np.array([[-0.5, -0.9]], np.float32),
                    np.zeros((1, 2), bool), np.array([False]))
    assert [mark(lost, 0, i) for i in range(2)] == ["optimal", "optimal"]


def test_mcts_values_are_priors_and_visits(connect4, c4_oracle, tmp_path):
    from board.agents import load_agent
    from inference.networks import NetworkConfig
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, policy_head=True)
    _, agent = load_agent(write_checkpoint(tmp_path, connect4, "alphazero", config), "connect4", policy="mcts",
                          simulations=16)
    assert agent.name.endswith("(alphazero) (mcts, 16 simulations)")
    session = Session(Table(connect4, agent, oracle=c4_oracle), human=1)
    v = session.to_json()["values"]
    assert v["kind"] == "mcts" and set(v["prior"]) == set(v["visits"]) == set(map(str, range(7)))
    assert abs(sum(v["prior"].values()) - 1) < 1e-3 and 0 < sum(v["visits"].values()) <= 16


def test_chomp_and_fgame_boards_show_their_oracles():
    chomp = games.make("chomp", rows=3, cols=4)
    session = Session(Table(chomp, ScriptedAgent([]), oracle=Table.oracle_for(chomp)), human=0)
    s = session.to_json()
    # 3x4 Chomp: the first player wins (strategy stealing); the winning cells are the best set
    assert s["oracle"]["position"]["value"] == 1.0 and any(m["best"] for m in s["oracle"]["position"]["moves"].values())
    assert s["board"]["shape"] == "chomp" and s["board"]["click"][0][0] is None
    fgame = games.make("fgame", depth=3, branching=2)
    s = Session(Table(fgame, ScriptedAgent([]), oracle=Table.oracle_for(fgame))).to_json()
    assert s["board"] is None and s["legal"] == [0, 1] and len(s["oracle"]["position"]["moves"]) == 2


def test_start_up_errors_are_named(tmp_path, capsys, c4_checkpoint):
    with pytest.raises(SystemExit):
        play_main(["--game", "chess"])
    assert "invalid choice: 'chess'" in capsys.readouterr().err
    chomp_ckpt = write_checkpoint(tmp_path, games.make("chomp", rows=3, cols=4))
    assert play_main(["--game", "connect4", "--checkpoint", str(chomp_ckpt)]) == 2
    assert "is of game 'chomp'" in capsys.readouterr().err
    assert play_main(["--game", "connect4", "--checkpoint", str(tmp_path / "nothing.pt")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert play_main(["--game", "connect4", "--checkpoint", str(c4_checkpoint), "--opponent", str(chomp_ckpt)]) == 2
    assert "is of game 'chomp'" in capsys.readouterr().err


def test_watching_the_agent_against_an_opponent(connect4, c4_oracle):
    table = Table(connect4, ScriptedAgent([3, 3]), opponent=ScriptedAgent([2, 2]), oracle=c4_oracle)
    with BackgroundServer(table) as server:
        c = Client(server.url)
        status, s = c.post("/api/new", {"human": None})
        assert s["turn"] == "agent" and s["opponent"] == "scripted"
        status, answer = c.post("/api/move", {"action": 3})
        assert status == 400 and answer["error"].startswith("you are watching")
        for who in ("agent", "opponent", "agent", "opponent"):
            status, s = c.post("/api/step", {})
            assert status == 200 and s["history"][-1]["who"] == who
        assert s["moves"] == [3, 2, 3, 2] and s["oracle"]["agent_marks"]["optimal"] >= 1
        status, s = c.post("/api/undo", {})
        assert s["moves"] == [3, 2, 3]


def test_the_server_opens_a_replay_for_every_session(connect4, c4_oracle):
    with BackgroundServer(Table(connect4, ScriptedAgent([]), oracle=c4_oracle)) as server:
        server.app.state.sessions.replay = ([3, 0], "game.json", None)
        s = Client(server.url).get()[1]
        assert s["replay"]["source"] == "game.json" and s["moves"] == [3, 0]
        assert s["oracle"]["marks"] == ["optimal", "inaccuracy"]  # after the centre every reply loses


def test_only_loopback_is_quiet():
    assert host_warning("127.0.0.1", 8765) is None and host_warning("localhost", 1) is None
    assert host_warning("0.0.0.0", 8765).startswith("warning: listening on 0.0.0.0, not loopback")


def test_hex_boards_show_the_weak_oracle_and_leave_out_what_it_does_not_settle(monkeypatch):
    """3x3 Hex: the oracle's winning moves are the exhaustive negamax's, and the agent's
    move is marked by them; a position the solver does not settle within the board's
    limit is shown without the oracle's view, at once, rather than holding the page."""
    from tests.hex_negamax import board_after, winning_cells

    import board.session as session_module

    hex3 = games.make("hex", size=3)
    s = Session(Table(hex3, ScriptedAgent([0]), oracle=Table.oracle_for(hex3)), human=1).to_json()  # the agent opens
    first = s["history"][0]
    winners = winning_cells(board_after([], 3), 3)
    assert {int(a) for a, m in first["oracle"]["moves"].items() if m["best"]} == set(winners)
    assert first["mark"] == ("optimal" if 0 in winners else "blunder")
    assert s["oracle"]["position"]["value"] == (1.0 if winning_cells(board_after([0], 3), 3) else -1.0)
    monkeypatch.setattr(session_module, "HEX_SECONDS", 1e-6)  # nothing is settled in a microsecond
    hex7 = games.make("hex", size=7)
    s = Session(Table(hex7, ScriptedAgent([]), oracle=Table.oracle_for(hex7)), human=0).to_json()
    assert s["oracle"]["position"] is None and s["legal"] == list(range(49))


@pytest.mark.slow
def test_the_gumbel_search_plays_on_the_board_and_reuses_its_tree(connect4, c4_oracle, tmp_path):
    """``launch play --policy gumbel``: the agent answers through the HTTP API
    with Gumbel AlphaZero's search, the page gets its prior, visits and improved policy,
    and after a reply the search had expanded its next search starts from that subtree
    (its visits kept under the new root)."""
    from board.agents import load_agent
    from board.cli import build_table, play_parser
    from inference.networks import NetworkConfig
    config = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16, policy_head=True)
    path = write_checkpoint(tmp_path, connect4, "alphazero", config)
    _, agent = load_agent(path, "connect4", policy="gumbel", simulations=32)
    assert agent.name.endswith("(alphazero) (gumbel, 32 simulations)")
    with BackgroundServer(Table(connect4, agent, oracle=c4_oracle)) as server:
        c = Client(server.url)
        status, s = c.post("/api/new", {"human": 0})
        status, s = c.post("/api/move", {"action": 3})
        assert status == 200 and len(s["moves"]) == 2
        v = s["values"]
        assert v["kind"] == "mcts" and v["search"] == "gumbel" and sum(v["visits"].values()) == 32
        assert abs(sum(v["policy"].values()) - 1) < 1e-3 and abs(sum(v["prior"].values()) - 1) < 1e-3
        after = games.concat([connect4.from_moves([s["moves"] + [a]]) for a in range(7)])
        kept = agent.reuse.kept_visits(after)
        assert kept.max() >= 1, kept
        status, s = c.post("/api/move", {"action": int(kept.argmax())})
        assert status == 200 and agent.reuse.reused == 1
        # The kept node's visits but its own first one (its evaluation) are below the root, and 32 new.
        assert sum(s["values"]["visits"].values()) == 32 + kept.max() - 1
    args = play_parser().parse_args(["--game", "connect4", "--checkpoint", str(path), "--policy", "gumbel",
                                     "--no-reuse"])
    assert build_table(args).agent.reuse is None
