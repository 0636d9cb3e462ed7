"""The opening book: positions within a depth, solved on Ray into the store deepest
first (shallower ones seeded from their stored descendants), then answered from the
store."""

import io
import subprocess
import sys

import pytest

import games
from games.connect4 import moves_from_digits
from oracle_service.book import book_positions, fill_book
from oracle_service.cli import main
from oracle_service.connect4_solver import Connect4Solver
from oracle_service.service import OracleClient
from oracle_service.store import connect4_key

ROOT = "5762371664322444"  # 16 plies of random play: quick to solve


def test_book_positions_are_every_mirror_class_within_the_depth():
    positions = book_positions(2, ROOT)
    game = games.make("connect4")
    # Independent count: every live position of every move sequence of length <= 2.
    keys = set()
    frontier = [ROOT]
    for _ in range(3):
        nxt = []
        for p in frontier:
            state = game.from_moves([moves_from_digits(p)])
            if game.terminal(state)[0]:
                continue
            keys.add(connect4_key(p)[0])
            nxt += [p + str(c + 1) for c in range(7) if game.legal(state)[0, c]]
        frontier = nxt
    assert len(positions) == len(keys) == len({connect4_key(p)[0] for p in positions})
    assert positions[0] == ROOT and all(len(p) <= len(ROOT) + 2 for p in positions)
    with pytest.raises(ValueError, match="already over"):
        book_positions(1, "1212121")


def test_book_fills_the_store_and_then_answers_from_it(ray_session, tmp_path):
    store = str(tmp_path / "book.sqlite")
    positions = book_positions(2, ROOT)
    client = OracleClient(num_replicas=2, store=store, replica_options={"num_cpus": 0}, tt_log2_size=18)
    calls = []  # the batches the book sent, in order
    analyze = client.connect4_analyze
    client.connect4_analyze = lambda batch: calls.append(list(batch)) or analyze(batch)
    try:
        first = fill_book(client, positions, chunk=16)
        second = fill_book(client, positions, chunk=16)
        answers = client.connect4_analyze(positions[:5])
    finally:
        client.close()
    assert first["solved"] == len(positions) and first["errors"] == 0
    # Deepest first, one depth per call, every position once: each position above the
    # deepest (the root last) is solved with its descendants' records in the store.
    filled = calls[:len(calls) // 2]  # the second fill made the same calls
    assert all(len({len(p) for p in batch}) == 1 and len(batch) <= 16 for batch in filled)
    depths = [len(batch[0]) for batch in filled]
    assert depths == sorted(depths, reverse=True) and filled[-1] == [ROOT]
    assert sorted(p for batch in filled for p in batch) == sorted(positions)
    assert first["seeded"] >= 7
    assert second["solved"] == 0 and second["store_hits"] == len(positions)
    solver = Connect4Solver(tt_log2_size=18)
    assert [a.value for a in answers] == [solver.analyze(p) for p in positions[:5]]


@pytest.mark.slow
def test_book_command(tmp_path):
    store = tmp_path / "cli.sqlite"
    out = subprocess.run([sys.executable, "-m", "oracle_service", "book", "--game", "connect4", "--depth", "1",
                          "--from", ROOT, "--store", str(store), "--replicas", "1", "--seed-depth", "1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"positions={len(book_positions(1, ROOT))}" in out.stdout and store.exists()
    assert "seeded=" in out.stdout
    err = io.StringIO()
    assert main(["book", "--game", "connect4", "--depth", "1", "--seed-depth", "-1"],
                stdout=io.StringIO(), stderr=err) == 2
    assert "--seed-depth must be >= 0, got -1" in err.getvalue()
