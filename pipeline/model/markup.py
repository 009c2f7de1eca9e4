"""Text put into a document a parser opens (JUnit XML): the characters the format forbids are shown as
``\\uXXXX`` instead."""

from __future__ import annotations

import re
from typing import Any

# Characters XML 1.0 does not allow anywhere, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _code(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def xml_text(value: Any) -> str:
    """A string XML can carry: characters XML forbids become \\uXXXX (escape the rest as XML does)."""
    return _NOT_XML.sub(_code, "" if value is None else str(value))
