"""The game descriptors (games.descriptors): one per engine, registered with it; every
piece they name exists; asking for a piece a game lacks names the game and the piece."""

from __future__ import annotations

import dataclasses

import pytest

import games
from games.descriptors import GameDescriptor, GtpFacts, resolve

REF_FIELDS = [f.name for f in dataclasses.fields(GameDescriptor) if "Ref" in str(f.type)]
GTP_REF_FIELDS = [f.name for f in dataclasses.fields(GtpFacts) if "Ref" in str(f.type)]


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


def test_the_descriptors_say_what_the_code_used_to_test_by_name():
    with_oracle = {d.name for d in games.every_descriptor() if d.oracle is not None}
    assert with_oracle == {"connect4", "chomp", "fgame", "hex"}
    assert {d.name for d in games.every_descriptor() if d.labeller is not None} == {"connect4", "chomp"}
    assert {d.name for d in games.every_descriptor() if d.gtp is not None} == {"go", "othello", "connect4", "hex"}
    assert {d.name for d in games.every_descriptor() if d.oracle_service} == {"connect4", "hex"}
    assert [d.name for d in games.every_descriptor() if d.weak_oracle] == ["hex"]
    assert {d.name: d.auto_suites for d in games.every_descriptor() if d.auto_suites} == {
        "connect4": "default", "chomp": "default", "fgame": "default", "hex": "default"}


def test_a_missing_piece_names_the_game_and_what_it_lacks():
    with pytest.raises(ValueError, match=r"game 'go' has no oracle \(its descriptor's oracle is None\)"):
        games.descriptor("go").piece("oracle")
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
    with pytest.raises(ValueError, match="auto_suites must be None, 'default' or a tuple"):
        GameDescriptor(name="toy", engine=object, auto_suites=["toy-states"])


def test_auto_suites_follow_the_descriptors(monkeypatch):
    import evaluation.suites as suites

    assert suites.auto_suite_names("connect4") is None and suites.auto_suite_names("chomp") is None
    assert suites.auto_suite_names("othello") is False and suites.auto_suite_names("tictactoe") is False
    monkeypatch.setattr(suites, "committed_file_present", lambda name: True)
    assert suites.auto_suite_names("hex") == ["hex-uniform"]
    monkeypatch.setattr(suites, "committed_file_present", lambda name: False)
    assert suites.auto_suite_names("hex") is False
