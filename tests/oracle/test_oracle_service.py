"""The oracle service: the plain worker against the solver and the tables, then the Ray
pool, including a replica killed while a batch is in flight."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import games
from oracle_service.chomp_grundy import ChompTable
from oracle_service.connect4_solver import Connect4Solver
from oracle_service.fgame_oracle import FGameOracle
from oracle_service.service import Answer, OracleClient, OracleWorker

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
    assert "over" in g[1].error and "non-increasing" in g[2].error
    assert "shape" in g[3].error and "0..5" in g[5].error
    wm = w.chomp_winning_moves(4, 5, [[5, 5, 3, 1], [3, 4, 0, 0]])
    assert wm[0].value == table.winning_actions([5, 5, 3, 1]) and wm[1].error
    assert "rows" in w.chomp_grundy(40, 5, [[1]])[0].error

    oracle = FGameOracle(**FGAME)
    f = w.fgame_value(FGAME, [[], [0, 1], [5], [0, 0, 0, 0, 0]])
    assert [f[0].value, f[1].value] == [oracle.value([]), oracle.value([0, 1])]
    assert "out of range" in f[2].error and "over" in f[3].error


def test_client_over_replicas_survives_a_killed_replica(ray_session, tmp_path, positions, solver):
    ray = ray_session
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
        assert client.fgame_value(FGAME, [[0]])[0].value == FGameOracle(**FGAME).value([0])

        # Second query: answered from the shared store, by whichever replica gets it.
        before = client.stats()
        again = client.connect4_solve(positions[:40])
        after = client.stats()
        assert [a.value for a in again] == expected[:40]
        assert sum(s["store_hits"] for s in after) - sum(s["store_hits"] for s in before) == 40
        assert [s["solve_seconds"] for s in after] == [s["solve_seconds"] for s in before]

        # Kill a replica while a batch is in flight: Ray restarts it and retries the call.
        batch = easy_positions(60, plies=16, seed=1)  # ~35 ms per analysis: ~1 s per chunk
        result = {}
        thread = threading.Thread(target=lambda: result.update(a=client.connect4_analyze(batch)))
        thread.start()
        time.sleep(0.3)
        ray.kill(client.replicas[0], no_restart=False)
        thread.join(60)
        assert not thread.is_alive()
        assert [a.value for a in result["a"]] == [solver.analyze(p) for p in batch]
        assert all(a.ok for a in result["a"])
        assert [a.value for a in client.connect4_solve(positions[:10])] == expected[:10]
        # The restarted replica counts from zero: it answered its chunk again, then 5 more.
        assert client.stats()[0]["queries"] == 30 + 5

        # A replica gone for good: its chunk goes to the other replica.
        ray.kill(client.replicas[0], no_restart=True)
        assert [a.value for a in client.connect4_solve(positions[:10])] == expected[:10]
        stats = client.stats()
        assert stats[0] is None and stats[1]["queries"] > 0
    finally:
        client.close()
