"""MatchAgent: judges an agent's messages against the incident before them and sends the replay verdict (candidate values withheld)."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.incident import records
from replay.pipeline.model.incident.matching import AGENT_ERROR, DIVERGED, TERMINALS, judge


@register("match")
class MatchAgent(Transform):
    summary = ("Compare the agent_message records after an incident with its recording (ordered tool names and args, "
               "then the terminal output) and send a {\"$record\": \"replay\"} verdict at each agent_exit; a divergence "
               "is reported as E_INCIDENT_REPLAY_DIVERGED. Agent records are dropped (candidate data stays out of outputs).")
    options = {
        "keep_transcript": Option(bool, False, "pass the agent_message / agent_exit records on (they hold candidate data)"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._incident: dict[str, Any] | None = None
        self._messages: list[dict[str, Any]] = []

    def __call__(self, batch: Batch) -> Batch:
        keep: list[int] = []
        verdicts: dict[int, dict[str, Any]] = {}
        for i, record in enumerate(batch.events or ()):
            kind = records.kind_of(record)
            if kind == records.INCIDENT:
                self._incident, self._messages = records.body_of(record), []
            elif kind == records.AGENT_MESSAGE:
                self._messages.append(record["message"])
                if not self.config["keep_transcript"]:
                    continue
            elif kind == records.AGENT_EXIT:
                verdicts[i] = self._verdict(records.body_of(record), batch, i)
                if not self.config["keep_transcript"]:
                    continue
            keep.append(i)
        if not verdicts:
            return batch if len(keep) == len(batch) else batch.select(keep)
        columns = []
        for i in range(len(batch)):
            if i in keep:
                columns.append(batch.column(i))
            if i in verdicts:
                columns.append(invented(records.as_record(records.REPLAY, verdicts[i])))
        return Batch.from_columns(columns, source=batch.source)

    def _verdict(self, agent: dict[str, Any], batch: Batch, i: int) -> dict[str, Any]:
        if self._incident is None:
            self.error("E_INCIDENT_BUNDLE_INVALID", "an agent_exit record came with no incident before it", batch, i)
            return {"status": AGENT_ERROR, "agent": agent}
        verdict = judge(self._incident, self._messages)
        # A failed agent is an agent error (spawn_agent reported its failure), unless it failed after a terminal message
        # that diverged (it exited non-zero or by a signal after it): that divergence is the replay's verdict still.
        finished = any(message.get("type") in TERMINALS for message in self._messages)  # (it may have sent more after)
        if agent.get("status") == "failed" and not (finished and verdict["status"] == DIVERGED):
            verdict = {**verdict, "status": AGENT_ERROR, "divergence": None}
        elif verdict["status"] == DIVERGED:
            d = verdict["divergence"]
            self.error("E_INCIDENT_REPLAY_DIVERGED", f"replay diverged ({d['kind']}): {d['message']}", batch, i,
                       expected=d["expected"], received=d["received"])
        self._messages = []
        return {"schema_version": 1, "incident_id": self._incident.get("incident_id"), **verdict, "agent": agent}
