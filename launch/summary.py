"""The few lines a person reads when a training run ends: what ran and for how long, its
updates and rows, the headline exact metrics from the untrained network to the final
weights, where the checkpoint is, and the commands to evaluate, play or resume it. The
full record stays where it is (``metrics.jsonl``, W&B); ``python -m launch ... --json``
prints the final record instead."""

from __future__ import annotations

import shlex
from pathlib import Path

import storage
from evaluation.metric_keys import SUMMARY_KINDS
from launch.config import TrainConfig


def headline(record: dict) -> dict[str, float]:
    """``{key: value}`` of the headline metrics in ``record``, those of ``SUMMARY_KINDS``
    (``eval/<suite>/<metric>``; the built-in labels of tic-tac-toe are ``eval/<metric>``):
    suite-level keys only (the per-bucket ones, ``eval/<suite>/<bucket>/<metric>``, stay
    in metrics.jsonl)."""
    out = {}
    for key, value in record.items():
        parts = key.split("/")
        if parts[0] == "eval" and parts[-1] in SUMMARY_KINDS and len(parts) in (2, 3) \
                and isinstance(value, (int, float)):
            out[key] = float(value)
    return out


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def end_of_run(config: TrainConfig, run_dir: Path, records: list[dict], last: dict) -> str:
    """The summary of a run that ended with the record ``last``, from its ``records``
    (``metrics.jsonl``, oldest first)."""
    lines = [f"{config.algo} on {config.game} (preset {config.preset}), run directory {run_dir}"]
    training, evals = last.get("train_seconds", 0.0), last.get("eval_seconds", 0.0)
    lines.append(f"  ended after {last.get('end', '?')}: {_seconds(training)} collecting and training, "
                 f"{_seconds(evals)} evaluating")
    updates = last.get("updates", 0)
    rate = f", {updates / training:,.1f} updates/s" if training else ""
    lines.append(f"  {updates:,} updates, {last.get('rows', 0):,} rows, {last.get('games', 0):,} games{rate}")
    if last.get("no_update"):
        lines.append(f"  no update: {last['no_update']}")
    for line in last.get("evaluation_skipped", []):  # a wall clock's evaluations left out
        lines.append(f"  evaluation left out {line}")
    first = next((headline(r) for r in records if headline(r)), {})
    newest: dict[str, float] = {}
    for record in records:  # the last value of each metric
        newest.update(headline(record))
    if newest:
        by_suite: dict[str, list[str]] = {}
        for key in sorted(newest, key=lambda k: (k.rsplit("/", 1)[0], SUMMARY_KINDS.index(k.rsplit("/", 1)[1]))):
            suite, metric = key.rsplit("/", 1)
            start = f"{first[key]:.3f} -> " if key in first and len(records) > 1 else ""
            by_suite.setdefault(suite.removeprefix("eval").strip("/") or "exact values", []).append(
                f"{metric} {start}{newest[key]:.3f}")
        width = max(len(s) for s in by_suite)
        lines.append("  exact metrics, untrained -> final:")
        lines += [f"    {suite:<{width}}  {', '.join(parts)}" for suite, parts in by_suite.items()]
    checkpoint = last.get("checkpoint")
    if checkpoint:
        quoted, game = shlex.quote(str(checkpoint)), shlex.quote(config.game)
        lines.append(f"  checkpoint: {checkpoint}")
        lines.append(f"  evaluate: python -m launch evaluate --checkpoint {quoted} --game {game}")
        lines.append(f"  play:     python -m launch play --checkpoint {quoted} --game {game}")
    lines.append(f"  resume:   python -m launch --resume {shlex.quote(str(run_dir))} --minutes 10")
    lines.append(f"  every record: {storage.join(run_dir, 'metrics.jsonl')}")
    return "\n".join(lines)
