"""LogRecords: a sink that writes records as structured log lines on stderr (notices, audits).

A record with a ``code`` is a diagnostic (a warning, say), and so is a heal notice (a rule's, its action
"reported"): as errors are, up to ``--max-errors`` of one code (or rule) in one input are written, and the rest summed
up at the end in one ``E_NOTICES_SUPPRESSED`` line per input and code (``Quota``). Any other record (an event a config
logs, a repair of the heal log) is written whatever the count."""

from __future__ import annotations

from collections.abc import AsyncIterator

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.log import LEVELS, log_record, make_logger
from replay.pipeline.engine.quota import Quota
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Sink


@register("log")
class LogRecords(Sink):
    summary = "Write each record as one structlog line on stderr (e.g. heal's notices), at the given level."
    options = {
        "event": Option(str, "record", "the log line's event name"),
        "level": Option(str, "warning", "log level", choices=LEVELS),
    }
    takes_anything = True
    keeps_run_state = False  # (each batch taken on its own)
    takes_output = False  # (warnings on stderr: a failed run that logged one still wrote nothing)

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        logger = self.log or make_logger()  # the run's logger (the command's --log-level)
        level, event = self.config["level"], self.config["event"]
        quota = Quota(self.diagnostics_limit)
        async for batch in batches:
            for record in batch.events or ():
                if quota.admit(record):
                    log_record(logger, level, event, record)
        for summary in quota.left_out(level if level in ("error", "warning") else "warning"):
            log_record(logger, level, event, summary)
