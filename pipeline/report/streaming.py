"""Renderers that build a report as the runs come (text, json): the protocol, and rendering a list of runs with one;
``pieces``, for those that write a page a run at a time (html, markdown)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, AnyStr, Protocol


class Streamed(Protocol):
    def add(self, summary: dict[str, Any]) -> None:
        """Take the next run's summary (render what can be rendered now)."""

    def chunks(self, agg: dict[str, Any], title: str) -> Iterator[bytes]:
        """The whole report, a piece at a time, once every run was added."""

    def close(self) -> None:
        """Let go of what was spooled."""


def render_through(streamed: Streamed, summaries: Iterable[dict[str, Any]], agg: dict[str, Any],
                   title: str) -> Iterator[bytes]:
    """The report over ``summaries`` rendered by ``streamed``."""
    try:
        for summary in summaries:
            streamed.add(summary)
        yield from streamed.chunks(agg, title)
    finally:
        streamed.close()


def joined(parts: Iterable[AnyStr], size: int, empty: AnyStr) -> Iterator[AnyStr]:
    """``parts`` (texts, or bytes) joined into pieces of about ``size``: a write each, not one per row or run."""
    held: list[AnyStr] = []
    length = 0
    for part in parts:
        held.append(part)
        length += len(part)
        if length >= size:
            yield empty.join(held)
            held, length = [], 0
    if held:
        yield empty.join(held)


def pieces(texts: Iterable[str], size: int = 1 << 18) -> Iterator[bytes]:
    """``texts`` joined into pieces of about ``size`` characters, encoded (``joined``)."""
    for text in joined(texts, size, ""):
        yield text.encode("utf-8")
