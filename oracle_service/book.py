"""An opening book: every Connect Four position up to a depth, solved once into the store.

``python -m oracle_service book --game connect4 --depth D [--from MOVES]`` lists every
live position reachable in at most D plies (from the start, or from MOVES), one per
mirror class, and has the oracle replicas on Ray analyse them in parallel; the store
keeps each score and per-column analysis, so later queries are answered from it.

The deepest positions are solved first, one depth at a time: the replicas consult the
store during search (``OracleWorker``: stored descendants seed the solver's table), so
each shallower position is solved with its children and grandchildren already known.
"""

from __future__ import annotations

import time

import numpy as np

import games
from games import take
from games.connect4 import moves_from_digits
from oracle_service.store import connect4_keys


def book_positions(depth: int, prefix: str = "") -> list[str]:
    """Move strings (1-based digits) of every live position within ``depth`` plies of
    ``prefix``, one per mirror class, shallowest first."""
    if depth < 0:
        raise ValueError(f"book depth must be >= 0, got {depth}")
    game = games.make("connect4")
    frontier = game.from_moves([moves_from_digits(prefix)])
    if game.terminal(frontier)[0]:
        raise ValueError(f"book: the position {prefix!r} is already over")
    names = [prefix]
    seen = set(connect4_keys(frontier.current, frontier.mask)[0].tolist())
    out = list(names)
    A = game.num_actions
    for _ in range(depth):
        exp = game.expand(frontier)
        live = (exp.legal & ~exp.done).reshape(-1)  # [B * A]
        rows = np.flatnonzero(live)
        children = take(exp.children, rows)
        keys = connect4_keys(children.current, children.mask)[0].tolist()
        fresh, fresh_names = [], []
        for i, (row, key) in enumerate(zip(rows, keys)):
            if key not in seen:
                seen.add(key)
                fresh.append(i)
                fresh_names.append(names[row // A] + str(row % A + 1))
        frontier, names = take(children, np.array(fresh, dtype=np.int64)), fresh_names
        out.extend(names)
        if not names:
            break
    return out


def fill_book(client, positions: list[str], chunk: int = 64, progress=None) -> dict:
    """Analyse ``positions`` (move strings) with the oracle replicas behind ``client``,
    deepest first and at most ``chunk`` per call, a call never mixing two depths (the
    positions of one call are seeded from what the store held before it); returns
    counts of positions, new solves, store hits, seeded scores and the seconds taken."""
    before = [s or {} for s in client.stats()]
    start = time.perf_counter()
    errors = done = 0
    by_depth: dict[int, list[str]] = {}
    for p in positions:
        by_depth.setdefault(len(p), []).append(p)
    for depth in sorted(by_depth, reverse=True):
        level = by_depth[depth]
        for lo in range(0, len(level), chunk):
            answers = client.connect4_analyze(level[lo:lo + chunk])
            errors += sum(not a.ok for a in answers)
            done += len(answers)
            if progress:
                progress(done, len(positions))
    after = [s or {} for s in client.stats()]

    def gained(key):
        return sum(a.get(key, 0) - b.get(key, 0) for a, b in zip(after, before))

    return {"positions": len(positions), "solved": gained("solved"), "store_hits": gained("store_hits"),
            "seeded": gained("seeded"), "errors": errors, "seconds": time.perf_counter() - start}
