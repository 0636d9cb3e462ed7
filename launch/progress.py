"""A training run's progress on the console (stderr): the budget spent, the update
rate, the loss and the newest exact metric.

On a terminal it is one line redrawn in place (tqdm). Elsewhere (a log file, CI) a
redrawn line would pile up, so it prints a plain line at most every ``interval``
seconds, and the last one when the run ends.
"""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

PLAIN_INTERVAL = 10.0  # seconds between plain lines


def newest_exact_metric(record: dict) -> tuple[str, float] | None:
    """The value MAE of ``record`` (built-in ``eval/value_mae``, else the first evaluator
    suite's ``eval/<suite>/value_mae``), as (short name, value)."""
    if "eval/value_mae" in record:
        return "value MAE", record["eval/value_mae"]
    for key in sorted(record):  # a suite's whole set (eval/<suite>/value_mae), not one of its groups
        if key.startswith("eval/") and key.endswith("/value_mae") and key.count("/") == 2:
            return f"{key.split('/')[1]} value MAE", record[key]
    return None


class Progress:
    def __init__(self, total: float, unit: str, *, updates_before: int = 0, stream=None,
                 interval: float = PLAIN_INTERVAL, clock=time.monotonic):
        """``total`` ``unit``s make the budget (updates, or seconds of a --minutes run);
        ``updates_before``: the run's updates when it started (or resumed), for the rate."""
        self.stream = sys.stderr if stream is None else stream
        self.total, self.unit, self.interval, self.clock = total, unit, interval, clock
        self.start = clock()
        self.exact: tuple[str, float] | None = None  # kept until a newer evaluation
        self.updates_before = updates_before
        self._pending: str | None = None  # a plain line not printed yet
        self._printed_at: float | None = None
        self.bar = (tqdm(total=total, unit=unit, file=self.stream, dynamic_ncols=True, leave=True,
                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}] {postfix}")
                    if self.stream.isatty() else None)

    def update(self, done: float, record: dict) -> None:
        """``done`` units of the budget spent; ``record`` the newest metrics record."""
        now = self.clock()
        self.exact = newest_exact_metric(record) or self.exact
        rate = (record.get("updates", 0) - self.updates_before) / max(now - self.start, 1e-9)
        parts = [f"{rate:,.1f} updates/s", f"loss {record.get('loss', float('nan')):.4f}",
                 f"{record.get('positions_per_s', 0):,.0f} positions/s", f"replay {record.get('replay_size', 0):,}"]
        if self.exact is not None:
            parts.append(f"{self.exact[0]} {self.exact[1]:.3f}")
        text = ", ".join(parts)
        if self.bar is not None:
            self.bar.n = min(done, self.total)
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.refresh()
            return
        share = f" {min(done / self.total, 1):5.1%}"
        self._pending = f"[{done:,.0f}/{self.total:,.0f} {self.unit}{share}] {text}"
        if self._printed_at is None or now - self._printed_at >= self.interval:
            self._print_pending(now)

    def _print_pending(self, now: float) -> None:
        self.stream.write(self._pending + "\n")
        self.stream.flush()
        self._pending, self._printed_at = None, now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self._pending is not None:
            self._print_pending(self.clock())
