"""Logging: a structlog logger on stderr, human-readable on a terminal and JSON lines otherwise.

The logger is a value handed to whoever logs; nothing here touches structlog's global configuration.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import orjson
import structlog

LEVELS = ("debug", "info", "warning", "error")


def _json(obj: Any, **_: Any) -> str:
    return orjson.dumps(obj, default=str).decode()


def make_logger(level: str = "warning", stream: TextIO | None = None) -> Any:
    stream = stream or sys.stderr
    renderer: Any
    if stream.isatty():
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    else:
        renderer = structlog.processors.JSONRenderer(serializer=_json)
    return structlog.wrap_logger(
        structlog.PrintLogger(stream),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        cache_logger_on_first_use=False,
    )
