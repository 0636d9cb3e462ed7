"""The Hex solver's transposition table as one record (``TransTable``): an empty table
finds nothing, an entry comes back as stored, a bucket keeps the larger subtree in its
first slot and always replaces its second, a proof outranks any subtree, and the solver
keeps its table across calls."""

from __future__ import annotations

import numpy as np

from oracle_service.hex_solver import _INF, HexSolver, TransTable, _new_table, _tt_probe, _tt_store

BUCKETS = 4  # hashes 1, 5, 9, 13 share bucket 1 (entries 2 and 3)


def probe(tt, h):
    found, pn, dn, lo, hi, mlo, mhi = _tt_probe(np.uint64(h), tt)
    return bool(found), int(pn), int(dn), int(lo), int(hi), int(mlo), int(mhi)


def store(tt, h, pn, dn, work, carrier=0):
    _tt_store(np.uint64(h), np.int64(pn), np.int64(dn), np.uint64(carrier), np.uint64(0), np.uint64(0),
              np.uint64(0), np.int64(work), tt)


def test_an_empty_table_finds_nothing():
    tt = _new_table(BUCKETS)
    assert isinstance(tt, TransTable) and all(len(field) == 2 * BUCKETS for field in tt)
    assert (tt.pn == -1).all()
    assert probe(tt, 5) == (False, 1, 1, 0, 0, 0, 0)


def test_an_entry_comes_back_as_stored_with_numbers_capped():
    tt = _new_table(BUCKETS)
    _tt_store(np.uint64(6), np.int64(3), np.int64(2 * _INF), np.uint64(0b101), np.uint64(1), np.uint64(7),
              np.uint64(8), np.int64(40), tt)
    assert probe(tt, 6) == (True, 3, int(_INF), 0b101, 1, 7, 8)
    assert probe(tt, 2) == (False, 1, 1, 0, 0, 0, 0)  # same bucket, another position


def test_a_bucket_keeps_the_larger_subtree_and_a_proof_first():
    tt = _new_table(BUCKETS)
    store(tt, 1, 2, 2, work=10)  # the first slot (empty, work 0)
    store(tt, 5, 2, 2, work=5)  # smaller: the second slot
    store(tt, 9, 2, 2, work=3)  # smaller again: replaces 5 in the second slot
    assert [probe(tt, h)[0] for h in (1, 5, 9)] == [True, False, True]
    store(tt, 13, 0, int(_INF), work=1, carrier=0b11)  # a proof counts as the largest subtree
    assert [probe(tt, h)[0] for h in (1, 9, 13)] == [False, True, True]
    assert probe(tt, 13)[:4] == (True, 0, int(_INF), 0b11)
    store(tt, 9, 4, 1, work=2)  # a position already in the bucket is updated in place
    assert probe(tt, 9)[:3] == (True, 4, 1) and probe(tt, 13)[0]


def test_the_solver_keeps_its_table_across_calls():
    solver = HexSolver(5, tt_log2=12)
    first = solver.solve([])
    again = solver.solve([])
    assert (first.value, first.winning) == (again.value, again.winning)
    assert again.nodes < first.nodes
    assert isinstance(solver._tt, TransTable) and (solver._tt.pn >= 0).any()
