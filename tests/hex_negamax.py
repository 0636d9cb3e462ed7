"""An exhaustive Hex negamax for small boards, written for the tests independently of the
engine and the solver: a board is a tuple of size*size cells (0 empty, 1 Black, 2 White),
Black joins row 0 to the last row, White column 0 to the last column, and a cell's six
neighbours are (r-1, c), (r-1, c+1), (r, c-1), (r, c+1), (r+1, c-1), (r+1, c)."""

from __future__ import annotations

import functools


def _neighbours(size: int, p: int) -> list[int]:
    r, c = divmod(p, size)
    steps = ((-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0))
    return [(r + dr) * size + c + dc for dr, dc in steps if 0 <= r + dr < size and 0 <= c + dc < size]


def connects(board: tuple, size: int, colour: int) -> bool:
    """Whether ``colour`` has its chain: a flood from its first edge reaching the other."""
    start = [r * size for r in range(size)] if colour == 2 else list(range(size))
    goal = (lambda p: p % size == size - 1) if colour == 2 else (lambda p: p // size == size - 1)
    todo = [p for p in start if board[p] == colour]
    seen = set(todo)
    while todo:
        p = todo.pop()
        if goal(p):
            return True
        for q in _neighbours(size, p):
            if q not in seen and board[q] == colour:
                seen.add(q)
                todo.append(q)
    return False


@functools.lru_cache(maxsize=None)
def winning_cells(board: tuple, size: int) -> tuple[int, ...]:
    """The cells that win for the side to move (Black when the stones are even), by
    full negamax: a cell wins if it completes the mover's chain or leaves the opponent
    without a winning cell."""
    mover = 1 if board.count(1) == board.count(2) else 2
    out = []
    for p, v in enumerate(board):
        if v:
            continue
        child = board[:p] + (mover,) + board[p + 1:]
        if connects(child, size, mover) or not winning_cells(child, size):
            out.append(p)
    return tuple(out)


def board_after(cells, size: int) -> tuple:
    board = [0] * (size * size)
    for ply, p in enumerate(cells):
        board[p] = 1 + ply % 2
    return tuple(board)


def value_after(cells, size: int) -> int:
    """+1 when the side to move after ``cells`` wins, else -1."""
    return 1 if winning_cells(board_after(cells, size), size) else -1
