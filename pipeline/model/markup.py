"""Text put into a document a person or a parser opens (JUnit XML, HTML, Markdown): the characters the
format forbids, or that a terminal or a reader would act on, are shown as ``\\uXXXX`` instead."""

from __future__ import annotations

import re
from typing import Any

BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # can make text read in another order than written
# Control characters (but tab and the line breaks, newline and carriage return), noncharacters and bidi overrides:
# an HTML parser errs on them, a Markdown file with them is no text file, a terminal obeys them, and XML 1.0 allows
# none of the controls anywhere, even escaped (the form feed neither: HTML's inline SVG timeline is XML too).
_NOT_SHOWN = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff{BIDI_CONTROLS}]")


# Tabs and line breaks (newline, carriage return, and Unicode's line and paragraph separators): whitespace that a table
# row of text or Markdown cannot hold, each shown there as a space (``breaks_as_spaces``). The other line breaks are control
# characters (VT, FF, NEL, ...): shown as \uXXXX, as every other one.
IN_LINE_SPACES = "\t\n\r\u2028\u2029"
_ONE_LINE = str.maketrans(dict.fromkeys(IN_LINE_SPACES, " "))


def breaks_as_spaces(text: str) -> str:
    """``text`` on one line, for a text or Markdown table (or line): each tab and line break (``IN_LINE_SPACES``) a
    space, nothing else changed."""
    return text.translate(_ONE_LINE)


def _code(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def xml_text(value: Any) -> str:
    """A string XML can carry, shown as the other formats show it: characters XML forbids, C1 controls and bidi
    overrides become \\uXXXX (escape the rest as XML does)."""
    return _NOT_SHOWN.sub(_code, "" if value is None else str(value))


def shown_text(text: str) -> str:
    """``text`` for an HTML or Markdown page, as ``xml_text`` shows it: control characters (but tab and the line
    breaks) and bidi overrides become \\uXXXX."""
    return text if text.isascii() and text.isprintable() else _NOT_SHOWN.sub(_code, text)
