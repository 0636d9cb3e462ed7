"""The GTP wire format and every game's vertex names, both ways."""

from __future__ import annotations

import pytest

import games
from gtp import vertices
from gtp.protocol import GtpError, format_answer, parse_answer, parse_command
from gtp.referee import final_score_value


def test_command_lines_and_answers():
    assert parse_command("12 play b D4 # a comment\n") == ("12", "play", ["b", "D4"])
    assert parse_command("\tgenmove\tw\x07\r\n") == ("", "genmove", ["w"])
    assert parse_command("# only a comment") is None and parse_command("  \n") is None
    assert format_answer("3", "D4") == "=3 D4\n\n" and format_answer("", "bad", ok=False) == "? bad\n\n"
    assert parse_answer("=3 D4") == (True, "D4") and parse_answer("? illegal move") == (False, "illegal move")
    assert parse_answer("= Next move\n  a b") == (True, "Next move\n  a b")
    with pytest.raises(ValueError):
        parse_answer("D4")
    assert [final_score_value(t) for t in ("B+3.5", "W+7.0", "0", "w+12", "?")] == [3.5, -7.0, 0.0, -12.0, None]


@pytest.mark.parametrize("name, params, examples", [
    ("go", {}, {"A1": 0, "J1": 8, "A2": 9, "E5": 40, "J9": 80, "pass": 81}),
    ("go", {"size": 19}, {"T19": 360, "H8": 7 * 19 + 7, "J8": 7 * 19 + 8}),
    ("othello", {}, {"a1": 0, "h1": 7, "d3": 19, "h8": 63, "pass": 64}),
    ("hex", {"size": 5}, {"a1": 0, "c4": 17, "e5": 24}),
])
def test_vertex_names_round_trip(name, params, examples):
    game = games.make(name, **params)
    for word, action in examples.items():
        assert vertices.action(game, word) == action and vertices.action(game, word.swapcase()) == action
        assert vertices.vertex(game, action).lower() == word.lower()
    for bad in ("", "z1", "a0", "a99", "11", "a1b", "i1" if name == "go" else "a-1"):
        with pytest.raises(GtpError, match="invalid vertex"):
            vertices.action(game, bad)


def test_connect4_vertices_name_where_the_disc_lands():
    game = games.make("connect4")
    assert vertices.vertex(game, 3, []) == "d1" and vertices.vertex(game, 3, [3, 3]) == "d3"
    assert vertices.action(game, "d", [3]) == 3 and vertices.action(game, "D2", [3]) == 3
    with pytest.raises(GtpError, match="falls to row 2"):
        vertices.action(game, "d1", [3])
    with pytest.raises(GtpError, match="invalid vertex"):
        vertices.action(game, "h1")


def test_connect4_vertices_follow_the_board_size():
    game = games.make("connect4", width=5, height=4)
    assert vertices.board_size(game) == 5 and vertices.drop_rows(game) == 4
    assert vertices.vertex(game, 4, [4, 4, 4]) == "e4" and vertices.action(game, "e", []) == 4
    for bad in ("f1", "g", "a5"):  # column 6 and row 5 are off a 5x4 board
        with pytest.raises(GtpError, match="invalid vertex"):
            vertices.action(game, bad)
    wide = games.make("connect4", width=9, height=6)
    assert vertices.board_size(wide) == 9 and vertices.action(wide, "i1", []) == 8
    assert vertices.board_size(games.make("connect4")) == 7
