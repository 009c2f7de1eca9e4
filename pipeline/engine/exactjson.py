"""Exact JSON: orjson on the fast path, and exact values where orjson would round.

orjson reads an integer that does not fit in 64 bits as a float (``123456789012345678901234567890``
becomes ``1.2345678901234568e+29``) and refuses to write one; it reads a number with more significant
digits than a double holds, or one below a double's range, as the nearest double
(``3.14159265358979323846`` is written back as ``3.141592653589793``, ``1.5e-400`` as ``0.0``).
Everything replay parses and may write again goes through ``loads`` / ``exact_lines`` / ``dumps`` here:

- ``loads``: orjson decides whether the text is valid JSON (so what is accepted and every error
  message stay orjson's); only a text where such a number can hide (16 or more digits and dots in a row,
  or an exponent of three digits below zero) is decoded again with the standard library, which keeps
  integers exact and hands each float's text over: a float whose double is not the number written is
  an ``ExactNumber`` (a float that remembers its text). So is a number too large for a double
  (``1e400``), which orjson refuses, and an integer of more digits than Python turns into an int (4300). A string with half of a surrogate pair (``"\\ud83d"``, which a
  JavaScript writer leaves where it cut a string inside an emoji) is valid JSON orjson refuses too: the
  standard library reads it, once orjson has found the rest valid.
- ``dumps``: orjson; a value holding an integer beyond 64 bits or an ``ExactNumber`` is written with
  it spliced in as its exact digits (``orjson.Fragment``), so the output is orjson's format either way. A
  value nested deeper than orjson writes (255 levels; it reads 1024), or holding such half a pair, is written
  by the standard library (the half as its ``\\ud83d`` escape again).
- ``duplicate_keys``: the JSON paths of keys that appear twice in one object of a line (both parsers
  keep the last value; a writer that re-serialises such an event loses the others).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # the integers JSON writers and protocols hold in 64 bits
UINT64_MAX = 2**64 - 1
# orjson refuses nesting deeper than this (the outermost value is level 1); the standard library needs the
# interpreter's recursion limit above it to decode (and we to walk) what orjson accepted.
MAX_DEPTH = 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@contextmanager
def deep() -> Iterator[None]:
    """Within it, the interpreter's recursion limit leaves room to decode or walk JSON ``MAX_DEPTH`` levels deep."""
    limit = sys.getrecursionlimit()
    if limit < MAX_DEPTH * 4:
        sys.setrecursionlimit(MAX_DEPTH * 4)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def too_deep(exc: orjson.JSONDecodeError) -> bool:
    """Did orjson refuse the text for nesting deeper than ``MAX_DEPTH`` (so it may well be valid JSON)?"""
    return exc.msg == "depth limit exceeded"


END_OF_DATA = "unexpected end of data"  # orjson's words, and Python's for a UTF-8 character cut short


def cut_off(data: bytes, exc: orjson.JSONDecodeError) -> bool:
    """Did orjson refuse ``data`` only because it ends too early: the start of a JSON text, cut off (a write that
    stopped), not a text with a wrong character in it (a control character in a string, a stray byte)? A journal's last
    line with no newline is torn only when it is. Wrong whatever might have followed are: a complete value with more
    after it, a wrong token or byte before its end (``,,``, ``NaN``, a byte that is not UTF-8), a CR-only line end
    inside it, and nesting deeper than replay reads; a UTF-8 character cut in two at its very end is only where the
    write stopped."""
    if exc.msg == END_OF_DATA:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:  # (orjson checks UTF-8 first): the last character cut short, the rest a start?
        if bad.reason == END_OF_DATA and bad.end == len(data):
            try:
                orjson.loads(data[:bad.start])
            except orjson.JSONDecodeError as before:
                return before.msg == END_OF_DATA
    return False


def byte_column(raw: bytes, char_pos: int) -> int:
    """1-based byte column of orjson's character position in ``raw``."""
    if raw.isascii():
        return char_pos + 1
    return len(raw.decode("utf-8", "replace")[:char_pos].encode("utf-8")) + 1


def line_byte_column(data: bytes | str, line: int, char_column: int) -> int:
    """The 1-based byte column of a parser's 1-based (line, character column) in ``data`` (orjson, tomllib and json
    count characters): an error's ``column`` counts bytes, as its ``offset`` does (ERROR_CODES.md)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    start = line_start(raw, line)
    end = raw.find(b"\n", start)
    return byte_column(raw[start:] if end < 0 else raw[start:end], char_column - 1)


def line_start(raw: bytes, line: int) -> int:
    """The offset in ``raw`` of the first byte of its 1-based ``line`` (0 when ``raw`` has fewer lines)."""
    start = 0
    for _ in range(line - 1):
        start = raw.find(b"\n", start) + 1
        if start == 0:
            break
    return start


def error_column(data: bytes | str, exc: orjson.JSONDecodeError) -> int:
    """The 1-based byte column of the place in ``data`` where orjson stopped (its ``colno`` counts characters)."""
    return line_byte_column(data, exc.lineno, exc.colno)


UTF8_BOM = b"\xef\xbb\xbf"


def skip_bom(data: bytes) -> tuple[bytes, int]:
    """``data`` without the UTF-8 byte order mark some Windows tools start a file with (it is not JSON), and how
    many bytes went: the offset of what is left, for positions that stay positions in the file."""
    if data.startswith(UTF8_BOM):
        return data[len(UTF8_BOM):], len(UTF8_BOM)
    return data, 0


def position(data: bytes | str, line: int, char_column: int, skipped: int = 0) -> dict[str, int]:
    """An error's ``line``, (byte) ``column`` and ``offset`` (of the line's start) for a parser's 1-based (line,
    character column) in ``data``, a whole document that starts ``skipped`` bytes into its file (after a byte order
    mark, as ``read`` skips one): the offset is a position in the file, so the bad byte is at ``offset + column - 1``
    there, and line 1's column counts from after the mark, as a journal's line 1 does."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return {"line": line, "column": line_byte_column(raw, line, char_column), "offset": skipped + line_start(raw, line)}


def error_position(data: bytes | str, exc: orjson.JSONDecodeError, skipped: int = 0) -> dict[str, int]:
    """``position`` of the place in ``data`` where orjson stopped."""
    return position(data, exc.lineno, exc.colno, skipped)


def char_at(raw: bytes, char_pos: int) -> str:
    """How an error names the character at orjson's position in ``raw``: a control character as U+0000, another
    quoted; empty at the end of ``raw``."""
    text = raw.decode("utf-8", "replace")
    if char_pos >= len(text):
        return ""
    char = text[char_pos]
    return f"U+{ord(char):04X}" if char.isascii() and not char.isprintable() else repr(char)


def _exact(data: bytes | str) -> Any:
    """The value of ``data`` (already accepted by orjson) with integers and floats kept exact."""
    with deep():
        return json.loads(data, parse_float=exact_float, parse_int=_int, parse_constant=_reject_constant)


# Where orjson may round a number: an integer beyond 64 bits has at least 19 digits (-9223372036854775809),
# a decimal a double does not hold has 16 significant digits or more, a number below a double's range an exponent
# of three digits below zero. With digits and the dot -> "0", e and E -> "e", signs -> "-", everything else -> " ",
# those are plain substring searches (a regex tries a match at every digit and costs ten times as much).
_NUMBERISH = bytes(0x30 if 0x30 <= i <= 0x39 or i == 0x2E else 0x65 if i in (0x45, 0x65) else 0x2D if i in (0x2B, 0x2D)
                   else 0x20 for i in range(256))
_SIXTEEN, _TINY = b"0" * 16, b"0e-000"  # (an exponent follows a digit)


def _may_round(data: bytes) -> bool:
    """Does ``data`` hold a number orjson would read as another than written? Only where the patterns above match
    is the number itself looked at (most long decimals, e.g. a writer's shortest form of a double, read back as
    written): a line is decoded a second time only for one that would not."""
    shape = data.translate(_NUMBERISH)
    for pattern in (_SIXTEEN, _TINY):
        at = shape.find(pattern)
        while at >= 0:
            end = shape.find(b" ", at)
            end = len(shape) if end < 0 else end
            if _rounds(data[shape.rfind(b" ", 0, at) + 1:end]):
                return True
            at = shape.find(pattern, end)
    return False


def _rounds(token: bytes) -> bool:
    """Would orjson read ``token`` (a number's text, or digits, dots and signs that look like one) as another
    number than written? An integer may be beyond 64 bits from 19 digits on; anything that is not one number (in a
    string) is taken as a yes, to be sure."""
    digits = token.lstrip(b"-")
    if digits.isdigit():
        return len(digits) >= 19
    try:
        return type(exact_float(token.decode("ascii"))) is ExactNumber
    except ValueError:
        return True


def needs_exact(data: bytes | str) -> bool:
    """Could orjson have rounded a number in ``data``?"""
    if type(data) is str:  # (text is rare here: a command's JSON argument)
        data = data.encode("utf-8", "surrogatepass")
    return _may_round(data)  # type: ignore[arg-type]


class ExactNumber(float):
    """A JSON number a double does not hold (``1e400``, ``1.5e-400``, ``3.14159265358979323846``): read as the
    nearest double (infinity, zero, ...), written as it was read."""

    text: str

    def __new__(cls, text: str) -> ExactNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __str__(self) -> str:
        """As written (``1e400``), not as the double read (``inf``): what a report, a message shows."""
        return self.text


def same_leaf(a: Any, b: Any) -> bool:
    """Are two JSON values that are no object or array the same as written? Of one JSON type (``1``, ``1.0`` and
    ``true`` are three values) and equal; a number a double does not hold (``ExactNumber``: ``1e400`` and ``2e400``
    both read as infinity) by its text."""
    return type(a) is type(b) and a == b and (type(a) is not ExactNumber or a.text == b.text)


def typed_equal(a: Any, b: Any) -> bool:
    """Equality that tells 1 from 1.0 from true, as JSON types do, and numbers a double does not hold by how they are
    written (``same_leaf``); a loop, not recursion: any depth JSON is read at."""
    return first_unequal(a, b) is None


def same_json(a: Any, b: Any) -> bool:
    """Are ``a`` and ``b`` one JSON value? As ``typed_equal``, but a number is its value, however it is written:
    ``4900`` and ``4900.0`` (which a JavaScript agent cannot even tell apart) are one number; compared exactly, a big
    integer included (``2**53 + 1`` is not the double ``2**53``), and a number is never ``true``."""
    return first_unequal(a, b, numbers_by_value=True) is None


def first_unequal(a: Any, b: Any, *, numbers_by_value: bool = False, doubles: bool = False,
                  key_order: bool = False) -> tuple[str, Any, Any] | None:
    """Where ``a`` and ``b`` are first (in ``a``'s document order) not one value, ``typed_equal``'s way or, with
    ``numbers_by_value``, ``same_json``'s (with ``key_order``, an object whose keys are written in another order
    differs too; with ``doubles`` too, two floats that read as one double are one: ``0.1`` and ``0.10000000000000001``,
    which a golden tells apart): the JSON path there and the two values; None where they are one. A loop, not
    recursion."""
    pairs: list[tuple[Any, Any, Any]] = [(a, b, None)]  # (the values, where: None or (where of the parent, key))
    while pairs:
        a, b, where = pairs.pop()
        if numbers_by_value and _is_number(a) and _is_number(b):
            one_double = doubles and isinstance(a, float) and isinstance(b, float) and float(a) == float(b)
            if not one_double and not _same_number(a, b):
                return _path(where), a, b
        elif type(a) is not type(b):
            return _path(where), a, b
        elif isinstance(a, dict):
            if (list(a) != list(b)) if key_order else (a.keys() != b.keys()):
                return _path(where), a, b
            pairs.extend((a[k], b[k], (where, k)) for k in reversed(a))  # (reversed: the first key is popped first)
        elif isinstance(a, list):
            if len(a) != len(b):
                return _path(where), a, b
            pairs.extend((a[i], b[i], (where, i)) for i in range(len(a) - 1, -1, -1))
        elif not same_leaf(a, b):
            return _path(where), a, b
    return None


def _path(where: Any) -> str:
    """The JSON path (``$.payload.a[0]``) of a place ``first_unequal`` walked to."""
    steps: list[str | int] = []
    while where is not None:
        where, key = where
        steps.append(key)
    path = "$"
    for key in reversed(steps):
        path = f"{path}[{key}]" if isinstance(key, int) else _key_path(path, key)
    return path


def written_number(line: bytes, path: str) -> str | None:
    """How the JSON text ``line`` writes the number at ``path`` (a JSON path as ``first_unequal`` names one): its
    text as written (``1e2``, ``100.0``, ``1E+2``: the value read back says ``100.0`` for each); None where ``line``
    is no JSON or has no number there."""
    try:
        with deep():
            value = json.loads(line, parse_float=_Written, parse_int=_Written, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    places: list[tuple[Any, Any]] = [(value, None)]
    while places:
        value, where = places.pop()
        if isinstance(value, dict):
            places.extend((v, (where, k)) for k, v in value.items())
        elif isinstance(value, list):
            places.extend((v, (where, i)) for i, v in enumerate(value))
        elif type(value) is _Written and _path(where) == path:
            return str(value)
    return None


class _Written(str):
    """A number's text, kept as written (``written_number``)."""


def _key_path(path: str, key: str) -> str:
    """The JSON path of ``key`` in the object at ``path``: ``$.a`` or, for a key no identifier, ``$["a b"]``."""
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _is_number(value: Any) -> bool:
    return type(value) is int or isinstance(value, float)  # (bool is an int subclass: a JSON true is no number)


def _same_number(a: int | float, b: int | float) -> bool:
    """Two numbers as the decimals written: a double by its shortest text (what it was read from), a number no double
    holds by its own text (``ExactNumber``), an integer whole."""
    if type(a) is int and type(b) is int:
        return a == b
    def written(x: int | float) -> int | str:
        return x.text if type(x) is ExactNumber else repr(x) if isinstance(x, float) else x

    return _same_decimal(written(a), written(b))


def _same_decimal(x: int | str, y: int | str) -> bool:
    """Do two numbers (an integer, or a number's text: JSON's, a double's repr) write one number? Compared exactly as
    Decimals; a text whose exponent is beyond a Decimal's (more than 18 digits: ``0e99999999999999999999``, valid JSON,
    read as a double's 0.0) by its digits and exponent (``_written_parts``)."""
    from decimal import Decimal, InvalidOperation  # here: only a number not written as its double's shortest text

    try:
        return Decimal(x) == Decimal(y)
    except InvalidOperation:
        if type(x) is int or type(y) is int:  # (an integer is no such text, unless both are zero)
            return (x if type(x) is int else y) == 0 and _written_parts(str(y if type(x) is int else x))[1] == ""
        return _written_parts(str(x)) == _written_parts(str(y))


_NUMBER_PARTS = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")


def _written_parts(text: str) -> tuple[int, str, int | str]:
    """A number's text as (sign, digits, exponent): it is ``sign * digits * 10 ** exponent``, its digits with no zero at
    either end (zero: ``(0, "", 0)``); an exponent of more digits than Python reads as an int is kept as written."""
    sign, whole, fraction, power = _NUMBER_PARTS.fullmatch(text).groups()  # type: ignore[union-attr]
    digits = whole + (fraction or "")
    significant = digits.strip("0")
    if not significant:
        return 0, "", 0
    shift = len(fraction or "") - (len(digits.lstrip("0")) - len(significant))  # (the zeros after: a higher power)
    try:
        exponent: int | str = int(power or 0) - shift
    except ValueError:  # (its sign and leading zeros dropped: "e+05…" and "e5…" are one exponent)
        magnitude = power.lstrip("+-").lstrip("0") or "0"
        exponent = f"{'-' if power.startswith('-') else ''}{magnitude}-{shift}"
    return -1 if sign == "-" else 1, significant, exponent


def exact_float(text: str) -> float:
    """A JSON float's text as read exactly: its double when that is the number written, else an ``ExactNumber``
    (also a decoder's hook for its floats: msgspec's ``float_hook``)."""
    value = float(text)
    if value in (_INF, -_INF):
        return ExactNumber(text)
    shortest = repr(value)  # (what orjson writes back: the shortest text that reads as this double)
    if shortest == text:
        return value
    return value if _same_decimal(shortest, text) else ExactNumber(text)


_INF = float("inf")


def _int(text: str) -> int | float:
    """An integer as written; one of more digits than Python turns into an int (``sys.get_int_max_str_digits``, 4300:
    the standard library refuses it, and orjson reads it as a double, infinity) is an ``ExactNumber``, as a number
    beyond a double is: read as infinity, written as it was read. (It is valid JSON: ``replay read`` passes it, and
    the screen's fast lane, which skips what it does not read, passed its run as it came.)"""
    try:
        return int(text)
    except ValueError:
        return ExactNumber(text)


def _huge(data: bytes | str, exc: orjson.JSONDecodeError) -> Any:
    """orjson refuses numbers beyond a double; they are valid JSON, so the standard library reads them. A text that is
    no JSON for another reason too gets orjson's error for that, at its place (``_past_huge_numbers``)."""
    if "infinity" not in exc.msg:
        raise exc
    try:
        with deep():
            return json.loads(data, parse_float=exact_float, parse_int=_int, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise _past_huge_numbers(data, exc) from None


_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _past_huge_numbers(data: bytes | str, exc: orjson.JSONDecodeError) -> orjson.JSONDecodeError:
    """Where ``data`` is no JSON, its numbers beyond a double (and halves of surrogate pairs) aside: orjson stops at
    the first such number, so each is swapped for a zero of the same length and the text read again, until orjson
    stops elsewhere (where the text ends early, say: a record split across lines, whose pieces ``join_split_records``
    must see as an unfinished one)."""
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError:
        return exc
    text = _SURROGATE_ESCAPE_TEXT.sub(lambda _: r"\u0020", text)  # (as _lone_surrogates reads past them)
    again = exc
    while "infinity" in again.msg:
        number = _NUMBER.match(text, again.pos)
        if number is None:
            return exc
        text = text[:number.start()] + "0".ljust(len(number.group())) + text[number.end():]
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError as later:
            again = later
        else:
            return exc  # (the standard library refused it for another reason: nesting, say)
    if again.msg == _NO_ROOM:
        return exc
    return orjson.JSONDecodeError(again.msg, exc.doc, again.pos)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``orjson.loads`` with integers beyond 64 bits kept exact; raises ``orjson.JSONDecodeError``."""
    if type(data) is not str and type(data) is not bytes:
        data = bytes(data)  # type: ignore[arg-type]
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            if exc.msg == _NO_ROOM:
                value = _with_room(data, exc)  # type: ignore[arg-type]
            elif exc.msg.endswith(_SURROGATE):
                return _lone_surrogates(data, exc)  # type: ignore[arg-type]
            else:
                return _huge(data, exc)  # type: ignore[arg-type]
        except orjson.JSONDecodeError as refused:
            raise _at_bracket(refused) from None
    if needs_exact(data):  # type: ignore[arg-type]
        return _exact(data)  # type: ignore[arg-type]
    return value


def _at_bracket(exc: orjson.JSONDecodeError) -> orjson.JSONDecodeError:
    """``exc`` as every error says it: orjson says a text nests too deep one character past the bracket that opens the
    level too many (its ``pos`` is the character after it); that bracket is the place (``offset + column - 1`` is its
    byte, ERROR_CODES.md). Any other refusal as it is."""
    if not too_deep(exc) or exc.pos < 1:
        return exc
    return orjson.JSONDecodeError(exc.msg, exc.doc, exc.pos - 1)


_NO_ROOM = "failed to allocate memory"
_SURROGATES = "surrogates not allowed"  # orjson's message for a str holding half of a pair, which it does not write
_SURROGATE = "surrogate in string"  # the end of orjson's messages for a \uD800-\uDFFF escape that is no pair
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def holds_half_a_pair(data: bytes) -> bool:
    """Does ``data`` (JSON) write a ``\\uD800``-``\\uDFFF`` escape (most often, half of a pair)?"""
    return b"\\u" in data and _SURROGATE_ESCAPE.search(data) is not None


def _lone_surrogates(data: bytes | str, exc: orjson.JSONDecodeError) -> Any:
    """``data`` with a ``\\ud83d`` escape that is half of a pair (JSON's grammar takes any ``\\uXXXX``; a JavaScript
    writer cutting a string between the halves of an emoji writes one): orjson refuses it, the standard library
    reads it as that code point (a ``str`` holding it; ``dumps`` writes it back as the same escape). Whether the rest
    is JSON is orjson's say: read again with each such escape swapped for one of the same length, its error (at its
    place) is the text's."""
    pattern = _SURROGATE_ESCAPE if type(data) is bytes else _SURROGATE_ESCAPE_TEXT
    space = rb"\u0020" if type(data) is bytes else r"\u0020"  # (a function: a template would read its escape)
    swapped = pattern.sub(lambda _: space, data)  # type: ignore[arg-type, return-value]
    try:
        orjson.loads(swapped)
    except orjson.JSONDecodeError as again:
        if again.msg == _NO_ROOM:
            _with_room(swapped, again)  # (raises where the text ends early or nests too deep)
        elif "infinity" not in (again := _past_huge_numbers(swapped, again)).msg:
            # (a number beyond a double is JSON: the standard library reads it, unless the text is wrong elsewhere)
            raise orjson.JSONDecodeError(again.msg, exc.doc, again.pos) from None
    text = data if isinstance(data, str) else data.decode("utf-8")
    try:
        with deep():
            return json.loads(text, parse_float=exact_float, parse_int=_int, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise exc from None


def _with_room(data: bytes | str, exc: orjson.JSONDecodeError) -> Any:
    """orjson's reading of ``data`` when it ran out of room: it sizes its memory from the text's length, and a text
    that opens many arrays or objects and ends early (``[[[[``, a line cut off) runs out before orjson can say that
    it ends early or nests too deep. Read again with as much whitespace after it (nothing, in JSON), it says which,
    at that place in ``data``."""
    pad = (b" " if type(data) is bytes else " ") * len(data)
    try:
        return orjson.loads(data + pad)  # type: ignore[operator]
    except orjson.JSONDecodeError as again:
        if again.msg == _NO_ROOM:
            raise exc from None
        return _huge(data, orjson.JSONDecodeError(again.msg, exc.doc, min(again.pos, len(exc.doc))))


def exact_lines(raws: list[bytes], values: list[Any]) -> list[Any]:
    """``values`` (orjson's decoding of ``raws``) with the lines where orjson may have rounded a number decoded exactly."""
    if raws and _may_round(b"\n".join(raws)):
        return [_exact(raw) if _may_round(raw) else value for raw, value in zip(raws, values, strict=True)]
    return values


def loads_lines(raws: list[bytes], exact: bool = True) -> list[Any]:
    """``loads`` of each of ``raws``: orjson's reading of each, the check for a number it may have rounded made once
    over them all (``exact_lines``; not with ``exact`` False: orjson's reading as it is, for a caller that tells a
    rounded number otherwise); when orjson alone refuses one, each line by ``loads``."""
    try:
        values = list(map(orjson.loads, raws))
    except orjson.JSONDecodeError:
        return [loads(raw) for raw in raws]
    return exact_lines(raws, values) if exact else values


def _exact_first(default: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """orjson's ``default``: an ``ExactNumber`` as its text, anything else as ``default`` writes it."""

    def fallback(obj: Any) -> Any:
        if type(obj) is ExactNumber:
            return orjson.Fragment(obj.text)
        if default is None:
            raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")
        return default(obj)

    return fallback


def dumps(value: Any, default: Callable[[Any], Any] | None = None, option: int | None = None) -> bytes:
    """``orjson.dumps``; integers beyond 64 bits and ``ExactNumber``s are written as their exact digits (an
    ``ExactNumber`` never reaches ``default``: ``str`` would write ``"inf"``)."""
    try:
        return orjson.dumps(value, default if default is None else _exact_first(default), option)
    except orjson.JSONEncodeError as exc:
        message = str(exc)
        if "64-bit" not in message and "Recursion" not in message and "ExactNumber" not in message \
                and _SURROGATES not in message:
            raise

    fallback = _exact_first(default)
    with deep():
        try:
            return orjson.dumps(_fragments(value), fallback, option)
        except orjson.JSONEncodeError as exc:
            if "Recursion" not in str(exc) and _SURROGATES not in str(exc):
                raise
        # orjson writes at most 255 levels (it reads 1024), and no string holding half of a surrogate pair (``loads``
        # reads one from a lone ``\\ud83d``): the standard library writes those, each such half as that escape again
        opts = option or 0
        huge: list[str] = []
        text = json.dumps(_plain(value, huge), default=default, ensure_ascii=False, allow_nan=False,
                          sort_keys=bool(opts & orjson.OPT_SORT_KEYS),
                          indent=2 if opts & orjson.OPT_INDENT_2 else None,
                          separators=(",", ": ") if opts & orjson.OPT_INDENT_2 else (",", ":"))
        if huge:
            text = _MARKER.sub(lambda m: huge[int(m.group(1))], text)
        return text.encode("utf-8", "backslashreplace") + (b"\n" if opts & orjson.OPT_APPEND_NEWLINE else b"")


_MARKER = re.compile(r'"\\u0000(\d+)\\u0000"')  # a number's marker, as the standard library writes it


def _plain(value: Any, huge: list[str]) -> Any:
    """A copy the standard library can write: each huge number, and each float (its text as orjson writes it: ``1e-7``,
    not ``1e-07``), a marker string, put back as its text after."""
    kind = type(value)
    if kind is ExactNumber or kind is float:
        huge.append(value.text if kind is ExactNumber else orjson.dumps(value).decode())
        return f"\x00{len(huge) - 1}\x00"
    if kind is dict:
        return {k: _plain(v, huge) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_plain(v, huge) for v in value]
    return value


def _fragments(value: Any) -> Any:
    """A copy of ``value`` whose out-of-range integers are raw JSON fragments."""
    kind = type(value)
    if kind is int:
        return orjson.Fragment(str(value)) if value < INT64_MIN or value > UINT64_MAX else value
    if kind is dict:
        return {k: _fragments(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_fragments(v) for v in value]
    return value


# duplicate keys -----------------------------------------------------------------------------------

def _count_keys(value: Any) -> int:
    n = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            n += len(v)
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
    return n


_SPACED_END = re.compile(rb'"[ \t\r\n]+:')  # a key's closing quote, whitespace, then its colon
_ESCAPED_END = re.compile(rb'\\"[ \t\r\n]*:')  # one of those ends (or ``":``) with its quote escaped...
_ESCAPED_ESCAPE_END = re.compile(rb'\\\\"[ \t\r\n]*:')  # ...unless the backslash is itself escaped


def _key_ends(raw: bytes) -> int:
    """At least the number of keys written in ``raw``: every key's closing quote is followed by ``:``, or by
    whitespace then ``:``; a string value's is not (unless its text goes on with a quote and a colon), so a document
    written over lines, a newline after each value, counts no more than its keys."""
    # (whitespace right before a colon: rare, even in a pretty-printed document, where it follows the colon; one
    # regular expression finds it, its closing quote first, faster than four searches for a space, newline, ... then ``:``)
    return raw.count(b'":') + len(_SPACED_END.findall(raw))


def _escaped_ends(raw: bytes) -> int:
    """How many of the quotes ``_key_ends`` counted are escaped (``\\"`` in a string's text, say code a tool read):
    those right after exactly one backslash, which is never a key's closing quote."""
    return len(_ESCAPED_END.findall(raw)) - len(_ESCAPED_ESCAPE_END.findall(raw))


def _fewest_keys(value: Any, raw: bytes) -> int | None:
    """At most the number of keys ``value`` holds (exactly that but for keys that end with a backslash), counted in C
    in ``value`` written anew (``dumps``); None when ``raw`` is that writing, byte for byte (most lines of a log
    written compact, as Claude Code and Codex write theirs): a text written from objects holds each key once. In the
    writing every key's closing quote is followed by ``:``, and a quote inside a string is written ``\\"``, so a
    ``":`` after a backslash is no key's end (or one of a key ending with a backslash, counted out too)."""
    try:
        written = dumps(value)
    except (orjson.JSONEncodeError, TypeError, ValueError):  # (not what ``loads`` reads: count it in Python)
        return _count_keys(value)
    if written == raw:
        return None
    keys = written.count(b'":') - written.count(b'\\":')
    if b"\\u003a" in raw or b"\\u003A" in raw:
        # (a string that begins with a colon, written ``":`` anew but escaped in ``raw``, is counted out: its opening
        # quote follows ``{``, ``[``, ``,`` or a key's ``:``; one of a key that ends with one of those is counted out
        # with it: fewer, never more. Written as it is in ``raw``, its ``":`` is counted on both sides.)
        keys -= written.count(b'{":') + written.count(b'[":') + written.count(b',":') + written.count(b':":')
    return keys


def duplicate_keys(raw: bytes, value: Any = None) -> list[str]:
    """JSON paths (``$.payload.a``) of the keys written more than once in one object of ``raw``.

    ``value`` is the decoded ``raw`` when the caller has it: a line whose keys, counted in its bytes,
    are no more than the keys of its value has no duplicate, and that answers almost every line
    without a second parse.
    """
    return keys_written_twice(raw, value)[0]


def keys_written_twice(raw: bytes, value: Any = None) -> tuple[list[str], Any]:
    """``duplicate_keys`` of ``raw``, and the reading of ``raw`` they were found in (``loads_pairs``: each object its
    ``KeyPairs``, every value of a key written twice kept), None when every key is written once."""
    if value is None:
        try:
            value = loads(raw)  # (a number too large for a double too: orjson alone refuses the line)
        except orjson.JSONDecodeError:
            return [], None
    keys = _fewest_keys(value, raw)
    if keys is None:
        return [], None
    ends = _key_ends(raw)
    if ends <= keys or ends - _escaped_ends(raw) <= keys:
        return [], None
    try:
        tree = loads_pairs(raw)
    except ValueError:  # no JSON: what a stage rendered for people in place of the record (diff's text)
        return [], None
    found = sorted({path for path, _ in _repeated(tree)})
    return found, tree if found else None


def first_duplicate_key(raw: bytes) -> tuple[str, int] | None:
    """The JSON path of the first key (in the text) written again in one object of ``raw``, a whole JSON document
    that parses (orjson's ``loads`` keeps the last value), and the character position of that second key in the
    text; None when every key is written once. Slow (Python's own scanner): for a small document such as a config."""
    decoder = json.JSONDecoder(parse_constant=_reject_constant)

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Callable[[str, int], tuple[Any, int]],
                     object_hook: Any, object_pairs_hook: Any, memo: Any = None) -> tuple[KeyPairs, int]:
        ends = [s_and_end[1]]  # where each key's search starts: after the `{`, then after each value

        def scan(text: str, at: int) -> tuple[Any, int]:
            value, end = scan_once(text, at)
            ends.append(end)
            return value, end

        node, end = json.decoder.JSONObject(s_and_end, strict, scan, None, KeyPairs, memo)  # type: ignore[attr-defined]
        node.starts = [s_and_end[0].index('"', at) for at in ends[:len(node)]]
        return node, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    with deep():
        tree = decoder.decode(raw.decode("utf-8"))
    found = sorted((start, path) for path, start in _repeated(tree))
    return (found[0][1], found[0][0]) if found else None


def first_duplicate_at(data: bytes, skipped: int = 0) -> tuple[str, dict[str, int]] | None:
    """``first_duplicate_key`` with its place as an error gives it: the key's JSON path and the ``position`` (line,
    byte column, offset of the line's start) of its second writing in ``data``, a document that starts ``skipped``
    bytes into its file."""
    found = first_duplicate_key(data)
    if found is None:
        return None
    path, at = found
    text = data.decode("utf-8")
    return path, position(data, text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1, skipped)


def duplicates(data: bytes, value: Any, skipped: int = 0) -> tuple[list[str], tuple[str, dict[str, int]] | None]:
    """The keys ``data`` (``value`` read from it) writes twice in one object (``duplicate_keys``), and the first of them
    in the text where an error gives it (``first_duplicate_at``, asked only when there is one: it is slow); ``([],
    None)`` when every key is written once."""
    keys = duplicate_keys(data, value)
    return keys, first_duplicate_at(data, skipped) if keys else None


def _repeated(tree: Any) -> Iterator[tuple[str, int]]:
    """The JSON path of each key written again in one object of ``tree`` (``KeyPairs`` nodes), and its position in
    the text when the parse kept positions (-1 when not)."""
    stack: list[tuple[Any, str]] = [(tree, "$")]
    while stack:
        node, path = stack.pop()
        if type(node) is KeyPairs:
            seen: set[str] = set()
            for k, (key, child) in enumerate(node):
                where = _key_path(path, key)
                if key in seen:
                    yield where, node.starts[k] if node.starts else -1
                seen.add(key)
                stack.append((child, where))
        elif type(node) is list:
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node))


class KeyPairs(list):  # type: ignore[type-arg]
    """An object as its ``(key, value)`` pairs in the order written, a key written twice kept twice (``loads_pairs``);
    ``starts``: where each key starts in the text, when the parse kept that (``first_duplicate_key``)."""

    starts: list[int] | tuple[()] = ()


def loads_pairs(raw: bytes) -> Any:
    """``raw`` decoded with each object as a ``KeyPairs`` (``loads`` keeps only the last value of a key written twice),
    its numbers as ``loads`` reads them; raises ``ValueError`` where ``raw`` is no JSON. Slow (Python's own scanner):
    for the few lines that write a key twice."""
    with deep():
        return json.loads(raw, object_pairs_hook=KeyPairs, parse_int=_int, parse_float=exact_float,
                          parse_constant=_reject_constant)
