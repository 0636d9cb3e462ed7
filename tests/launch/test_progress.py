"""The console progress: one line redrawn in place on a terminal, plain lines at most
every few seconds elsewhere."""

from __future__ import annotations

import io

from launch.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def records(n):
    return [{"updates": 10 * i, "loss": 1.0 / (i + 1), "positions_per_s": 1000.0, "replay_size": 64 * i,
             **({"eval/value_mae": 0.01 * (100 - i)} if i % 5 == 0 else {})} for i in range(1, n + 1)]


def test_plain_lines_at_most_every_interval_and_the_last_one():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(600, "updates", stream=out, interval=5.0, clock=lambda: now[0])
    for record in records(60):  # one record a second for a minute
        now[0] += 1.0
        progress.update(record["updates"], record)
    progress.close()
    lines = out.getvalue().splitlines()
    assert 10 <= len(lines) <= 13, lines
    assert "\r" not in out.getvalue()
    assert lines[-1].startswith("[600/600 updates 100.0%]")
    # The newest exact metric stays shown between evaluations.
    assert "value MAE 0.400" in lines[-1] and "loss 0.0164" in lines[-1] and "10.0 updates/s" in lines[-1]


def test_one_line_in_place_on_a_terminal():
    out = Terminal()
    progress = Progress(600, "updates", stream=out)
    for record in records(30):
        progress.update(record["updates"], record)
    progress.close()
    text = out.getvalue()
    assert text.count("\n") <= 1 and text.count("\r") >= 30
    assert "value MAE 0.700" in text.rsplit("\r", 1)[-1]


def test_an_evaluator_suite_is_the_exact_metric_without_built_in_labels():
    out = io.StringIO()
    progress = Progress(10, "updates", stream=out)
    progress.update(10, {"updates": 10, "loss": 0.5, "eval/chomp-4x5-states/value_mae": 0.25})
    progress.close()
    assert "chomp-4x5-states value MAE 0.250" in out.getvalue()


def test_the_progress_line_shows_a_suites_whole_set_not_one_of_its_groups():
    from launch.progress import newest_exact_metric

    record = {"eval/connect4-5x4-eps-optimal/easy-endgame/value_mae": 0.05,
              "eval/connect4-5x4-eps-optimal/value_mae": 0.3, "eval/connect4-5x4-uniform/value_mae": 0.5}
    assert newest_exact_metric(record) == ("connect4-5x4-eps-optimal value MAE", 0.3)
