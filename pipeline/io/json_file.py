"""A JSON document a person (or ``replay script``) wrote to a file: an override sidecar, a replay script, heal rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.pipeline.engine.errors import EXIT_REFUSED, ReplayError, input_unreadable, json_document


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
    except (FileNotFoundError, ValueError) as exc:  # (ValueError: a name no file has, with a NUL or half a surrogate)
        # (not the catalogue's advice, `replay read -` for stdin: no such file is read from stdin)
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"{what} {source!r} does not exist", path=source,
                          howToFix=missing_fix or f"Check the path of the {what}.") from exc
    except OSError as exc:
        raise input_unreadable(source, exc, what=what, exit_code=EXIT_REFUSED) from exc
    return json_document(data, source, code, not_json=not_json, rooted=True, **fields)

