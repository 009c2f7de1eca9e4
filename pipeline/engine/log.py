"""Logging: a structlog logger on stderr, human-readable on a terminal and JSON lines otherwise.

The logger is a value handed to whoever logs; nothing here touches structlog's global configuration.
structlog (and the asyncio and logging modules it pulls in) is imported only when a record passes the
level filter, so a quiet run (the default level) does not pay for it at start-up.
"""

from __future__ import annotations

import sys
from contextlib import suppress
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
_NUMBERS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "exception": 40, "critical": 50}


def _json(obj: Any, **_: Any) -> str:
    from replay.pipeline.engine.errors import printable_json

    return printable_json(obj, default=str).decode()


def _structlog_logger(level: str, stream: TextIO) -> Any:
    import structlog

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
            structlog.processors.format_exc_info,  # a traceback, when asked for, stays inside one record
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_NUMBERS[level]),
        cache_logger_on_first_use=False,
    )


class Logger:
    """``log.info("event", key=value)``: filtered by level here, rendered by structlog when it passes."""

    def __init__(self, level: str, stream: TextIO, context: dict[str, Any] | None = None) -> None:
        if level not in LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LEVELS)}")
        self.level = level
        self.threshold = _NUMBERS[level]
        self.stream = stream
        self.context = context or {}
        self._real: Any = None

    def bind(self, **context: Any) -> Logger:
        return Logger(self.level, self.stream, {**self.context, **context})


    def _log(self, level: str, event: str, fields: dict[str, Any]) -> None:
        if _NUMBERS[level] < self.threshold:
            return
        if self.stream is None:
            return  # started with stderr closed (`2>&-`): nowhere to log
        if self._real is None:
            self._real = _structlog_logger(self.level, self.stream)
            if self.context:
                self._real = self._real.bind(**self.context)
        with suppress(OSError, ValueError):  # stderr full or gone: a log line is never worth failing the run over
            getattr(self._real, level)(event, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log("warning", event, _advised(fields))

    def error(self, event: str, **fields: Any) -> None:
        self._log("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        fields.setdefault("exc_info", True)
        self._log("error", event, fields)


def _advised(fields: dict[str, Any]) -> dict[str, Any]:
    """A warning's ``fields`` with the catalogue's ``howToFix`` for its ``code`` when it gives none of its own (an
    error's report gets it so from ``errors.diagnostic``): every warning of a known code says what to do about it."""
    code = fields.get("code")
    if code.__class__ is not str or "howToFix" in fields:
        return fields
    from replay.pipeline.engine.errors import CATALOGUE, how_to_fix

    return {**fields, "howToFix": how_to_fix(code)} if code in CATALOGUE else fields


def make_logger(level: str = "warning", stream: TextIO | None = None) -> Logger:
    return Logger(level, stream or sys.stderr)  # sys.stderr is None when replay started with fd 2 closed


# The logger of the command being run (set by the CLI: its --log-level), for what is said below the stages (a folder's
# walk), and for the CLI's handlers that run after click's context has closed.
SESSION: dict[str, Logger] = {}


def session_logger() -> Logger:
    """A logger at the command's level (``SESSION``; else the default one) on this moment's stderr (a command's logger
    kept after it ended, in a process that runs more than one, may hold a stream closed since)."""
    log = SESSION.get("log")
    return make_logger(log.level if log is not None else "warning")


def write_stderr(data: bytes) -> None:
    """Write (and flush) ``data`` on stderr, after what Python's text layer holds; stderr closed (``2>&-``), full or
    gone says nothing and fails nothing: a run's stdout, outputs and exit code never depend on its diagnostics being
    seen (the errors still count)."""
    with suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
        sys.stderr.buffer.write(data)
        sys.stderr.buffer.flush()


def log_record(log: Any, level: str, event: str, record: dict[str, Any]) -> None:
    """One record (a stage's notice, say) as one log line: its fields, but for those the log line sets itself."""
    getattr(log, level)(event, **{k: v for k, v in record.items() if k not in ("event", "level", "timestamp")})


def log_warnings(log: Logger) -> None:
    """Python warnings (a library's: distributed, fsspec, ...) become ``python.warning`` records of ``log``, so that
    stderr keeps to one record per line (a JSON object when it is no terminal) instead of the warning's own text."""
    import warnings

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        log.warning("python.warning", code="E_PYTHON_WARNING", category=category.__name__, message=str(message), where=f"{filename}:{lineno}")

    warnings.showwarning = show


def log_unraisable() -> None:
    """An exception Python could not raise (in a ``__del__``, at exit) becomes a ``python.unraisable`` record of the
    command's logger (``session_logger``), as ``log_warnings`` makes a warning one, instead of Python's own text: at
    debug what an interrupt leaves (an event loop a second Ctrl-C stopped half made: an attribute it never set; the
    interrupt itself), else a warning (E_PYTHON_UNRAISABLE)."""

    def said(args: Any) -> None:
        try:
            what = None if args.object is None else repr(args.object)[:200]
        except Exception:  # (an object whose repr fails too)
            what = f"<{type(args.object).__name__}>"
        expected = isinstance(args.exc_value, KeyboardInterrupt) or (  # (``<function BaseEventLoop.__del__ ...>``)
            isinstance(args.exc_value, AttributeError) and "EventLoop" in (what or ""))
        with suppress(Exception):  # (at exit, with the interpreter half gone: nothing more to say it with)
            log = session_logger()
            (log.debug if expected else log.warning)(
                "python.unraisable", code="E_PYTHON_UNRAISABLE", error=f"{type(args.exc_value).__name__}: {args.exc_value}",
                message=args.err_msg or "Exception ignored", object=what)

    sys.unraisablehook = said
