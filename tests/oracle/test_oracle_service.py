"""The oracle service: the plain worker against the solver and the tables, the store
consulted during search (fewer nodes, same scores), the distinct-position counter, then
the Ray pool, its summed statistics, and a replica killed while a batch is in flight."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

import numpy as np
import pytest
import ray

import games
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_solver import Board, Connect4Solver, parse_moves
from oracle_service.fgame_oracle import FGamePathOracle
from oracle_service.service import Answer, DistinctKeys, OracleClient, OracleWorker
from oracle_service.store import EmbeddedStore, Solved, connect4_key

FGAME = {"depth": 4, "branching": 3, "beta": 0.1, "seed": 1}


def easy_positions(n: int, plies: int = 22, seed: int = 0) -> list[str]:
    """Move strings of random games stopped after ``plies`` moves, none over: with 20
    empty cells left they solve in milliseconds."""
    rng = np.random.default_rng(seed)
    g = games.make("connect4")
    out = []
    while len(out) < n:
        state, moves, done = g.init(1), [], False
        for _ in range(plies):
            a = int(rng.choice(np.flatnonzero(g.legal(state)[0])))
            state, _, d = g.step(state, np.array([a]))
            moves.append(a)
            done = bool(d[0])
            if done:
                break
        if not done:
            out.append("".join(str(a + 1) for a in moves))
    return out


@contextlib.contextmanager
def held_write_lock(path: str):
    """SQLite's write lock on the store at ``path`` while the block runs: writers wait
    (the store's busy timeout is 30 s), readers go on (WAL mode)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def wait_until_busy(replica, timeout: float = 60.0) -> None:
    """Block until ``replica`` is inside a call that was sent before this one: a ping then
    stays unanswered (an actor runs one caller's calls in order, one at a time), where an
    idle replica answers within milliseconds."""
    deadline = time.monotonic() + timeout
    while ray.wait([replica.ping.remote()], timeout=2.0)[0]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the replica answered pings for {timeout:.0f} s: no call reached it")


def wait_until_gone(pid: int, timeout: float = 60.0) -> None:
    """Block until no process has ``pid`` (the replicas run on this machine)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} still runs {timeout:.0f} s after its actor was killed")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def positions():
    return easy_positions(120)


@pytest.fixture(scope="module")
def solver():
    return Connect4Solver(tt_log2_size=20)


def test_worker_matches_the_solver_and_reuses_the_store(tmp_path, positions, solver):
    w = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=20)
    batch = positions[:60] + positions[:5]  # repeats inside a batch are solved once
    answers = w.connect4_solve(batch)
    assert [a.value for a in answers] == [solver.solve(p) for p in batch]
    assert all(a.ok for a in answers)
    s1 = w.stats()
    assert s1["queries"] == 65 and s1["unique_positions"] == 60 and s1["solved"] == 60
    assert s1["store_hits"] == 0 and len(w.store) == 60

    again = w.connect4_solve(positions[:60])  # all from the store: no solving
    s2 = w.stats()
    assert [a.value for a in again] == [a.value for a in answers[:60]]
    assert s2["store_hits"] == 60 and s2["solved"] == 60
    assert s2["solve_seconds"] == s1["solve_seconds"]
    weak = w.connect4_solve(positions[:10], weak=True)
    assert [a.value for a in weak] == [solver.solve(p, weak=True) for p in positions[:10]]

    # A new worker (another process in real use) on the same file reads the same store.
    w2 = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=20)
    assert [a.value for a in w2.connect4_solve(positions[:60])] == [a.value for a in answers[:60]]
    assert w2.stats()["solved"] == 0


def test_worker_analysis_and_best_moves_through_the_mirror(tmp_path, positions, solver):
    w = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=20)
    batch = positions[:20]
    mirrored = ["".join(str(8 - int(c)) for c in p) for p in batch]
    assert [a.value for a in w.connect4_analyze(batch)] == [solver.analyze(p) for p in batch]
    solved = w.stats()["solved"]
    # The mirror images are answered from the same entries, columns reversed.
    out = w.connect4_analyze(mirrored)
    assert [a.value for a in out] == [solver.analyze(p) for p in mirrored]
    assert w.stats()["solved"] == solved and w.stats()["store_hits"] == 20
    assert [a.value for a in w.connect4_best_moves(mirrored)] == [solver.best_moves(p) for p in mirrored]
    # Each analysis also stored its live children's scores (a fresh solve says which).
    children = [p + str(c + 1) for p, a in zip(mirrored[:5], out[:5]) for c in range(7)
                if a.value[c] is not None and a.value[c] != (43 - len(p)) // 2]
    stored = w.store.get_many([connect4_key(ch)[0] for ch in children])
    assert [r.score for r in stored] == [solver.solve(ch) for ch in children]
    assert w.stats()["children_stored"] >= len(children)


def mirror(moves: str) -> str:
    return "".join(str(8 - int(ch)) for ch in moves)


ROOT = "71623642252472"  # 14 plies (past the 12-ply book), score -2: ~230k nodes from an empty table


def test_worker_consults_the_store_during_search(tmp_path):
    reference = Connect4Solver(tt_log2_size=22)
    score = reference.solve(ROOT)
    assert score == -2
    analysis = reference.analyze(ROOT)
    kids = [c for c in range(7) if analysis[c] is not None]  # none wins at once here
    assert max(analysis[c] for c in kids) == score

    def nodes_and_score(records, seed_depth):
        """Nodes searched, score and statistics of a fresh worker solving ROOT with a
        fresh store holding ``records`` (the worker writes ROOT back into it)."""
        path = tmp_path / f"store{len(list(tmp_path.iterdir()))}.sqlite"
        EmbeddedStore(path).put_many(records)
        w = OracleWorker(str(path), tt_log2_size=22, seed_depth=seed_depth)
        got = w.connect4_solve([ROOT])[0].value
        return w.solver.nodes, got, w.stats()

    empty, s0, _ = nodes_and_score([], 2)
    assert s0 == score and empty > 100_000

    # Children's scores only, half of them written through their mirror image.
    children = [(connect4_key(mirror(ROOT + str(c + 1)) if c % 2 else ROOT + str(c + 1))[0],
                 Solved(-analysis[c])) for c in kids]
    n1, s1, st1 = nodes_and_score(children, 1)
    assert s1 == score and n1 < empty / 100 and st1["seeded"] == len(kids)

    # Grandchildren's analyses only (a child's analysis holds its children's scores):
    # seed_depth 2 reaches them, and from their analyses their own children.
    grand = {}
    for c in kids:
        child = ROOT + str(c + 1)
        child_analysis = reference.analyze(child)
        for g, v in enumerate(child_analysis):
            if v is not None and v != (43 - len(child)) // 2:
                grand[child + str(g + 1)] = -v
    grand_records = []
    for moves, v in grand.items():  # analysed in the mirror orientation, stored canonically
        m = mirror(moves)
        key, flipped = connect4_key(m)
        grand_records.append((key, Solved(v, tuple(reference.analyze(m))).oriented(flipped)))
    n2, s2, st2 = nodes_and_score(grand_records, 2)
    assert s2 == score and n2 < empty / 10 and st2["seeded"] > len(grand)
    n2_shallow, s2_shallow, st2_shallow = nodes_and_score(grand_records, 1)
    assert s2_shallow == score and st2_shallow["seeded"] == 0 and n2_shallow == empty

    # The seeded table answers the grandchildren's analyses exactly, orientation included.
    EmbeddedStore(tmp_path / "grand.sqlite").put_many(grand_records)
    w = OracleWorker(str(tmp_path / "grand.sqlite"), tt_log2_size=22, seed_depth=2)
    w.connect4_solve([ROOT])
    nodes = w.solver.nodes
    some = list(grand)[:6]
    assert [w.solver.analyze(g) for g in some] == [reference.analyze(g) for g in some]
    assert w.solver.nodes - nodes < 200  # all from the seeded entries


def test_distinct_keys_exact_then_estimated():
    rng = np.random.default_rng(0)
    keys = rng.choice(2**49, size=300_000, replace=False).astype(np.int64)
    a, b = DistinctKeys(), DistinctKeys()
    a.add(keys[:1000]), a.add(keys[:1000]), b.add(keys[500:1500])
    assert a.count() == 1000 and DistinctKeys.merged_count([a.state(), b.state()]) == 1500
    big, other = DistinctKeys(exact_limit=10_000), DistinctKeys(exact_limit=10_000)
    big.add(keys[:200_000]), other.add(keys[100_000:])
    assert big.state()[0] is None
    assert abs(big.count() - 200_000) < 0.04 * 200_000
    assert abs(DistinctKeys.merged_count([big.state(), other.state()]) - 300_000) < 0.04 * 300_000


def test_worker_bad_items_get_their_error(tmp_path, positions, solver):
    w = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=20)
    batch = ["4444444", positions[0], "x", positions[1] + "9", "1212121", positions[2]]
    out = w.connect4_solve(batch)
    assert "full" in out[0].error and "bad character" in out[2].error and "'9'" in out[3].error
    assert "won" in out[4].error
    assert [out[i].value for i in (1, 5)] == [solver.solve(positions[0]), solver.solve(positions[2])]
    assert all(out[i].error is None for i in (1, 5))
    assert "full" in w.connect4_analyze(["4444444"])[0].error
    assert w.stats()["errors"] == 5

    table = ChompTable(4, 5, use_disk=False)
    profiles = [[5, 5, 3, 1], [1, 0, 0, 0], [3, 4, 0, 0], [5, 5], [2, 2, 2, 2], [6, 1, 0, 0]]
    g = w.chomp_grundy(4, 5, profiles)
    assert g[0].value == table.grundy([5, 5, 3, 1]) and g[4].value == table.grundy([2, 2, 2, 2])
    # Each bad item names its index in the batch and its profile.
    assert g[1].error == ("chomp (4 x 5): item 1 of the batch, profile [1, 0, 0, 0]: position "
                          "already over, only the poisoned square is left")
    assert g[2].error == ("chomp (4 x 5): item 2 of the batch, profile [3, 4, 0, 0]: row lengths "
                          "must be non-increasing")
    assert g[3].error == "chomp (4 x 5): item 3 of the batch, profile [5, 5]: expected 4 row lengths, got 2"
    assert g[5].error == ("chomp (4 x 5): item 5 of the batch, profile [6, 1, 0, 0]: row lengths "
                          "must lie in 0..5")
    wm = w.chomp_winning_moves(4, 5, [[5, 5, 3, 1], [3, 4, 0, 0]])
    assert wm[0].value == table.winning_actions([5, 5, 3, 1])
    assert "item 1 of the batch, profile [3, 4, 0, 0]" in wm[1].error
    assert "rows" in w.chomp_grundy(40, 5, [[1]])[0].error

    oracle = FGamePathOracle(**FGAME)
    f = w.fgame_value(FGAME, [[], [0, 1], [5], [0, 0, 0, 0, 0]])
    assert [f[0].value, f[1].value] == [oracle.value([]), oracle.value([0, 1])]
    assert "out of range" in f[2].error and "over" in f[3].error


def test_worker_takes_boards_as_their_move_sequences(tmp_path, positions, solver):
    """Engine states have no move list: a Board is answered as the moves that built it,
    shares its store entry, and a board no game reaches gets its own error."""
    w = OracleWorker(str(tmp_path / "s.sqlite"), tt_log2_size=20)
    boards = [Board(*parse_moves(p)[:2]) for p in positions[:20]]
    assert [a.value for a in w.connect4_solve(boards)] == [solver.solve(p) for p in positions[:20]]
    assert w.connect4_analyze(boards[:3]) == w.connect4_analyze(positions[:3])
    hits = w.stats()["store_hits"]
    w.connect4_solve(positions[:20])  # the same positions, now as moves: all from the store
    assert w.stats()["store_hits"] - hits == len(set(boards))
    cur, mask = boards[0]
    theirs = mask & ~cur
    bad = w.connect4_solve([Board(cur, mask | (1 << 6)), boards[1], Board(cur | (theirs & -theirs), mask)])
    assert "outside the 7x6 cells" in bad[0].error and "stones after" in bad[2].error
    assert bad[1].value == solver.solve(positions[1])


def test_client_over_replicas_survives_a_killed_replica(ray_session, tmp_path, positions, solver):
    store = str(tmp_path / "shared.sqlite")
    client = OracleClient(num_replicas=2, store=store, replica_options={"num_cpus": 0},
                          tt_log2_size=20)
    try:
        expected = [solver.solve(p) for p in positions]
        got = client.connect4_solve(positions[:40] + ["4444444"])
        assert [a.value for a in got[:40]] == expected[:40]
        assert isinstance(got[40], Answer) and "full" in got[40].error
        assert client.chomp_grundy(3, 3, [[3, 3, 3], [3, 0]])[0].value == \
            ChompTable(3, 3, use_disk=False).grundy([3, 3, 3])
        assert client.fgame_value(FGAME, [[0]])[0].value == FGamePathOracle(**FGAME).value([0])

        # Second query: answered from the shared store, by whichever replica gets it.
        before = client.stats()
        again = client.connect4_solve(positions[:40])
        after = client.stats()
        assert [a.value for a in again] == expected[:40]
        assert sum(s["store_hits"] for s in after) - sum(s["store_hits"] for s in before) == 40
        assert [s["solve_seconds"] for s in after] == [s["solve_seconds"] for s in before]
        # Mirror images are the same positions: still 40 distinct over both replicas.
        client.connect4_solve([mirror(p) for p in positions[:40:2]])
        summary = client.stats_summary()
        assert summary["oracle/unique_positions"] == 40
        assert summary["oracle/queries"] == 41 + 2 + 1 + 40 + 20
        assert summary["oracle/errors"] == 2  # "4444444" and the short Chomp profile
        assert summary["oracle/store_hits"] == 60 and summary["oracle/solved"] == 40
        assert summary["oracle/replicas_alive"] == 2
        assert summary["oracle/solve_seconds"] == sum(s["solve_seconds"] for s in after)
        assert set(summary) == {f"oracle/{k}" for k in (
            "queries", "unique_positions", "store_hits", "solved", "solve_seconds", "errors",
            "seed_lookups", "seeded", "children_stored", "book_leaves", "replicas_alive")}

        # Kill a replica while a batch is in flight: Ray restarts it and retries the call.
        # The test holds the store's write lock, so no replica can finish its chunk (an
        # analysis ends by writing to the store) until the kill has landed: ray.kill only
        # asks for it, so the lock is kept until the replica's process is gone (a replica
        # let go a moment early answered its chunk before dying, and nothing was retried).
        batch = easy_positions(60, plies=16, seed=1)
        result = {}
        other_before = client.stats()[1]["queries"]
        pid = ray.get(client.replicas[0].__ray_call__.remote(lambda replica: os.getpid()))
        with held_write_lock(store):
            thread = threading.Thread(target=lambda: result.update(a=client.connect4_analyze(batch)))
            thread.start()
            wait_until_busy(client.replicas[0])
            ray.kill(client.replicas[0], no_restart=False)
            wait_until_gone(pid)
        thread.join(60)
        assert not thread.is_alive()
        assert [a.value for a in result["a"]] == [solver.analyze(p) for p in batch]
        assert all(a.ok for a in result["a"])
        assert [a.value for a in client.connect4_solve(positions[:10])] == expected[:10]
        # The killed replica's chunk of 30 was answered once more, after the kill: by the
        # restarted replica when Ray retried the call there (it counts from zero), or by
        # the other replica when the call failed first and the client moved the chunk.
        # Either way each replica then answered 5 of the 10 solves.
        restarted, other = (s["queries"] for s in client.stats())
        assert restarted in (30 + 5, 5), restarted
        assert restarted + (other - other_before) == 30 + 30 + 10

        # A replica gone for good: its chunk goes to the other replica.
        ray.kill(client.replicas[0], no_restart=True)
        assert [a.value for a in client.connect4_solve(positions[:10])] == expected[:10]
        stats = client.stats()
        assert stats[0] is None and stats[1]["queries"] > 0
        assert client.stats_summary()["oracle/replicas_alive"] == 1
    finally:
        client.close()
