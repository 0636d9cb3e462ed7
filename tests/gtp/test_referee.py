"""The referee against real GNU Go and gtp-rhino processes, and against fake engines that
answer an illegal move, hang or crash: each failure ends its game with a record and the
match goes on."""

from __future__ import annotations

import time

import numpy as np
import pytest
from sgfmill import sgf

import games
from gtp import vertices
from gtp.engines import engine_argv
from gtp.referee import Engine, Local, Pairing, final_score_value, othello_counts, play_games, summary
from gtp.sgf import record_sgf


def _random(game, seed=0, name="random"):
    rng = np.random.default_rng(seed)
    return Local(name, lambda states: games.random_legal_actions(game.legal(states), rng))


def _no_pass_random(game, seed=0):
    """Random placements, passing only when nothing else is legal: a Go game of it against
    GNU Go runs to our move limit or to GNU Go's resignation, a real full game."""
    rng = np.random.default_rng(seed)
    n = game.size * game.size

    def choose(states):
        legal = game.legal(states).copy()
        only_pass = ~legal[:, :n].any(axis=1)
        legal[~only_pass, n] = False
        return games.random_legal_actions(legal, rng)

    return Local("random", choose)


def _replay(rec):
    """The record's moves replayed by our rules: the final state."""
    game = games.make(rec.game, **rec.params)
    return game, game.from_moves([rec.moves])


@pytest.mark.slow
def test_a_full_game_against_gnu_go_is_played_to_the_end_and_scored(gnugo, tmp_path):
    game = games.make("go")
    engine = Engine("gnugo", engine_argv("gnugo", level=0), timeout=30)
    [rec] = play_games(game, [Pairing((40,), _no_pass_random(game), engine)])
    assert rec.failure is None, rec.failure
    g, final = _replay(rec)
    assert g.terminal(final)[0] or rec.end == "resigned"
    assert rec.end in ("two passes", "max length", "resigned")
    assert rec.score == float(g.score(final)[0])
    if rec.end != "resigned":
        assert final_score_value(rec.engine_scores["gnugo"]) is not None, rec.engine_scores
        # GNU Go beats random play: both our rules and its own count say White won.
        assert rec.outcome == -1.0 and rec.disagreement is None, (rec.score, rec.engine_scores)
    parsed = sgf.Sgf_game.from_bytes(record_sgf(rec))
    assert parsed.get_size() == 9 and parsed.get_root().get("PW") == "gnugo"
    moves = [node.get_move() for node in parsed.get_main_sequence()[1:]]
    assert len(moves) == len(rec.moves) and moves[0] == ("b", (4, 4))  # E5, the opening


def test_a_full_game_against_gtp_rhino_checks_every_move_and_the_score(rhino):
    game = games.make("othello")
    engine = Engine("gtp-rhino", engine_argv("gtp-rhino", level=1), timeout=30)
    opening = tuple(vertices.action(game, w) for w in ("d3", "c3", "c4"))
    recs = play_games(game, [Pairing(opening, engine, _random(game)), Pairing(opening, _random(game, 1), engine)],
                      tables=2)
    for rec in recs:
        assert rec.failure is None, rec.failure
        g, final = _replay(rec)  # every move, passes included, legal under our rules
        assert g.terminal(final)[0] and rec.end == "no moves left"
        # The disc count: gtp-rhino's final_score is ours, or ours with the empties to the winner.
        assert final_score_value(rec.engine_scores["gtp-rhino"]) in othello_counts(final, rec.score)
        assert rec.disagreement is None
        assert sgf.Sgf_game.from_bytes(record_sgf(rec)).get_root().get_raw("GM") == b"2"
    assert summary(recs, "gtp-rhino")["games"] == 2


def test_illegal_hung_and_crashed_engines_each_end_their_game_and_the_match_goes_on(fake_engine):
    game = games.make("go")
    n = game.size * game.size
    passer = Local("passer", lambda states: np.full(len(states.moves), n, np.int64))
    illegal = Engine("illegal", [fake_engine("illegal", "printf '= A1\\n\\n'")], timeout=5)
    nonsense = Engine("nonsense", [fake_engine("nonsense", "printf '= Z99\\n\\n'")], timeout=5)
    hung = Engine("hung", [fake_engine("hung", "sleep 600")], timeout=1.0)
    crash = Engine("crash", [fake_engine("crash", "exit 3")], timeout=5)
    fine = Engine("fine", [fake_engine("fine", "printf '= pass\\n\\n'")], timeout=5)
    start = time.perf_counter()
    recs = play_games(game, [Pairing((0,), passer, illegal), Pairing((), nonsense, passer),
                             Pairing((), hung, passer), Pairing((), crash, passer), Pairing((), passer, fine)],
                      tables=2)
    assert time.perf_counter() - start < 20
    bad, garbled, slow, dead, ok = recs
    assert bad.outcome is None and bad.failure["engine"] == "illegal" and bad.failure["answer"] == "A1"
    assert "illegal under our rules" in bad.failure["problem"] and bad.failure["position"] == "A1"
    assert "X" in bad.failure["board"] and bad.failure["command"] == "genmove w"
    assert garbled.outcome is None and "not a move of this board" in garbled.failure["problem"]
    assert slow.outcome is None and "no answer within 1 s" in slow.failure["problem"]
    assert dead.outcome is None and "exit" in dead.failure["problem"] and "status 3" in dead.failure["problem"]
    assert ok.failure is None and ok.end == "two passes" and ok.outcome == -1.0  # komi 7 on an empty board
    assert summary(recs, "passer") == {"games": 5, "wins": 0, "draws": 0, "losses": 1, "failures": 4,
                                       "disagreements": 0}
    assert b"RE[Void]" in record_sgf(slow)


def test_the_referee_command_plays_two_engines_and_writes_sgf(rhino, tmp_path, capsys):
    from gtp.__main__ import main

    rhino_cmd = f"{rhino} --level 1 --book 0"
    code = main(["referee", "--game", "othello", "--black", rhino_cmd, "--white", rhino_cmd, "--opening", "d3 c3 c4",
                 "--swap", "--sgf-dir", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and len(out) == 4, out
    assert out[0].startswith("game 0: gtp-rhino (first) vs gtp-rhino (second): ") and "no moves left" in out[0]
    assert '"failures": 0' in out[2] and '"games": 2' in out[2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game-000.sgf", "game-001.sgf", "games.jsonl"]
    with pytest.raises(SystemExit):  # an opening illegal under our rules is refused before any game
        main(["referee", "--game", "othello", "--black", rhino_cmd, "--white", rhino_cmd, "--opening", "d3 d3"])
    assert "--opening" in capsys.readouterr().err


def test_othello_counts_give_the_empty_squares_to_the_winner():
    game = games.make("othello")
    state = game.init(1)  # 4 discs, 60 empty
    assert othello_counts(state, 2.0) == {2.0, 62.0} and othello_counts(state, -2.0) == {-2.0, -62.0}
    assert othello_counts(state, 0.0) == {0.0}
