"""The real ``python -m oracle_service solve --game hex`` command, with good and bad lines
mixed: answers in order (value and winning cells, --analyze per cell, ``unknown`` under a
limit), one error line per bad line (off the board, repeated, already won, malformed),
non-zero exit at the end; and option errors (size out of range, --size missing, Hex
options with another game). The expected answers come from tests/hex_negamax.py's plain
negamax, not from the solver."""

from __future__ import annotations

import pytest

from tests.hex_negamax import board_after, connects, winning_cells
from tests.oracle.test_oracle_cli import run  # the command as a subprocess


def expected_line(line, size):
    cells = [] if line == "-" else [int(x) for x in line.split(",")]
    won = winning_cells(board_after(cells, size), size)
    return f"{line} {1 if won else -1} {','.join(map(str, won)) or '-'}"


def test_hex_mixed_lines():
    good = ["-", "4", "4,0", "0,4,8"]
    lines = [good[0], "9", good[1], "4,4", "", "0,1,3,2,6", good[2], "a,1", good[3]]
    proc = run(["--game", "hex", "--size", "3"], lines)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [expected_line(x, 3) for x in good]
    assert proc.stdout.splitlines()[0] == "- 1 2,3,4,5,6"  # the empty 3x3 board
    errors = proc.stderr.strip().splitlines()
    # the blank line 5 is skipped, as for every game
    for line, (number, words) in zip(errors, [(2, "off the board"), (4, "repeated"), (6, "already won"),
                                             (8, "malformed cell list")], strict=True):
        assert line.startswith(f"error: line {number}: ") and words in line, line


@pytest.mark.slow
def test_hex_analyze_and_limits():
    lines = ["4,13,8,6,11,0,1,2", "1,4,12,0,14,7,9,6"]
    proc = run(["--game", "hex", "--size", "4", "--analyze"], lines)
    assert (proc.returncode, proc.stderr) == (0, "")
    for out, line in zip(proc.stdout.splitlines(), lines, strict=True):
        cells = [int(x) for x in line.split(",")]
        board = board_after(cells, 4)
        won = set(winning_cells(board, 4))
        words = out.split()
        assert words[0] == line and len(words) == 17
        assert words[1:] == ["-" if board[p] else "1" if p in won else "-1" for p in range(16)]
        assert "1" in words[1:] and "-1" in words[1:]  # both kinds of cells occur
    # 7x7 from the empty board cannot be solved in 30 nodes
    proc = run(["--game", "hex", "--size", "7", "--node-limit", "30"], ["-", "24"])
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["- unknown -", "24 unknown -"]


def test_hex_value_only():
    lines = ["5,10,0,15,3", "4,13,8,6,11,0,1,2", "0,6,15,9,12,1", "1,4,12,0,14,7,9,6"]
    proc = run(["--game", "hex", "--size", "4", "--value-only"], lines)
    assert (proc.returncode, proc.stderr) == (0, "")
    outcomes = set()
    for out, line in zip(proc.stdout.splitlines(), lines, strict=True):
        cells = [] if line == "-" else [int(x) for x in line.split(",")]
        won = winning_cells(board_after(cells, 4), 4)
        words = out.split()
        assert words[:2] == [line, "1" if won else "-1"], out
        assert (int(words[2]) in won) if won else words[2] == "-", out  # one winning cell
        outcomes.add(bool(won))
    assert outcomes == {True, False}


def test_hex_option_errors():
    for args in (["--game", "hex"], ["--game", "hex", "--size", "10"],
                 ["--game", "hex", "--size", "3", "--analyze", "--value-only"],
                 ["--game", "chomp", "--rows", "2", "--cols", "2", "--node-limit", "5"]):
        proc = run(args, [])
        assert proc.returncode == 2 and "error:" in proc.stderr, (args, proc.stderr)


def test_reference_is_sane():
    """The expected answers' own negamax on a won board and the empty 2x2 board."""
    assert connects(board_after([0, 1, 3, 2, 6], 3), 3, 1)
    assert winning_cells(board_after([], 2), 2) == (1, 2)
