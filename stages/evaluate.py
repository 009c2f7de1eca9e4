"""EvaluateRules: judges each incident record by its explicit business rules and sends the evaluation after it."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.incident import records
from replay.pipeline.model.incident.rules import PASS, evaluate


@register("evaluate")
class EvaluateRules(Transform):
    summary = ("Evaluate an incident's rules (effect_count, output_equals, required_output, max_tool_errors) and send "
               "a {\"$record\": \"evaluation\"} after it; with `gate`, a failed or inconclusive result is an error.")
    keeps_run_state = False  # (each incident record judged alone)
    options = {
        "gate": Option(bool, False, "report E_INCIDENT_RULES_FAILED when any rule fails or is inconclusive (exit 1)"),
    }

    def __call__(self, batch: Batch) -> Batch:
        after: list[Any] = []
        for i, record in enumerate(batch.events or ()):
            if records.kind_of(record) != records.INCIDENT:
                continue
            evaluation = evaluate(records.body_of(record))
            after.append((i, invented(records.as_record(records.EVALUATION, evaluation))))
            if self.config["gate"] and evaluation["status"] != PASS:
                c = evaluation["counts"]
                self.error("E_INCIDENT_RULES_FAILED",
                           f"business rules {evaluation['status']}: {c['fail']} failed, {c['inconclusive']} inconclusive, "
                           f"{c['pass']} passed", batch, i, received=evaluation["status"], expected="every rule passes",
                           failed=[r["id"] for r in evaluation["rules"] if r["status"] != PASS])
        if not after:
            return batch
        return batch.rebuild({i + 1: [col] for i, col in after if i + 1 < len(batch)},
                             set(), [col for i, col in after if i + 1 >= len(batch)])
