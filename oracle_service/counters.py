"""An oracle worker's counters: one record, kept by the worker and by its Hex part."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class OracleCounters:
    """Counts since the worker started (``OracleWorker.stats`` reports them)."""

    queries: int = 0  # items asked, all games, bad ones included
    store_hits: int = 0  # distinct positions asked that the store answered
    solved: int = 0  # positions solved
    solve_seconds: float = 0.0  # solving, store reads for seeding included
    errors: int = 0  # bad items
    seed_lookups: int = 0  # descendant positions looked up in the store before solving
    seeded: int = 0  # exact scores entered in the solver's table from those records
    children_stored: int = 0  # children's score records written after analyses
    hex_unknown: int = 0  # Hex positions whose solve ran out of its node or time limit
