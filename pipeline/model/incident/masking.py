"""What an import's refusal may show of the export it read: a name as written, or, where redaction would hide it, its kind.

A refusal goes to stderr, and stderr to CI logs: an unknown field named ``zeb@q.example``, an event type holding an
API key, a duplicate key ``"order-1042"`` are shown as ``<email>``, ``<api key>``, ``<identifier>`` (what a detector
found, or data by its shape: ``field_names.data_key``), in the message, the path and ``received`` alike. The position
(line, column, the path's other steps) and the advice stay, so the error is still one to act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident.detectors import scan
from replay.pipeline.model.incident.field_names import data_key
from replay.pipeline.model.validation import shown

_LARGEST_SHOWN = 10 ** 8  # (a number of 9 digits or more is aliased as an identifier or a card: ``Redactor._number``)


def masked(value: Any) -> Any:
    """``value`` (export content) as an error may show it: a string redaction would keep as a name as it is (cut as
    ``validation.shown`` cuts), else ``<kind>``; a small number as it is; anything else its JSON type."""
    if isinstance(value, str):
        hits = scan(value)
        if hits:
            return f"<{hits[0][0].replace('_', ' ')}>"
        if data_key(value):
            return "<text>" if any(c.isspace() for c in value.strip()) else "<identifier>"
        return shown(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= _LARGEST_SHOWN:
        return "<number>"
    return shown(value)


def masked_list(values: list[Any]) -> str:
    return ", ".join(str(masked(v)) for v in values)


# a JSONPath as ``exactjson`` writes one: ``.name`` (an identifier), ``[3]``, ``["any key"]``
_STEP = re.compile(r'\.([^\W\d]\w*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def masked_path(path: str) -> str:
    """``path`` (``$.input["zeb@q.example"]``) with each member name as ``masked`` shows it (``$.input.<email>``)."""
    if not path.startswith("$"):
        return path
    out, at = ["$"], 1
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:  # (no path exactjson writes: shown no further)
            return "".join(out) + ".<…>"
        name, index, quoted = step.groups()
        if index is not None:
            out.append(f"[{index}]")
        else:
            key = name if name is not None else json.loads(quoted)
            out.append(member(key) if masked(key) != key else path[step.start():step.end()])
        at = step.end()
    return "".join(out)


def member(key: str) -> str:
    """The step of a path to member ``key``: ``.key``, or ``.<email>`` where ``masked`` hides it."""
    return f".{masked(key)}"


def masked_steps(steps: list[str | int], root: str = "$") -> str:
    """The JSON path of ``steps`` under ``root`` as a refusal shows it: a member name redaction would hide as its kind
    (``member``), an index as ``[k]``."""
    return root + "".join(f"[{t}]" if isinstance(t, int) else member(t) for t in steps)


def masked_error(error: ReplayError) -> ReplayError:
    """``error`` (raised by a general reader, ``errors.refuse_duplicate_key``) with its path's names masked in its
    path and its message; itself when the path shows nothing to hide."""
    body = error.body
    path = body.get("path")
    if not isinstance(path, str) or masked_path(path) == path:
        return error
    safe = masked_path(path)
    message = body["message"].replace(path.removeprefix("$").removeprefix("."), safe.removeprefix("$").removeprefix("."))
    fields = {k: v for k, v in body.items() if k not in ("code", "message")}
    return ReplayError(body["code"], message, exit_code=error.exit_code, **{**fields, "path": safe})
