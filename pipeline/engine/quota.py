"""Quota: how many diagnostics of one code in one input are printed (``--max-errors``); the rest are counted.

A binary file, or a journal broken the same way on every line, would otherwise print one error (or warning) per
line. A diagnostic is a record with a ``code``; a heal notice also names its ``rule`` (``check_order``: a timestamp
going back), and is counted by both (a notice of a plugin's rule may have no code: its rule alone). Past ``limit`` diagnostics of one (source, code), the rest are only counted, and ``left_out`` gives one summary
record per such (source, code) at the end: how many were left out and between which lines. ``limit`` 0 admits all.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.errors import diagnostic

DEFAULT_LIMIT = 20  # diagnostics printed per (source, code) before the rest are summed up

_SUMMARY_CODE = {"error": "E_ERRORS_SUPPRESSED", "warning": "E_NOTICES_SUPPRESSED"}
_COUNTED = ("They are most likely one cause: fix the ones shown. `replay --max-errors 0 ...` prints every one; "
            "`replay validate` counts them per input.")


class Quota:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._seen: dict[tuple[Any, Any, Any], int] = {}  # by (source, code, rule): a heal notice's rule beside its code
        self._left_out: dict[tuple[Any, Any, Any], dict[str, Any]] = {}

    def admit(self, record: dict[str, Any]) -> bool:
        """Is ``record`` (a diagnostic: ``source``, ``code``, ``line``, ``offset``; a heal notice names its ``rule``
        too) within its quota? If not, it is counted among those left out. A record that is no
        diagnostic (``is_diagnostic``: an event a config logs, a repair) is always admitted, never counted."""
        if not is_diagnostic(record):
            return True
        notice = record.get("action") == REPORTED  # (an error's rule, a plugin's, does not split its code's count)
        key = (record.get("source"), record.get("code"), record.get("rule") if notice else None)
        seen = self._seen[key] = self._seen.get(key, 0) + 1
        if not self.limit or seen <= self.limit:
            return True
        where = {"line": record.get("line"), "offset": record.get("offset")}
        held = self._left_out.get(key)
        if held is None:
            self._left_out[key] = {"count": 1, "first": where, "last": where}
        else:
            held["count"] += 1
            held["last"] = where
        return False

    def left_out(self, kind: str = "error") -> list[dict[str, Any]]:
        """One summary diagnostic per (source, code) with diagnostics left out (``kind``: "error" or "warning", what
        they were), and the count starts again; call at the end of the run."""
        left_out, self._left_out = self._left_out, {}
        summaries = []
        for (source, code, rule), held in left_out.items():
            first, last, count = held["first"], held["last"], held["count"]
            span = ""
            if first["line"] is not None:
                span = f" (lines {first['line']} to {last['line']})" if count > 1 else f" (line {first['line']})"
            where = f" in {source!r}" if source is not None else ""
            summaries.append(diagnostic(
                _SUMMARY_CODE[kind],
                f"{count} more {f'{code} ({rule})' if code and rule else code or rule} {kind}{'s' * (count > 1)}{where} were left out{span}; the first "
                f"{self.limit} are above",
                source=source, suppressedCode=code, suppressedRule=rule, suppressed=count, shown=self.limit,
                firstLine=first["line"], firstOffset=first["offset"], lastLine=last["line"], lastOffset=last["offset"],
                **({"howToFix": _COUNTED} if kind == "error" else {}),  # (a warning's: the catalogue's)
            ))
        return summaries


REPORTED = "reported"  # a heal notice's action (``repairs.ACTIONS``): it saw, and changed nothing


def is_diagnostic(record: dict[str, Any]) -> bool:
    """Does ``record`` count against a quota: a diagnostic (a ``code``) or a heal notice (a ``rule``, the action
    "reported"), not an event a config logs, nor a repair (a ``rule`` too: the heal log a config logs is no warning)?"""
    return "code" in record or ("rule" in record and record.get("action") == REPORTED)
