"""The game descriptors (games.descriptors): one per engine, registered with it; every
piece they name exists. What other packages keep per game is in their own tables
(``games.GameTable``): every entry is of a known game, and asking for a piece a game lacks
names the game and the piece."""

from __future__ import annotations

import dataclasses

import pytest

import games
from actors.labels import LABELLERS
from board.grid import GRIDS
from board.marks import SCORE_READINGS
from board.session import PAGE_ORACLES
from evaluation.exact import EXACT_LABELS
from evaluation.oracles import ORACLES
from evaluation.suites import SUITES, GameSuites
from games.descriptors import GameDescriptor, GameTable, GtpFacts, resolve

REF_FIELDS = [f.name for f in dataclasses.fields(GameDescriptor) if "Ref" in str(f.type)]
GTP_REF_FIELDS = [f.name for f in dataclasses.fields(GtpFacts) if "Ref" in str(f.type)]
# The per-game tables of the packages above games/: (table, what a built-in entry must be callable at).
TABLES = {"oracles": (ORACLES, lambda e: e.make), "exact labels": (EXACT_LABELS, lambda e: e),
          "suites": (SUITES, lambda e: e.suites), "labellers": (LABELLERS, lambda e: e),
          "grids": (GRIDS, lambda e: e), "score readings": (SCORE_READINGS, lambda e: e),
          "page oracles": (PAGE_ORACLES, lambda e: e)}


@pytest.mark.parametrize("name", sorted(games.BUILTIN))
def test_each_engine_module_defines_the_descriptor_of_its_game(name):
    described = games.descriptor(name)
    assert described.name == name and games.descriptor(games.make(name)) is described
    assert games.make(name).name == name and games.game_class(name) is resolve(described.engine)


@pytest.mark.parametrize("name", sorted(games.BUILTIN))
def test_every_piece_a_descriptor_names_can_be_imported(name):
    described = games.descriptor(name)
    named = {f: getattr(described, f) for f in REF_FIELDS if getattr(described, f) is not None}
    if described.gtp is not None:
        named |= {f"gtp.{f}": getattr(described.gtp, f) for f in GTP_REF_FIELDS if getattr(described.gtp, f)}
    for field, ref in named.items():
        assert callable(resolve(ref)), f"{name}: {field} = {ref!r} is not callable"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_per_game_table_holds_known_games_and_callables(table):
    entries, callable_part = TABLES[table]
    assert entries.names() and set(entries.names()) <= set(games.BUILTIN), entries.names()
    for name in entries.names():
        assert callable(callable_part(entries.need(name))), f"{table}: {name}'s entry is not callable"


def test_the_tables_say_what_the_code_used_to_test_by_name():
    assert set(ORACLES.names()) == {"connect4", "chomp", "fgame", "hex"}
    assert LABELLERS.names() == ["connect4", "chomp"]
    assert {d.name for d in games.every_descriptor() if d.gtp is not None} == {"go", "othello", "connect4", "hex"}
    assert {n for n in ORACLES.names() if ORACLES.need(n).service} == {"connect4", "hex"}
    assert [n for n in ORACLES.names() if ORACLES.need(n).weak] == ["hex"]
    assert {n: SUITES.need(n).auto for n in SUITES.names() if SUITES.need(n).auto} == {
        "connect4": "default", "chomp": "default", "fgame": "default", "hex": "default"}
    assert set(SUITES.names()) == set(games.BUILTIN) and set(EXACT_LABELS.names()) == {"tictactoe", "chomp", "fgame"}
    assert set(GRIDS.names()) == set(games.BUILTIN) - {"fgame"}


def test_a_missing_piece_names_the_game_and_what_it_lacks():
    with pytest.raises(ValueError, match=r"game 'go' has no exact oracle \(games with one: connect4, hex, chomp, fgame\)"):
        ORACLES.need("go")
    assert ORACLES.get("go") is None and ORACLES.get(games.make("hex")).weak
    with pytest.raises(ValueError, match="game 'fgame' is not played over GTP"):
        games.descriptor("fgame").needs_gtp()
    from evaluation.oracles import make_oracle

    with pytest.raises(ValueError, match="no exact oracle for 'othello'"):
        make_oracle(games.make("othello"))


def test_unknown_games_and_bad_references_are_named():
    with pytest.raises(ValueError, match="unknown game 'connect5'; known games: chomp, connect4"):
        games.descriptor("connect5")
    with pytest.raises(ValueError, match="must read 'module:attribute', got 'games.go'"):
        resolve("games.go")
    with pytest.raises(ValueError, match="game 'connect4' is already registered"):
        games.register(GameDescriptor(name="connect4", engine="games.connect4:ConnectFour"))
    with pytest.raises(ValueError, match="game 'go' was not added by games.register"):
        games.unregister("go")
    with pytest.raises(ValueError, match="auto suites must be None, 'default' or a tuple"):
        GameSuites(lambda game: [], auto=["toy-states"])


def test_a_game_defined_elsewhere_adds_and_removes_its_own_entries():
    table = GameTable("drawing", {"go": "go's"})
    table.register("toy", "toy's")
    assert table.names() == ["go", "toy"] and table.need("toy") == "toy's"
    with pytest.raises(ValueError, match="game 'toy' already has its drawing"):
        table.register("toy", "another")
    with pytest.raises(ValueError, match="game 'go' has no drawing added by register"):
        table.unregister("go")
    table.unregister("toy")
    with pytest.raises(ValueError, match=r"game 'toy' has no drawing \(games with one: go\)"):
        table.need("toy")


def test_auto_suites_follow_the_descriptors(monkeypatch):
    import evaluation.suites as suites

    assert suites.auto_suite_names("connect4") is None and suites.auto_suite_names("chomp") is None
    assert suites.auto_suite_names("othello") is False and suites.auto_suite_names("tictactoe") is False
    monkeypatch.setattr(suites, "committed_file_present", lambda name: True)
    assert suites.auto_suite_names("hex") == ["hex-uniform"]
    monkeypatch.setattr(suites, "committed_file_present", lambda name: False)
    assert suites.auto_suite_names("hex") is False
