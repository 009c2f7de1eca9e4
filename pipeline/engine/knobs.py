"""Knobs the environment may turn (a test's, or a tuning): a whole number read from a variable, refused clearly."""

from __future__ import annotations

import os

from replay.pipeline.engine.errors import ReplayError


def whole_number(variable: str, unit: str, unset: str, example: int) -> int | None:
    """The whole number, at least 1, that environment variable ``variable`` gives (of ``unit``: bytes, milliseconds);
    None when it is not set. Anything else is E_USAGE_INVALID, whose advice says what ``unset`` means (the default)
    and shows ``example``."""
    raw = os.environ.get(variable)
    if raw is None:
        return None
    value = int(raw) if raw.strip().isascii() and raw.strip().isdigit() else 0  # (int() takes digits of every script)
    if value < 1:
        raise ReplayError("E_USAGE_INVALID", f"{variable} must be a whole number of {unit}, at least 1",
                          path=variable, received=raw, expected=f"a number of {unit}, at least 1",
                          howToFix=f"Unset it ({unset}) or give a number.", example=f"{variable}={example}")
    return value
