"""Hex in the oracle service and the store: keys canonical under the 180-degree rotation,
records beside Connect Four's without clashing (SQLite and a real Redis server), the
worker's batches against an independent negamax (bad items, the limit's "unknown",
the store read before and written after), and the Ray replicas answering a batch."""

from __future__ import annotations

import numpy as np
import pytest
from hex_negamax import board_after, connects, winning_cells
from test_store import PASSWORD, redis_server  # noqa: F401 (the fixture: a real redis-server)

import games
from oracle_service.hex_service import HexValue, hex_move_order, hex_preference_order
from oracle_service.service import Answer, OracleClient, OracleWorker
from oracle_service.store import EmbeddedStore, HexSolved, RedisStore, Solved, connect4_key, hex_keys

# Positions of the 3x3 board (cells in move order): every one is solved in milliseconds.
POSITIONS_3 = [[], [4], [0], [1], [4, 2], [2, 4], [0, 1, 3], [4, 0, 8], [1, 7], [6, 2, 4, 3]]


def _rotate(cells, size):
    return [size * size - 1 - c for c in cells]


def _expected(cells, size) -> HexSolved:
    win = winning_cells(board_after(cells, size), size)
    return HexSolved(1 if win else -1, win)


def test_hex_keys_are_canonical_under_the_rotation():
    g = games.make("hex", size=4)
    cells = [[0, 5, 9], [15, 10, 6], [5, 10], [1, 2, 3]]  # 2nd is the 1st rotated; 3rd is symmetric
    boards = g.from_moves(cells).board
    keys, rotated = hex_keys(boards)
    assert keys[0] == keys[1] and rotated[0] != rotated[1]
    assert not rotated[2]  # a board equal to its rotation is never "rotated"
    assert len(set(keys)) == 3 and all(len(k) == 4 for k in keys)  # 16 cells, 2 bits each
    # The rotation is the engine's own symmetry (rot180), read through its action map.
    rot = g.symmetries()[1].action
    np.testing.assert_array_equal(g.from_moves([[int(rot[c]) for c in cells[0]]]).board[0], boards[1])
    # A record rotates with its board: cell i is 15 - i there, kept ascending.
    rec = HexSolved(1, (1, 4, 6))
    assert rec.oriented(True, 4) == HexSolved(1, (9, 11, 14)) and rec.oriented(False, 4) is rec
    assert HexSolved.unpack(rec.pack()) == rec and HexSolved.unpack(HexSolved(-1).pack()) == HexSolved(-1)
    with pytest.raises(ValueError, match="corrupt"):
        HexSolved.unpack(b"\x05\x01")


def test_embedded_store_keeps_hex_beside_connect4(tmp_path):
    store = EmbeddedStore(tmp_path / "s.sqlite")
    k4, _ = connect4_key("4453")
    store.put_many([(k4, Solved(5)), (1, Solved(-2))])
    boards = games.make("hex", size=3).from_moves([[4, 0], [8, 4]]).board
    (a, b), rotated = hex_keys(boards)
    store.hex_put_many(3, [(a, HexSolved(1, (2, 6))), (b, HexSolved(-1))])
    # The same key bytes on another board size are another position.
    store.hex_put_many(4, [(a, HexSolved(-1))])
    assert len(store) == 2 and store.hex_len(3) == 2 and store.hex_len(4) == 1 and store.hex_len(5) == 0
    assert store.get_many([k4, 1, 2]) == [Solved(5), Solved(-2), None]
    assert store.hex_get_many(3, [a, b, b"\x00\x00\x01"]) == [HexSolved(1, (2, 6)), HexSolved(-1), None]
    assert store.hex_get_many(4, [a, b]) == [HexSolved(-1), None]
    reopened = EmbeddedStore(tmp_path / "s.sqlite")  # another process's view of the file
    assert reopened.hex_get_many(3, [a]) == [HexSolved(1, (2, 6))] and reopened.get_many([k4]) == [Solved(5)]
    with pytest.raises(ValueError, match="size"):
        store.hex_get_many(0, [a])


def test_redis_store_keeps_hex_beside_connect4(redis_server):  # noqa: F811
    store = RedisStore(f"redis://:{PASSWORD}@127.0.0.1:{redis_server['port']}/0")
    keys, _ = hex_keys(games.make("hex", size=7).from_moves([[24, 0, 1], [24], []]).board)
    store.put_many([(11, Solved(3))])
    store.hex_put_many(7, [(keys[0], HexSolved(1, (2, 30, 48))), (keys[1], HexSolved(-1))])
    store.hex_put_many(5, [(keys[0][:7], HexSolved(-1))])
    assert store.hex_get_many(7, keys) == [HexSolved(1, (2, 30, 48)), HexSolved(-1), None]
    assert store.hex_get_many(5, [keys[0][:7]]) == [HexSolved(-1)]
    assert len(store) == 1 and store.get_many([11]) == [Solved(3)]
    assert store.hex_len(7) == 2 and store.hex_len(5) == 1
    assert store.stats()["hex_hits"] == 3 and store.stats()["errors"] == 0


def test_worker_answers_hex_batches_against_negamax(tmp_path):
    w = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=10)
    got = w.hex_solve(3, POSITIONS_3)
    assert [a.value for a in got] == [_expected(c, 3) for c in POSITIONS_3]
    solved = w.stats()["solved"]
    assert solved == len(POSITIONS_3)
    # The same positions rotated, asked as boards: answered from the store, rotated back.
    boards = games.make("hex", size=3).from_moves([_rotate(c, 3) for c in POSITIONS_3]).board
    again = w.hex_solve(3, list(boards))
    assert [a.value for a in again] == [_expected(_rotate(c, 3), 3) for c in POSITIONS_3]
    assert w.stats()["solved"] == solved and w.stats()["store_hits"] >= len(POSITIONS_3)
    # A winning move's child is stored as lost for its mover, and answered as such.
    child = [4, 2, 0]  # 0 wins for Black after [4, 2]
    assert 0 in _expected([4, 2], 3).winning
    assert w.hex_solve(3, [child])[0].value == HexSolved(-1) == _expected(child, 3)
    assert w.stats()["solved"] == solved and w.stats()["children_stored"] > 0
    # Bad items get their own error; the others are answered.
    bad = w.hex_solve(3, [[9], [4, 4], [1, 0, 4, 3, 7], [4, 2], np.ones((3, 3))])
    assert "off the 3x3 board" in bad[0].error and "played twice" in bad[1].error
    assert "already won" in bad[2].error and bad[3].value == _expected([4, 2], 3)
    assert "Black" in bad[4].error
    assert all("size" in a.error for a in w.hex_solve(0, [[], [1]]))
    assert all("size" in a.error for a in w.hex_solve(10, [[]]))


def _key(cells, size) -> bytes:
    return hex_keys(np.array(board_after(cells, size), np.int8).reshape(1, size, size))[0][0]


def test_value_only_answers_against_negamax_and_what_the_store_keeps(tmp_path):
    store = EmbeddedStore(tmp_path / "s.sqlite")
    w = OracleWorker(store, tt_log2_size=10)
    rng = np.random.default_rng(5)
    cases = [(3, c) for c in POSITIONS_3] + [(4, rng.permutation(16)[:k].tolist()) for k in (5, 6, 6, 7, 8, 9, 10)]
    cases = [(n, c) for n, c in cases if not any(connects(board_after(c, n), n, colour) for colour in (1, 2))]
    assert sum(_expected(c, n).value < 0 for n, c in cases) >= 3 and len(cases) >= 14
    for size, cells in cases:
        expected = _expected(cells, size)
        (a,) = w.hex_solve(size, [cells], value_only=True)
        assert isinstance(a.value, HexValue) and a.value.value == expected.value, cells
        kept = store.hex_get_many(size, [_key(cells, size)])[0]
        if expected.value > 0:
            assert a.value.move in expected.winning, cells
            # One winning cell is not a full record: the won position is not stored as
            # one (unless an earlier full query stored it), its winning child is, as lost.
            assert kept is None or kept == expected, cells
            if not connects(board_after(cells + [a.value.move], size), size, 1 + len(cells) % 2):
                assert store.hex_get_many(size, [_key(cells + [a.value.move], size)]) == [HexSolved(-1)]
        else:  # a lost position's value-only answer is its full record
            assert a.value.move == -1 and kept == HexSolved(-1), cells
    # A full record answers a value-only query from the store, with its winning cell
    # first in the preference order.
    (full,) = w.hex_solve(3, [[4, 2]])
    solved = w.stats()["solved"]
    (v,) = w.hex_solve(3, [[4, 2]], value_only=True)
    first = next(c for c in hex_preference_order(3).tolist() if c in full.value.winning)
    assert v.value == HexValue(1, first) and w.stats()["solved"] == solved


def test_worker_reports_unknown_at_its_limit_and_keeps_it_out_of_the_store(tmp_path):
    store = EmbeddedStore(tmp_path / "s.sqlite")
    w = OracleWorker(store, tt_log2_size=10, hex_node_limit=1)
    hard = [10, 5]  # 4x4, 14 empty cells: more than one node
    (a,) = w.hex_solve(4, [hard])
    assert a == Answer(None) and a.ok and w.stats()["hex_unknown"] == 1 and store.hex_len(4) == 0
    (b,) = w.hex_solve(4, [hard], node_limit=10**9, time_limit=120)  # a larger limit per query
    assert b.value.value in (1, -1) and store.hex_len(4) >= 1
    assert hex_move_order(np.array([[1, 2], [0, 1]])) == [0, 1, 3]


def test_client_answers_hex_on_the_replicas(ray_session, tmp_path):
    client = OracleClient(num_replicas=1, store=str(tmp_path / "shared.sqlite"),
                          replica_options={"num_cpus": 0}, tt_log2_size=10)
    try:
        got = client.hex_solve(3, POSITIONS_3 + [[4, 4]])
        assert [a.value for a in got[:-1]] == [_expected(c, 3) for c in POSITIONS_3]
        assert "played twice" in got[-1].error
        before = sum(s["solved"] for s in client.stats())
        again = client.hex_solve(3, [_rotate(c, 3) for c in POSITIONS_3])  # the store answers
        assert [a.value for a in again] == [_expected(_rotate(c, 3), 3) for c in POSITIONS_3]
        assert sum(s["solved"] for s in client.stats()) == before
        assert client.hex_solve(4, [[10, 5]], node_limit=1) == [Answer(None)]
    finally:
        client.close()
