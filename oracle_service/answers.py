"""The oracle service's answer to one item of a batch (``oracle_service.service``)."""

from __future__ import annotations

from typing import Any, NamedTuple


class Answer(NamedTuple):
    """One item's answer: ``value`` if ``error`` is None, else ``error`` says what was wrong."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
