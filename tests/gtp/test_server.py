"""Our GTP server: in process on every GTP game (vertex names, bad input answered with GTP
errors and the server still serving), and as ``python -m launch gtp --checkpoint``
driven by a GTP client through a full game, then played against GNU Go with nothing
between the two processes but the referee."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import games
from gtp.engine import EngineRefused, GtpEngine
from gtp.engines import engine_argv
from gtp.referee import Engine, Local, Pairing, final_score_value, play_games
from gtp.server import COMMANDS, GtpServer


def _server(name, **params):
    game = games.make(name, **params)
    rng = np.random.default_rng(0)
    return GtpServer(game, lambda states: games.random_legal_actions(game.legal(states), rng))


def _ask(server, line):
    answer = server.handle(line)
    assert answer.endswith("\n\n"), answer
    return answer[0] == "=", answer[1:].strip()


def test_bad_input_gets_gtp_errors_and_the_server_keeps_serving():
    s = _server("go")
    assert _ask(s, "protocol_version") == (True, "2")
    assert s.handle("7 known_command play") == "=7 true\n\n" and _ask(s, "known_command foo") == (True, "false")
    assert _ask(s, "list_commands")[1].split() == list(COMMANDS)
    bad = {"foo": "unknown command", "boardsize 19": "unacceptable size", "boardsize x": "syntax error",
           "play b Z9": "invalid vertex", "play b I5": "invalid vertex", "play b A10": "invalid vertex",
           "play purple E5": "invalid color", "play b": "syntax error", "undo": "cannot undo", "komi x": "syntax error"}
    for line, message in bad.items():
        ok, text = _ask(s, line)
        assert not ok and text.startswith(message), (line, text)
    assert s.handle("3 foo") == "?3 unknown command\n\n"
    assert s.handle("# a comment") is None and s.handle("   ") is None
    assert _ask(s, "boardsize 9") == (True, "") and _ask(s, "komi 7.5") == (True, "")
    assert _ask(s, "play b E5") == (True, "")
    ok, text = _ask(s, "play w e5")
    assert not ok and text == "illegal move: e5 is occupied"
    ok, move = _ask(s, "genmove w")  # still serving, and the move is legal
    assert ok and move.lower() != "e5"
    assert _ask(s, "undo") == (True, "") and s.moves == [40]
    assert _ask(s, "final_score")[1] == "B+73.5"  # Tromp-Taylor: one black stone owns the board, komi 7.5
    ok, board = _ask(s, "showboard")
    assert ok and "X" in board and "komi 7.5" in board
    assert _ask(s, "quit") == (True, "") and s.quit


def test_go_suicide_and_passes_and_colours():
    s = _server("go", size=5)
    for line in ("play b B1", "play w pass", "play b A2"):
        assert _ask(s, line)[0], line
    ok, text = _ask(s, "play w A1")  # suicide: no liberty, captures nothing
    assert not ok and text.startswith("illegal move: A1")
    # Two white moves in a row: a pass of Black's comes between them.
    assert _ask(s, "play w C3")[0] and _ask(s, "play w D3")[0]
    assert s.moves[-3:] == [12, 25, 13]
    # After a pass, a second one would end the game: the wrong colour is an error then.
    assert _ask(s, "play b pass")[0]
    ok, text = _ask(s, "play b E5")
    assert not ok and text == "illegal move: it is w's turn"


def test_othello_connect4_and_hex_vertices():
    o = _server("othello")
    assert _ask(o, "play b d3") == (True, "") and o.moves == [19]
    assert not _ask(o, "play w d3")[0] and not _ask(o, "play w pass")[0]  # pass only without a placement
    assert _ask(o, "play w c3")[0]
    assert not _ask(o, "boardsize 9")[0] and _ask(o, "boardsize 8")[0] and o.moves == []
    c = _server("connect4")
    assert _ask(c, "play b d") == (True, "") and _ask(c, "play w d2") == (True, "")
    ok, text = _ask(c, "play b d1")
    assert not ok and "falls to row 3" in text
    ok, move = _ask(c, "genmove b")
    assert ok and move[0] in "abcdefg" and move[1:].isdigit()
    assert not _ask(c, "final_score")[0]  # not over yet
    for _ in range(3):
        _ask(c, "play w a"), _ask(c, "play b a")
    h = _server("hex", size=5)
    assert _ask(h, "play b c4") == (True, "") and h.moves == [3 * 5 + 2]
    assert not _ask(h, "play w c4")[0] and not _ask(h, "play w f1")[0]
    # A full Hex game by genmove alone ends with a winner.
    while not h.over:
        assert _ask(h, f"genmove {'bw'[len(h.moves) % 2]}")[0]
    assert _ask(h, "final_score")[1] in ("B+1", "W+1") and not _ask(h, "genmove b")[0]


class _SharedServer(GtpEngine):
    """The checkpoint's server, kept across the tests of this module (it starts in seconds:
    torch's import); a referee's close leaves it running."""

    def close(self, timeout=2.0):
        pass


@pytest.fixture(scope="module")
def our_server(go_checkpoint):
    proc = None

    def get():
        nonlocal proc
        if proc is None or not proc.alive:
            proc = _SharedServer([sys.executable, "-m", "launch", "gtp", "--checkpoint", str(go_checkpoint)],
                                 name="ours", timeout=120)
        return proc

    yield get
    if proc is not None:
        GtpEngine.close(proc, timeout=0.5)


@pytest.mark.slow
def test_the_checkpoint_server_answers_bad_input_with_errors(our_server):
    s = our_server()
    assert s.command("protocol_version") == "2" and s.command("name").startswith("selfplay avi")
    for line, message in (("frobnicate", "unknown command"), ("play b K1", "invalid vertex"),
                          ("boardsize 13", "unacceptable size")):
        with pytest.raises(EngineRefused, match=message):
            s.command(line)
    s.command("clear_board")
    s.command("play b C3")
    with pytest.raises(EngineRefused, match="occupied"):
        s.command("play w C3")
    assert s.command("genmove w").lower() not in ("c3", "")  # still serving
    s.command("clear_board")


@pytest.mark.slow
def test_a_gtp_client_plays_the_checkpoint_server_through_a_full_game(our_server):
    game = games.make("go")
    rng = np.random.default_rng(3)

    def placements(states):  # random, passing only when nothing else is legal: a long game
        legal = game.legal(states).copy()
        legal[legal[:, :81].any(axis=1), 81] = False
        return games.random_legal_actions(legal, rng)

    client = Local("client", placements)
    ours = Engine("ours", start=our_server, timeout=60)
    [rec] = play_games(game, [Pairing((), client, ours)])
    assert rec.failure is None, rec.failure
    final = game.from_moves([rec.moves])
    assert game.terminal(final)[0] and rec.end in ("two passes", "max length")
    # The server's final_score is our rules' count, to the point.
    assert final_score_value(rec.engine_scores["ours"]) == rec.score == float(game.score(final)[0])


@pytest.mark.slow
def test_the_checkpoint_server_against_gnu_go_with_only_the_referee_between(our_server, gnugo):
    game = games.make("go")
    ours = Engine("ours", start=our_server, timeout=60)
    gnu = Engine("gnugo", engine_argv("gnugo", level=0), timeout=60)
    [rec] = play_games(game, [Pairing((), gnu, ours)])
    assert rec.failure is None, rec.failure
    assert rec.end in ("two passes", "max length", "resigned")
    if rec.end != "resigned":
        assert set(rec.engine_scores) == {"ours", "gnugo"}
        assert final_score_value(rec.engine_scores["ours"]) == rec.score


def test_the_gtp_command_names_a_bad_checkpoint(checkpoint_of, tmp_path, capsys):
    from launch.cli import main

    assert main(["gtp", "--checkpoint", str(tmp_path / "missing.pt")]) == 2
    assert "missing.pt" in capsys.readouterr().err
    assert main(["gtp", "--checkpoint", str(checkpoint_of("chomp", rows=3, cols=3))]) == 2
    assert "GTP engines play go, othello, connect4, hex" in capsys.readouterr().err
    assert main(["gtp", "--checkpoint", str(checkpoint_of("go")), "--game", "othello"]) == 2
    assert "pass --game go" in capsys.readouterr().err


def test_the_checkpoint_server_plays_with_the_gumbel_search(checkpoint_of):
    """``launch gtp --policy gumbel``: Gumbel AlphaZero's search picks the moves;
    on a value network its prior is uniform and its values the network's."""
    from launch.gtp_serve import checkpoint_server

    server = checkpoint_server(checkpoint_of("connect4"), policy="gumbel", simulations=8)
    assert "gumbel" in server.handle("version")
    moves = [server.handle("genmove b").strip(), server.handle("genmove w").strip()]
    assert all(m.startswith("= ") and len(m) > 2 for m in moves), moves
    assert server.handle("play b z9").startswith("? ")  # bad input: an error answer
    assert len(server.moves) == 2  # both moves were played on the server's board


@pytest.mark.parametrize("policy", ["mcts", "gumbel"])
def test_the_checkpoint_server_reuses_its_tree_between_moves(checkpoint_of, policy):
    """``launch gtp`` (reuse on by default): after ``genmove b`` and a White reply that the
    search had expanded, the next ``genmove b`` starts from that reply's subtree, its
    visits kept; a reply it never expanded, ``undo`` back to a searched position, and
    ``--no-reuse`` behave as the search from scratch."""
    from launch.gtp_serve import checkpoint_server
    from gtp import vertices

    server = checkpoint_server(checkpoint_of("connect4"), policy=policy, simulations=96)
    reuse = server.choose.reuse
    assert server.handle("genmove b").startswith("= ")
    game = server.game
    kept = reuse.kept_visits(games.concat([game.from_moves([server.moves + [a]]) for a in range(7)]))
    assert kept.max() >= 1, f"the search kept no reply of White: {kept}"
    word = vertices.vertex(game, int(kept.argmax()), server.moves)
    assert server.handle(f"play w {word}").startswith("=")
    assert server.handle("genmove b").startswith("= ")
    assert (reuse.searches, reuse.reused, reuse.reused_visits) == (2, 1, kept.max())
    # Take both moves back: the position after White's reply was searched and kept.
    assert server.handle("undo").startswith("=")
    assert server.handle("genmove b").startswith("= ")
    assert (reuse.searches, reuse.reused) == (3, 2)
    off = checkpoint_server(checkpoint_of("connect4"), policy=policy, simulations=32, reuse=False)
    assert off.choose.reuse is None and off.handle("genmove b").startswith("= ")
