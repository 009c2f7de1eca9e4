"""Diff of two runs: align their records, find where the runs part, and sum up what differs.

Records are compared after leaving out the fields that always differ between two runs of the same
thing (``DEFAULT_IGNORE``: the times, ids and durations of ``varying_fields``, which goldens normalise too, sequence
numbers, an artifact's tool-call summary, which its events say again, and a mapped event's ``$origin``, its original
record);
``--ignore PATH`` adds more. A path is dot-separated keys from the record's top (``payload.model``);
``*`` stands for any one key and ``**`` for any number of keys (``**.durationMs``); lists are
transparent (a path applies to each element). Reserved records other than the run record (heal,
source) are not compared.

The two sequences are aligned on the records' remaining content (longest matching blocks, as
``difflib`` does, while that stays cheap; past a cost limit, on records unique to both runs: ``align.py``). What is
left over is classified:

- **moved**: the same record in both runs at a different place (a reordering);
- **changed**: records facing each other that differ; the category says how: ``type`` (another
  kind of record), ``tool_name``, ``tool_arguments``, ``output`` (tool results, errors, exit codes,
  verdicts, the assistant's messages, a run's response and status) or ``fields`` (anything else,
  the user's messages and the prompt among them);
- **missing** (in A, not in B) and **extra** (in B, not in A).

The first divergence is where the aligned sequences first part.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import excerpt
from replay.pipeline.model.align import Aligner
from replay.pipeline.model.dialects.base import ORIGIN_KEY
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD
from replay.pipeline.model.toolcalls import ARGUMENT_KEYS, TOOL_NAME_KEYS, named_tool
from replay.pipeline.model.varying_fields import RECORD_KEYS, nested_keys
from replay.pipeline.model.walk import kind_of, one_line

DEFAULT_IGNORE: tuple[str, ...] = (
    *RECORD_KEYS, "seq", "timings",
    "toolCalls",  # (an artifact's run record sums its tool calls up, which its journal's does not: the events compare)
    *(f"**.{key}" for key in nested_keys()),
    ORIGIN_KEY,  # (a mapped event's original record, with its own times and ids: the mapped event compares)
)
_TOOL_RECORD_KEYS = (*TOOL_NAME_KEYS, "tool_name")  # where a tool record's payload names its tool
_OTHER_RECORD_KEYS = TOOL_NAME_KEYS[:2]  # ``name`` on any other record is not a tool's (a step's, a user's)
OUTPUT_KEYS = ("result", "output", "error", "content", "text", "message", "response", "status", "stdout", "stderr",
               "exit_code", "exitCode", "verification", "verdict", "outcome")
CATEGORIES = ("type", "tool_name", "tool_arguments", "output", "fields")
CHANGES = ("changed", "moved", "missing", "extra")
_SEGMENT = re.compile(r"[^.\s]+")


class IgnorePathError(ValueError):
    """An ``--ignore`` path that cannot be read."""


def parse_ignore(path: str) -> tuple[str, ...]:
    """``payload.model`` -> ``("payload", "model")``; a leading ``$.`` is allowed."""
    text = path.removeprefix("$.")
    segments = tuple(text.split("."))
    if not text or not all(_SEGMENT.fullmatch(s) for s in segments):
        raise IgnorePathError(f"{path!r} is not a field path: use dot-separated keys, `*` for any key, `**` for any depth")
    segments = tuple(s for k, s in enumerate(segments) if s != "**" or segments[k - 1 : k] != ("**",))  # ``**.**``: ``**``
    while len(segments) > 1 and segments[-1] == "**":  # any number of keys below ``payload``: ``payload`` whole
        segments = segments[:-1]
    return ("*",) if segments == ("**",) else segments  # ``**`` alone: every field


@dataclass(frozen=True)
class Ignore:
    """The field paths left out of a comparison."""

    paths: tuple[tuple[str, ...], ...]
    written: tuple[str, ...]  # as given, for the report

    @classmethod
    def of(cls, extra: Sequence[str] = (), default: bool = True) -> Ignore:
        written = (*(DEFAULT_IGNORE if default else ()), *extra)
        return cls(tuple(parse_ignore(p) for p in written), tuple(written))

    def strip(self, value: Any) -> Any:
        """``value`` without the ignored paths (a copy where something was left out)."""
        return _strip(value, self.paths) if self.paths else value


def _here(patterns: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Patterns as they apply at this level: a leading ``**`` may also match nothing. Each once: the patterns a level
    down are suffixes of those given (as many as their segments), however many ``**`` they hold and however deep."""
    out: dict[tuple[str, ...], None] = {}
    todo = list(patterns)
    while todo:
        pattern = todo.pop()
        if pattern in out:
            continue
        out[pattern] = None
        if pattern and pattern[0] == "**" and len(pattern) > 1:
            todo.append(pattern[1:])
    return list(out)


def _strip(value: Any, patterns: Sequence[tuple[str, ...]]) -> Any:
    if isinstance(value, list):
        return [_strip(v, patterns) for v in value]
    if not isinstance(value, dict) or not patterns:
        return value
    here = _here(patterns)
    out: dict[str, Any] = {}
    for key, item in value.items():
        dropped = False
        deeper: list[tuple[str, ...]] = []
        for pattern in here:
            head = pattern[0]
            if head == "**":
                deeper.append(pattern)
            elif head == "*" or head == key:
                if len(pattern) == 1:
                    dropped = True
                    break
                deeper.append(pattern[1:])
        if not dropped:
            out[key] = _strip(item, deeper) if deeper else item
    return out


@dataclass
class Entry:
    """One record of a run as the diff sees it."""

    record: dict[str, Any]
    index: int  # 1-based among the compared records of its run
    line: int | None = None
    offset: int | None = None
    pointer: str | None = None
    kind: str = ""
    key: bytes = b""  # the record without its ignored fields, canonical JSON

    def position(self) -> dict[str, Any]:
        pos: dict[str, Any] = {"index": self.index, "kind": self.kind}
        for name in ("line", "offset", "pointer"):
            value = getattr(self, name)
            if value is not None:
                pos[name] = value
        return pos


def compared(record: Any) -> bool:
    """Does the diff look at this record? Events and run records, not other reserved records."""
    return type(record) is dict and record.get(RECORD_KEY, RUN_RECORD) == RUN_RECORD


def entry(record: dict[str, Any], index: int, ignore: Ignore, line: int | None = None, offset: int | None = None,
          pointer: str | None = None) -> Entry:
    kept = ignore.strip(record)
    return Entry(kept, index, line, offset, pointer, kind_of(record), exactjson.dumps(kept, option=orjson.OPT_SORT_KEYS))


# field-level changes --------------------------------------------------------------------------------
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if _IDENT.fullmatch(key) else f"{path}[{exactjson.dumps(key).decode()}]"


def field_changes(a: Any, b: Any, path: str = "$") -> list[dict[str, Any]]:
    """The leaves where ``a`` and ``b`` differ: ``{"path", "a"?, "b"?}`` (a side without the field has no key).
    One walk over both: objects key by key, arrays of one length item by item; leaves differ in JSON type
    (``1``, ``1.0`` and ``true`` are three values) or in value; a number a double does not hold (an
    ``exactjson.ExactNumber``: ``1e400`` and ``2e400`` both read as infinity) by its text, as the record keys compare it."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[dict[str, Any]] = []
        for key in [*a, *(k for k in b if k not in a)]:
            where = _child(path, key)
            if key not in b:
                out.append({"path": where, "a": a[key]})
            elif key not in a:
                out.append({"path": where, "b": b[key]})
            else:
                out.extend(field_changes(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [c for k, (x, y) in enumerate(zip(a, b, strict=True)) for c in field_changes(x, y, _child(path, k))]
    if exactjson.same_leaf(a, b):
        return []
    return [{"path": path, "a": a, "b": b}]


def _top(path: str) -> list[str]:
    """``$.payload.args.q`` -> ``["payload", "args", "q"]`` (bracketed parts kept as written)."""
    return [p for p in re.split(r"[.\[\]]", path[1:]) if p]


def _tool_name(entry: Entry) -> Any:
    """The tool a record names, as written: ``toolName`` / ``tool`` (``name`` / ``tool_name`` too on tool records)
    in the payload, or ``tool`` / ``tool_name`` at the top."""
    keys = _TOOL_RECORD_KEYS if "tool" in entry.kind else _OTHER_RECORD_KEYS
    return named_tool(entry.record, keys, as_written=True)


def categorize(a: Entry, b: Entry, changes: list[dict[str, Any]]) -> str:
    """How a changed pair differs, the most telling way first."""
    if a.kind != b.kind:
        return "type"
    if _tool_name(a) != _tool_name(b):
        return "tool_name"
    tops = [_top(c["path"]) for c in changes]
    named = [t[1:] if t[:1] == ["payload"] else t for t in tops]
    if any(t[:1] and t[0] in ARGUMENT_KEYS for t in named):
        return "tool_arguments"
    if "user" not in a.kind and any(t[:1] and t[0] in OUTPUT_KEYS for t in named):  # a user's message is input
        return "output"
    return "fields"


# alignment ----------------------------------------------------------------------------------------
@dataclass
class RunDiff:
    """The comparison of run A with run B."""

    a_records: int
    b_records: int
    equal: int
    differences: list[dict[str, Any]] = field(default_factory=list)
    first: dict[str, Any] | None = None

    @property
    def same(self) -> bool:
        return not self.differences

    def summary(self) -> dict[str, Any]:
        counts = {change: 0 for change in CHANGES}
        categories = {category: 0 for category in CATEGORIES}
        for d in self.differences:
            counts[d["change"]] += 1
            if d["change"] == "changed":
                categories[d["category"]] += 1
        return {"records": {"a": self.a_records, "b": self.b_records}, "equal": self.equal, **counts,
                "categories": categories}


def diff_runs(a: Sequence[Entry], b: Sequence[Entry], aligner: Aligner | None = None) -> RunDiff:
    """Align ``a`` and ``b`` on their keys and list every difference, in the order of the runs. ``aligner`` bounds the
    work of the alignments (``pipeline/model/align.py``) and calls its ``check`` now and then (an interrupt)."""
    aligner = aligner or Aligner()
    opcodes = aligner.opcodes([e.key for e in a], [e.key for e in b])
    result = RunDiff(len(a), len(b), sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag == "equal"))
    # A record only in A and the same record only in B: moved, not missing and extra.
    unmatched_b: dict[bytes, deque[int]] = {}
    for tag, _i1, _i2, j1, j2 in opcodes:
        if tag in ("insert", "replace"):
            for j in range(j1, j2):
                unmatched_b.setdefault(b[j].key, deque()).append(j)
    moved_to: dict[int, int] = {}
    moved_b: set[int] = set()
    for tag, i1, i2, _j1, _j2 in opcodes:
        if tag in ("delete", "replace"):
            for i in range(i1, i2):
                spots = unmatched_b.get(a[i].key)
                if spots:
                    j = spots.popleft()
                    moved_to[i] = j
                    moved_b.add(j)
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        aligner.tick(i2 - i1 + j2 - j1)
        if result.first is None:
            result.first = {"a": a[i1].position() if i1 < len(a) else None,
                            "b": b[j1].position() if j1 < len(b) else None}
        only_a = [i for i in range(i1, i2) if i not in moved_to]
        only_b = [j for j in range(j1, j2) if j not in moved_b]
        for i in range(i1, i2):
            if i in moved_to:
                result.differences.append({"change": "moved", "category": "moved", "a": a[i].position(),
                                           "b": b[moved_to[i]].position()})
        for i, j in _facing(a, b, only_a, only_b, aligner):
            if i is None:
                result.differences.append({"change": "extra", "category": "extra", "a": None, "b": b[j].position()})
            elif j is None:
                result.differences.append({"change": "missing", "category": "missing", "a": a[i].position(), "b": None})
            else:
                changes = field_changes(a[i].record, b[j].record)
                aligner.tick(len(changes))  # (records with many fields that differ: an interrupt gets in between)
                result.differences.append({"change": "changed", "category": categorize(a[i], b[j], changes),
                                           "a": a[i].position(), "b": b[j].position(), "fields": changes})
    if result.first is not None and result.differences:
        result.first["change"] = result.differences[0]["change"]
        result.first["category"] = result.differences[0]["category"]
    return result


def _facing(a: Sequence[Entry], b: Sequence[Entry], only_a: list[int], only_b: list[int],
            aligner: Aligner) -> list[tuple[Any, Any]]:
    """The records of a stretch where the runs part, each with what it faces in the other run (None: nothing, it is
    missing or extra): records of one kind face each other in order (their kinds aligned as the records are), and
    within what is left between those, records face each other by place (a change of type). A run_completed faced the
    tool_called in its place though the other run's run_completed came six records later."""
    kinds = aligner.opcodes([a[i].kind for i in only_a], [b[j].kind for j in only_b])
    out: list[tuple[Any, Any]] = []
    for _tag, x1, x2, y1, y2 in kinds:
        xs, ys = only_a[x1:x2], only_b[y1:y2]
        out += [(xs[k] if k < len(xs) else None, ys[k] if k < len(ys) else None) for k in range(max(len(xs), len(ys)))]
    return out


# output -------------------------------------------------------------------------------------------
def as_document(diff: RunDiff, a_name: str, b_name: str, ignore: Ignore) -> dict[str, Any]:
    """The diff as one JSON object (``replay diff --json``)."""
    return {"same": diff.same, "a": {"source": a_name, "records": diff.a_records},
            "b": {"source": b_name, "records": diff.b_records}, "ignored": list(ignore.written),
            "firstDivergence": diff.first, "summary": diff.summary(), "differences": diff.differences}


def _value(value: Any, limit: int = 60) -> str:
    text = exactjson.dumps(value, default=str).decode()
    return _cut(text, limit, text.startswith('"'))


def _cut(text: str, limit: int, quoted: bool) -> str:
    """``text`` (of a value's JSON) cut at ``limit`` characters; a string's (``quoted``) keeps its closing quote after
    the cut (``"Please create…"``), so it still reads as a string."""
    return excerpt(text, limit) + ('"' if quoted and len(text) > limit else "")


LEAD = 20  # characters shown before where two long values first differ


def _values(change: dict[str, Any], limit: int = 60) -> str:
    """``A -> B`` of a changed field, each cut at ``limit`` characters; where both are longer and alike past the cut,
    both from a little before their first difference (``…jumps until the answer is 42."`` -> ``…answer is 41."``),
    so that the difference shows."""
    if "a" not in change or "b" not in change:
        return f"{_value(change['a']) if 'a' in change else '(none)'} -> {_value(change['b']) if 'b' in change else '(none)'}"
    a, b = (exactjson.dumps(change[k], default=str).decode() for k in ("a", "b"))
    at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    qa, qb = a.startswith('"'), b.startswith('"')
    if at < limit - LEAD or max(len(a), len(b)) <= limit:
        return f"{_cut(a, limit, qa)} -> {_cut(b, limit, qb)}"
    start = at - LEAD
    return f"…{_cut(a[start:], limit, qa)} -> …{_cut(b[start:], limit, qb)}"


def _where(pos: dict[str, Any] | None) -> str:
    if pos is None:
        return "-"
    at = f"#{pos['index']}"
    if "line" in pos:
        return f"{at}:{pos['line']}"
    return f"{at}:{pos['pointer']}" if "pointer" in pos else at  # (a record of a JSON document: its path in it)


def describe(d: dict[str, Any]) -> str:
    """One difference on one line: change, category, where in A and B (record#:line), kind, fields."""
    a, b = d["a"], d["b"]
    kinds = a["kind"] if a and b and a["kind"] == b["kind"] else " -> ".join(p["kind"] for p in (a, b) if p)
    if a is None:
        kinds = "+" + b["kind"]
    elif b is None:
        kinds = "-" + a["kind"]
    fields = one_line("; ".join(  # (JSON escapes C0 controls; a C1 one, DEL or a bidi override is shown escaped too)
        f"{c['path']}: {_values(c)}" for c in d.get("fields", ())
    ))
    line = f"{d['change']:<8} {d['category']:<14} a{_where(a):<10} b{_where(b):<10} {one_line(kinds)}"  # (a kind's newline or escape, shown)
    return f"{line}  {fields}" if fields else line


def _records(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def as_text(diff: RunDiff, a_name: str, b_name: str, ignore: Ignore) -> list[str]:
    """The diff for people: the two runs, one line per difference, the verdict with a summary."""
    lines = [f"a  {one_line(a_name)}  ({_records(diff.a_records)})", f"b  {one_line(b_name)}  ({_records(diff.b_records)})"]
    lines += [describe(d) for d in diff.differences]
    s = diff.summary()
    if diff.same:
        lines.append(f"same: {_records(diff.equal)} alike (ignoring {', '.join(ignore.written) or 'nothing'})")
        return lines
    first = diff.first or {}
    lines.append(f"different: the runs part at a{_where(first.get('a'))} b{_where(first.get('b'))} "
                 f"({first.get('change')}, {first.get('category')})")
    cats = ", ".join(f"{k} {v}" for k, v in s["categories"].items() if v)
    lines.append(f"summary: {s['equal']} alike, {s['changed']} changed" + (f" ({cats})" if cats else "")
                 + f", {s['moved']} moved, {s['missing']} missing, {s['extra']} extra")
    return lines
