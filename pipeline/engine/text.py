"""Text written out as bytes: what a name not in UTF-8 came from, and half of a surrogate pair as its JSON escape.

Two kinds of ``str`` hold characters UTF-8 cannot write: a file name or argument that was not UTF-8 (Python reads
each such byte as a surrogate escape, U+DC80..U+DCFF) and a JSON string with half of an emoji's surrogate pair
(``"\\ud83d"``: valid JSON, which a JavaScript writer leaves where it cut a string). ``SURROGATES`` is the codec
error handler for both: the byte again for the first, the six characters ``\\ud83d`` for the second.
"""

from __future__ import annotations

import codecs

SURROGATES = "replay.surrogates"  # str.encode("utf-8", SURROGATES)


def _handle(exc: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start:exc.end]:
        point = ord(ch)
        if not 0xD800 <= point <= 0xDFFF:
            raise exc
        out += bytes([point - 0xDC00]) if 0xDC80 <= point <= 0xDCFF else b"\\u%04x" % point
    return bytes(out), exc.end


codecs.register_error(SURROGATES, _handle)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8, with ``SURROGATES``."""
    return text.encode("utf-8", SURROGATES)
