"""Dialects: the session logs of other agents, mapped onto replay's canonical event stream and back.

``NAMES`` lists them; ``mapper_for(name, source)`` gives a fresh mapper for one run. Each dialect's
module documents its mapping table; ``detect`` says which dialect a record is written in.
"""

from __future__ import annotations

from replay.pipeline.model.dialects.base import ORIGIN_KEY, Mapper
from replay.pipeline.model.dialects.claude_code import ClaudeCodeMapper
from replay.pipeline.model.dialects.codex import CodexMapper
from replay.pipeline.model.dialects.mini_swe_agent import MiniSweAgentMapper
from replay.pipeline.model.dialects.openhands import OpenHandsMapper

MAPPERS: dict[str, type[Mapper]] = {
    m.name: m for m in (ClaudeCodeMapper, CodexMapper, OpenHandsMapper, MiniSweAgentMapper)
}
NAMES = tuple(MAPPERS)
AUTO = "auto"


def mapper_for(name: str, source: str) -> Mapper:
    return MAPPERS[name](source)


__all__ = ["AUTO", "MAPPERS", "NAMES", "ORIGIN_KEY", "Mapper", "mapper_for"]
