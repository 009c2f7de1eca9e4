"""JSON Pointers (RFC 6901) over incidents: parse, format, resolve, and expand ``*`` (one level, any key or index)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

WILDCARD = "*"
MISSING = object()  # what ``resolve`` returns for a pointer that names nothing


class PointerSyntaxError(ValueError):
    """The text is not a JSON Pointer (it must be empty or start with ``/``; ``~`` only as ``~0``/``~1``)."""


def parse(text: str) -> list[str]:
    """``"/events/0/args"`` -> ``["events", "0", "args"]``; ``""`` -> ``[]`` (the whole document)."""
    if text == "":
        return []
    if not text.startswith("/"):
        raise PointerSyntaxError(f"a JSON Pointer starts with '/': {text!r}")
    tokens = []
    for raw in text[1:].split("/"):
        rest = raw.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise PointerSyntaxError(f"'~' must be written ~0 and '/' inside a name ~1: {text!r}")
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tokens


def format_pointer(tokens: list[str] | tuple[str, ...]) -> str:
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _index(container: list[Any], token: str) -> int | None:
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return None
    i = int(token)
    return i if i < len(container) else None


def resolve(document: Any, tokens: list[str] | tuple[str, ...]) -> Any:
    """The value ``tokens`` name in ``document``, or ``MISSING``."""
    current = document
    for token in tokens:
        if isinstance(current, dict):
            if token not in current:
                return MISSING
            current = current[token]
        elif isinstance(current, list):
            i = _index(current, token)
            if i is None:
                return MISSING
            current = current[i]
        else:
            return MISSING
    return current


def expand(document: Any, tokens: list[str]) -> Iterator[tuple[str, ...]]:
    """Every concrete path that ``tokens`` (with ``*`` matching one level) names in ``document``."""

    def walk(node: Any, k: int, done: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if k == len(tokens):
            yield done
            return
        token = tokens[k]
        if token == WILDCARD:
            if isinstance(node, dict):
                for key in list(node):
                    yield from walk(node[key], k + 1, (*done, key))
            elif isinstance(node, list):
                for i, item in enumerate(node):
                    yield from walk(item, k + 1, (*done, str(i)))
            return
        child = resolve(node, [token])
        if child is not MISSING:
            yield from walk(child, k + 1, (*done, token))

    yield from walk(document, 0, ())


def remove(document: Any, tokens: tuple[str, ...]) -> None:
    """Delete the member or array item ``tokens`` names (it must exist)."""
    parent = resolve(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        del parent[last]
    elif isinstance(parent, list):
        del parent[int(last)]
    else:  # pragma: no cover - callers only remove paths ``expand`` found
        raise KeyError(format_pointer(tokens))
