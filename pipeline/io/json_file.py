"""A JSON document a person (or ``replay script``) wrote to a file: an override sidecar, a replay script, heal rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError, refuse_duplicate_key, utf8_text


def read_json_file(file: str | Path, what: str, code: str, *, missing_fix: str | None = None,
                   not_json: str = "not valid JSON: ", **fields: Any) -> Any:
    """The JSON document at ``file`` (``what`` names it in errors): a file that is not there is E_INPUT_PATH_NOT_FOUND,
    one that cannot be read (a folder) E_INPUT_UNREADABLE; text that is not UTF-8 or not JSON, or writes a key twice
    in one object, is ``code`` at its line, byte column and line offset (``fields``: what else such an error says;
    ``not_json``: what its message calls text that does not parse, before the parser's reason). A byte order mark is
    skipped; positions stay file positions."""
    source = str(file)
    try:
        data = Path(file).read_bytes()
    except FileNotFoundError as exc:
        extra: dict[str, Any] = {"howToFix": missing_fix} if missing_fix else {}
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"{what} {source!r} does not exist", path=source, **extra) from exc
    except OSError as exc:
        raise ReplayError("E_INPUT_UNREADABLE", f"{what} {source!r} could not be read: {exc.strerror or exc}",
                          path=source) from exc
    data, skipped = exactjson.skip_bom(data)
    try:
        document = exactjson.loads(data)
    except orjson.JSONDecodeError as exc:
        utf8_text(data, code, source, skipped, source=source, **fields)  # (orjson: line 1, column 1)
        raise ReplayError(code, f"{source}: {not_json}{exc.msg}", source=source, **fields,
                          **exactjson.error_position(data, exc, skipped)) from exc
    refuse_duplicate_key(data, document, code, source, skipped, rooted=True, source=source)
    return document
