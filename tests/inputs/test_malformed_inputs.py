"""Inputs from outside, fed malformed values by hypothesis: every one gets a clear error
of the documented type (or is accepted), and nothing crashes or hangs.

Covered: the oracle command line (Connect Four move strings, Chomp profiles), oracle
service requests (move sequences, bitboards, Chomp profiles), ``--set`` overrides and ``config.json`` files of the launcher,
checkpoint files and replay snapshots. Evaluation datasets are covered in
``tests/evaluation``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from launch.config import ConfigError, TrainConfig, resolve, validate
from learner.checkpoint import CorruptCheckpointError, load_checkpoint, save_checkpoint
from oracle_service.cli import main as oracle_main
from oracle_service.connect4_solver import Board, parse_board
from oracle_service.service import OracleWorker
from replay.buffer import RingBuffer, SnapshotError
from replay.rows import avi_schema

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Move strings long enough that a legal one is quick to solve; most are illegal.
MOVE_LINES = st.text(alphabet="0123456789 ,a-", min_size=26, max_size=45)
PROFILES = st.text(alphabet="0123456789,- x", min_size=0, max_size=20)


def _run_oracle_cli(argv, lines):
    stdin = io.StringIO("\n".join(lines) + "\n")
    out, err = io.StringIO(), io.StringIO()
    code = oracle_main(argv, stdin=stdin, stdout=out, stderr=err)
    answered = [x for x in out.getvalue().splitlines() if x]
    errors = [x for x in err.getvalue().splitlines() if x.startswith("error: line")]
    return code, answered, errors


@FAST
@given(st.lists(MOVE_LINES, min_size=1, max_size=5))
def test_oracle_cli_answers_or_rejects_every_connect4_line(lines):
    code, answered, errors = _run_oracle_cli(["solve", "--game", "connect4"], lines)
    expected = [x.strip() for x in lines if x.strip()]
    assert len(answered) + len(errors) == len(expected)
    assert code == (1 if errors else 0)
    for e in errors:
        assert "error: line" in e and ":" in e[len("error: line"):]


@FAST
@given(st.lists(PROFILES, min_size=1, max_size=5))
def test_oracle_cli_answers_or_rejects_every_chomp_profile(lines):
    code, answered, errors = _run_oracle_cli(["solve", "--game", "chomp", "--rows", "4", "--cols", "5"], lines)
    expected = [x.strip() for x in lines if x.strip()]
    assert len(answered) + len(errors) == len(expected)
    assert code == (1 if errors else 0)


_WORKER = None


def _worker(tmp_path_factory):
    global _WORKER
    if _WORKER is None:
        _WORKER = OracleWorker(store=str(tmp_path_factory.mktemp("store") / "s.sqlite"), tt_log2_size=18,
                               chomp_cache_dir=str(tmp_path_factory.mktemp("chomp")))
    return _WORKER


# Short sequences are valid early positions (seconds to minutes to solve): the short
# ones here always hold an out-of-range column.
ITEMS = st.one_of(st.lists(st.integers(-3, 12), min_size=26, max_size=44), MOVE_LINES,
                  st.lists(st.integers(-(2 ** 70), -1) | st.integers(7, 2 ** 70), min_size=1, max_size=3),
                  st.lists(st.floats() | st.text(max_size=2) | st.none(), min_size=1, max_size=3))


@pytest.mark.slow
@FAST
@given(st.lists(ITEMS, min_size=1, max_size=6))
def test_oracle_service_answers_each_item_or_names_its_error(tmp_path_factory, items):
    worker = _worker(tmp_path_factory)
    answers = worker.connect4_solve(items, weak=True)
    assert len(answers) == len(items)
    for a in answers:
        assert (a.error is None) != (a.value is None)
        assert a.error is None or isinstance(a.error, str) and a.error


# Boards (bitboards instead of moves): any integers, mostly no position a game reaches.
BITS = st.integers(0, 2 ** 49) | st.integers(-(2 ** 70), 2 ** 70) | st.floats() | st.none()


@FAST
@given(BITS, BITS)
def test_oracle_service_boards_are_parsed_or_refused_by_name(current, mask):
    try:
        cur, m, plies = parse_board(Board(current, mask))
    except ValueError as e:
        assert str(e).startswith("connect4 board")
    else:  # accepted: a position some game reaches, not over
        assert (cur, m) == (current, mask) and plies == m.bit_count() < 42 and cur & ~m == 0


CHOMP_ITEMS = st.lists(st.one_of(st.integers(-5, 12), st.floats(allow_nan=True), st.text(max_size=2)), max_size=7)


@FAST
@given(st.lists(CHOMP_ITEMS, min_size=1, max_size=6))
def test_oracle_service_chomp_items_never_crash(tmp_path_factory, profiles):
    worker = _worker(tmp_path_factory)
    answers = worker.chomp_grundy(4, 5, profiles)
    assert len(answers) == len(profiles)
    assert all((a.error is None) != (a.value is None) for a in answers)


KEYS = st.sampled_from(["lr", "num_envs", "epsilon", "gamma", "schedule", "network.width", "network.kind",
                        "mcts.simulations", "mcts.temperature", "game_params", "device", "nope", "network.nope",
                        "network", ""])
VALUES = st.one_of(st.text(max_size=8), st.integers(-10, 10).map(str), st.floats().map(str),
                   st.sampled_from(["{}", '{"rows": 0}', '{"rows": 3, "cols": 4}', "[1]", "true", "-1", "nan"]))


@FAST
@given(st.lists(st.tuples(KEYS, VALUES), max_size=4), st.booleans())
def test_set_overrides_are_accepted_or_refused_with_a_config_error(pairs, with_separator):
    overrides = [f"{k}={v}" if with_separator else f"{k}{v}" for k, v in pairs]
    try:
        config = resolve("chomp", "small", overrides, algo="alphazero")
    except ConfigError as err:
        assert str(err)
        return
    validate(config)  # what resolve returned runs


JSON_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                     st.text(max_size=5)),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6)


@FAST
@given(st.dictionaries(st.sampled_from(["algo", "game", "lr", "network", "mcts", "num_envs", "junk",
                                        "game_params", "epsilon"]), JSON_VALUES, max_size=5))
def test_config_files_are_loaded_or_refused_with_a_config_error(data):
    try:
        config = TrainConfig.from_dict(json.loads(json.dumps(data)))
        validate(config)
    except ConfigError as err:
        assert str(err)


@FAST
@given(st.binary(max_size=300))
def test_random_bytes_are_not_a_checkpoint(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("ckpt") / "ckpt-000000010.pt"
    save_checkpoint(path, {"counters": {"updates": 10}})
    path.write_bytes(blob)  # the checksum file stays: the content no longer matches it
    try:
        load_checkpoint(path)
    except CorruptCheckpointError as err:
        assert str(path) in str(err)
    else:
        raise AssertionError("random bytes were loaded as a checkpoint")


@FAST
@given(st.binary(max_size=400), st.integers(0, 3))
def test_random_bytes_are_not_a_replay_snapshot(tmp_path_factory, blob, keep):
    directory = tmp_path_factory.mktemp("snap")
    schema = avi_schema((2, 3, 3))
    buffer = RingBuffer(schema, 16, seed=0)
    buffer.add({"obs": np.zeros((4, 2, 3, 3), np.uint8), "target": np.zeros(4, np.float32),
                "version": np.zeros(4, np.int64)})
    path = Path(buffer.snapshot(directory / "shard.parquet"))
    good = path.read_bytes()
    path.write_bytes(good[:keep * len(good) // 4] + blob)  # truncated and/or garbage
    try:
        RingBuffer.restore(path, schema)
    except SnapshotError as err:
        assert str(path) in str(err) or path.name in str(err)
