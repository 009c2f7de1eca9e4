"""Helpers for the dialect tests: read a file into batches as `replay read` cuts it, map and heal it in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import InlineResult, run_inline
from replay.pipeline.engine.stage import Transform
from replay.pipeline.io.journals import LineCutter, as_document
from replay.pipeline.model.artifacts import document_items
from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.stages.dialect import MapDialect
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"  # attribution: fixtures/corpus/SOURCES.md
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".json", ".jsonl"))


def batches_of(data: bytes, source: str, batch_events: int = 4) -> list[Batch]:
    """The batches `replay read` sends for a file's bytes (a JSON document whole, else lines)."""
    document = as_document(data)
    if document is not None:
        return list(document_items(document, source, batch_events))
    cutter = LineCutter(source, batch_events=batch_events)
    items = cutter.feed(data) + cutter.finish()
    return [b for b in items if isinstance(b, Batch)]


def dialect_heal_chain() -> list[Transform]:
    """The heal rules in order (the dialect rules among them), as `type = "heal"` chains them."""
    return rule_stages()


def read_dialect(data: bytes, source: str = "log.jsonl", dialect: str = "auto") -> InlineResult:
    return run_inline([ParseLines(), MapDialect(dialect=dialect)], batches_of(data, source))


def heal_dialect(data: bytes, source: str = "log.jsonl", dialect: str = "auto", extra: list[Transform] | None = None) -> InlineResult:
    """`replay heal` in-process, stage by stage as pipeline/specs/heal.toml chains them."""
    stages: list[Transform] = [JoinSplitRecords(), ParseLines(torn_tail="repair"), MapDialect(dialect=dialect),
                               *dialect_heal_chain(), SummarizeRepairs(), *(extra or [])]
    return run_inline(stages, batches_of(data, source), feed_side={len(stages) - 1 - len(extra or []): ("repairs",)})


def events(result: InlineResult) -> list[dict[str, Any]]:
    return [r for r in result.records if isinstance(r, dict) and "$record" not in r]


def originals(result: InlineResult) -> list[Any]:
    """The original records the events keep, once per record, in order."""
    out, last = [], None
    for event in events(result):
        origin = event.get(ORIGIN_KEY)
        if isinstance(origin, dict) and origin.get("index") != last:
            out.append(origin["record"])
            last = origin.get("index")
    return out


def jsonl_records(data: bytes) -> list[Any]:
    """The JSON values of a JSONL file's lines that parse (objects and not)."""
    out = []
    for line in data.splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return out
