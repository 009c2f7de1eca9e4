"""The error catalogue: every code replay can emit, the exception that carries one, and its JSON form."""

from __future__ import annotations

import errno
import importlib
import math
import os
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.text import utf8

# code -> (one-line meaning, default advice). ERROR_CODES.md documents the same set; a test keeps
# the two in step, and another checks that every code here is raised somewhere in the code.
CATALOGUE: dict[str, tuple[str, str]] = {
    # command line
    "E_UNKNOWN_FLAG": ("unknown command-line flag", "Run `replay COMMAND --help` to list the flags."),
    "E_USAGE_INVALID": ("invalid command-line usage", "Run `replay COMMAND --help` for the usage."),
    "E_COMMAND_UNKNOWN": ("unsupported command", "Run `replay --help` to list the commands."),
    "E_TIMEOUT_INVALID": ("invalid --timeout-ms", "Pass a positive integer number of milliseconds."),
    "E_PROMPT_REQUIRED": ("prompt missing from arguments and stdin", "Pass the prompt as an argument or pipe it on stdin."),
    "E_PROMPT_INVALID": ("prompt is not UTF-8 text", "Convert the prompt to UTF-8 (e.g. `iconv -f latin1 -t utf-8`)."),
    "E_CONTEXT_CONFLICT": ("both --context and --context-file set", "Use only one of --context and --context-file."),
    "E_CONTEXT_JSON_INVALID": ("context is not valid JSON", "Pass a JSON object, e.g. --context '{\"user\":\"u1\"}'."),
    "E_CONTEXT_SHAPE_INVALID": ("context is not a JSON object", "Wrap the values in an object: {\"key\": value}."),
    "E_CONTEXT_FILE_NOT_FOUND": ("context file missing", "Check the path given to --context-file."),
    "E_SCHEMA_UNKNOWN": ("no bundled schema has this name", "Run `replay schema` to list the bundled schemas."),
    # runner discovery and execution
    "E_RUNNER_NOT_FOUND": ("no runner discovered", "Create .replay/runner.py (or .mjs), set REPLAY_RUNNER, or pass --runner."),
    "E_RUNNER_PATH_NOT_FOUND": ("explicit runner path missing", "Check the path given to --runner or REPLAY_RUNNER."),
    "E_RUNNER_UNSUPPORTED_EXTENSION": ("runner extension not supported", "Compile TypeScript to .mjs/.js first, or use a .py runner."),
    "E_RUNNER_NOT_EXECUTABLE": ("runner is not executable", "Run `chmod +x` on the runner or give it a .py/.mjs/.js/.cjs extension."),
    "E_RUNNER_START_FAILED": ("runner process could not be started (the system refused it, e.g. a #! interpreter that is not there: the run is written with status error, exit 1; node not on PATH: refused before anything is written, exit 2)", "Check the runner's interpreter (python, node) is installed."),
    "E_RUNNER_TIMEOUT": ("runner timed out", "Raise --timeout-ms or make the runner finish sooner."),
    "E_RUNNER_EXIT_NON_ZERO": ("runner exited with a non-zero code", "Read the runner's stderr in the raw capture (*.raw.json)."),
    "E_CAPTURE_INTERRUPTED": ("capture interrupted (Ctrl-C, SIGTERM or SIGHUP) while the runner ran; what it streamed is kept", "Run the capture again; the files written hold what the runner printed before it was stopped."),
    "E_RUNNER_OUTPUT_TOO_LARGE": ("runner output exceeded the size cap", "Raise --max-output-bytes or make the runner print less."),
    # runner output
    "E_RUNNER_EMPTY_STDOUT": ("runner wrote nothing on stdout", "Print one JSON object (the runner output) on stdout."),
    "E_RUNNER_INVALID_JSON": ("runner stdout is not valid JSON", "Print exactly one JSON object; send logs to stderr."),
    "E_RUNNER_OUTPUT_SHAPE": ("runner output is not a JSON object", "Print an object with `status` and `events`."),
    "E_RUNNER_STATUS_INVALID": ("runner status is not ok or error", "Set `status` to \"ok\" or \"error\"."),
    "E_RUNNER_EVENTS_INVALID": ("runner events is not an array", "Return `events: []` when there are no events."),
    "E_RUNNER_RESPONSE_MISSING": ("status ok without a response string", "Add the final answer as `response`."),
    # inputs and journals
    "E_INPUT_PATH_NOT_FOUND": ("input path missing", "Check the path; `replay read -` reads stdin."),
    "E_INPUT_FILE_NOT_JSON": ("--in file is not a journal or an artifact (.json, .jsonl, .ndjson)", "Point --in at a .json, .jsonl or .ndjson file or a directory of them."),
    "E_INPUT_NOT_FILE_OR_DIR": ("input is neither a file nor a directory", "Pass a regular file, a directory or `-`."),
    "E_INPUT_UNREADABLE": ("input could not be read", "Check the file's permissions and that the disk is readable."),
    "E_GZIP_INVALID": ("gzip stream is corrupt or truncated", "Recompress the file or read the uncompressed journal."),
    "E_JSONL_LINE_INVALID": ("line is not valid JSON, or nested deeper than replay reads (1024 levels)", "Fix or delete the line; other lines are still read."),
    "E_JSONL_LINE_TORN": ("last line is cut off (no newline, invalid JSON)", "The writer stopped mid-line; `replay heal` drops it and logs the repair."),
    "E_JSONL_LINE_TOO_LONG": ("line longer than --max-line-bytes, or a JSON document (read whole) larger", "Raise --max-line-bytes or split the record."),
    "E_JSON_DUPLICATE_KEY": ("a key is written twice in one object (a warning)", "Write each key once; readers keep only the last value."),
    "E_EVENT_NOT_OBJECT": ("line is JSON but not an object", "Each line must be one JSON object."),
    "E_EVENT_INVALID": ("event does not match the canonical event", "See `replay schema event`."),
    "E_USAGE_NOT_COUNTED": ("a usage count or cost is not a count: a value that is no number >= 0 (a string such as \"45\", a negative number, true), left out of the run's usage with the rest of its usage object counted; or a number no count holds (a fraction beyond a double, or a count of thousands of digits, whose totals could not be printed), its whole usage object left out, as a usage that is no object (\"1200 tokens\", a list) is (a warning); in capture, a runner's usage member that is no count is left out of the run record and said in the heal log's notices (rule check_runner_output); `validate` holds an artifact's or run record's `usage.inputTokens`, `outputTokens` and `costUsd` to the schemas' number >= 0 (a `null` one is a count not given, as if left out: valid there, and in capture and report): one that is no count is an error of this code (exit 1), and `heal` leaves it as written (a count it cannot know) and its check says so once, as the cause of E_HEALED_ARTIFACT_INVALID; a usage object in an event's payload (which the schemas leave free) fails no check: only report and `export --otlp`, which add it up, warn when they leave a value out (the same values, by the same notice); `walk --json`, which adds up each step's spend, leaves out of it an amount that is no count (a negative number, true, a number written as text such as \"1.5\") and warns, with the record's line and the amount's path", "Write token counts and costs as plain numbers (e.g. 1200, 0.0034)."),
    "E_DIALECT_MISMATCH": ("the log does not look like the dialect `--dialect` names (an error, exit 1: it is mapped as named all the same), or a run was read from another dialect than the one `write --dialect` or `heal --dialect-out` writes (an error, exit 1: that run is left out); a line of a log that is another dialect's than the log's own is a warning (it is read as the log's)", "Name the dialect the log is written in, or use --dialect auto."),
    "E_DIALECT_AMBIGUOUS": ("the log could be more than one dialect", "Name the dialect with --dialect NAME."),
    "E_DIALECT_NO_ORIGIN": ("nothing to write back in a dialect: the events were read from none", "Map an agent's log as you read it (`replay read --dialect NAME`); write replay's own journals without --dialect/--dialect-out."),
    "E_OTLP_TIME_UNKNOWN": ("`export --otlp`: a run tells no time OTLP can hold (no event has a timestamp, or only heal's stand-in `1970-01-01T00:00:00.000Z`, ones before 1970 or after 2554-07-21, or ones that are no RFC 3339 time; the warning counts each kind): its spans are written with times 0, OTLP's unset value, and `replay.time_unknown` on the run's span (a warning)", "Give the run's events an RFC 3339 `timestamp` from 1970 to 2554-07-21 (`replay capture` stamps every event); a backend that keeps spans of recent times only (Grafana Tempo) leaves such a trace out."),
    # outputs
    "E_OUTPUT_UNWRITABLE": ("an output cannot be written at all: stdout is closed, open for reading only, or one of the inputs, a folder on its path is a file, or an output flag names a folder, an input, or stdout or a file another output writes", "Give the command somewhere to write: `> out.jsonl`, `| next-command` or `> /dev/null`."),
    "E_OUTPUT_WRITE_FAILED": ("writing an output failed (disk full, I/O error, no permission)", "Free space or fix the path, then run again; nothing partial was left at the path."),
    # diagnostics
    "E_ERRORS_SUPPRESSED": ("more errors of one code in one input were left out after the first ones", "Fix the errors shown (they are usually one cause), or run `replay validate` on the input for the counts."),
    "E_NOTICES_SUPPRESSED": ("more warnings of one code in one input were left out after the first ones", "They are most likely one cause: fix the ones shown. `replay --max-errors 0 ...` prints every one."),
    # artifacts and validation
    "E_ARTIFACT_JSON_INVALID": ("artifact file is not valid JSON", "Re-create the artifact with `replay capture` or fix the JSON."),
    "E_ARTIFACT_SHAPE_INVALID": ("artifact is not a JSON object, or a field has the wrong type", "An artifact is one JSON object, see `replay schema replay-artifact`."),
    "E_ARTIFACT_TYPE_INVALID": ("artifactType is not \"replay\"", "Set `artifactType` to \"replay\"."),
    "E_SCHEMA_VERSION_UNSUPPORTED": ("schemaVersion is not supported", "Set `schemaVersion` to \"1.0.0\"."),
    "E_ARTIFACT_ID_INVALID": ("artifact id missing or invalid", "Set `id` to a non-empty string."),
    "E_ARTIFACT_STATUS_INVALID": ("artifact status missing or invalid", "Set `status` to \"ok\" or \"error\"."),
    "E_ARTIFACT_EVENTS_INVALID": ("artifact events missing or not an array", "Set `events` to an array of event objects."),
    "E_ARTIFACT_EVENT_INVALID": ("event is not an object", "Each event must be a JSON object."),
    "E_ARTIFACT_EVENT_TYPE_INVALID": ("event type missing or invalid", "Give every event a non-empty string `type`."),
    "E_ARTIFACT_EVENT_SEQ_INVALID": ("event seq missing, not an integer >= 1, or out of order", "Run `replay heal` to renumber seq 1..n."),
    "E_ARTIFACT_EVENT_TIMESTAMP_INVALID": ("event timestamp is not RFC 3339", "Use e.g. \"2026-03-01T12:00:00.000Z\"; `replay heal` repairs it."),
    "E_HEALED_ARTIFACT_INVALID": ("healed artifact still fails validation", "Fix what `cause` names at `path` in the input: heal cannot invent it (the heal log shows what was tried)."),
    # heal rules
    "E_HEAL_RULES_INVALID_JSON": ("heal rules file is not valid JSON, or writes a key twice in one object", "Fix the JSON in the rules file."),
    "E_HEAL_RULES_SHAPE_INVALID": ("heal rules must be an object (`version` \"v1\" when given, `eventAliases` of type names, in no circle, none renaming a canonical type, no other key)", "Use {\"version\": \"v1\", \"eventAliases\": {\"old\": \"new\"}}."),
    # pipeline configs
    "E_CONFIG_NOT_FOUND": ("pipeline config file missing", "Check the path to the pipeline config."),
    "E_CONFIG_PARSE": ("pipeline config is not valid TOML/JSON, or writes a key twice in one object", "Fix the syntax at the reported line."),
    "E_CONFIG_SHAPE_INVALID": ("pipeline config has the wrong shape", "Declare [stages.<id>] tables or a `chain = [...]` list."),
    "E_CONFIG_STAGE_TYPE_UNKNOWN": ("unknown stage type", "Run `replay stages` to list the stage types."),
    "E_CONFIG_OPTION_UNKNOWN": ("unknown stage option", "Run `replay stages` to list each stage's options."),
    "E_CONFIG_OPTION_INVALID": ("stage option has the wrong type or value", "Run `replay stages` to see each option's type."),
    "E_CONFIG_INPUT_UNKNOWN": ("input names no stage or port", "Name an existing stage id, or `<id>.<port>` for a side port."),
    "E_CONFIG_INPUTS_INVALID": ("stage inputs do not fit the stage kind (a source given inputs, a stage given none, a stage that follows runs given two streams of events)", "Sources take no inputs; transforms and sinks need at least one."),
    "E_CONFIG_CYCLE": ("stage inputs form a cycle", "Remove one of the inputs named in the cycle."),
    "E_CONFIG_ERRORS_UNCONSUMED": ("a routed error port has no consumer", "Add a stage with inputs = [\"<id>.errors\"], or drop route_errors."),
    "E_CONFIG_OUTPUT_UNCONSUMED": ("a stage's output goes nowhere", "Feed it into a sink such as `write`, or remove the stage."),
    "E_SPEC_UNKNOWN": ("no built-in graph spec has this name", "Run `replay stages --help` to list the built-in graphs."),
    "E_STAGE_LOAD_FAILED": ("a third-party stage could not be loaded", "Fix or uninstall the package that provides the entry point."),
    "E_STAGE_FAILED": ("a stage raised an error while running", "Read the message; rerun with --log-level debug for details."),
    "E_STAGE_RESULT_INVALID": ("a stage returned or sent something other than a Batch, a list of Batches or None, or emitted on a port it does not declare, or emitted a record that is not a JSON object (a dict)",
                               "Return (or send) a Batch, a list of Batches or None from the stage."),
    "E_STAGE_NOT_STOPPED": ("a stage did not stop within 2 s of an interrupt (Ctrl-C, SIGTERM or SIGHUP); replay ended the process, removing outputs not yet written whole",
                            "The stage blocks where cancellation cannot reach it (a blocking call in a worker thread, or sync code holding the event loop's thread): give that call a timeout, or wait on the event loop instead (non-blocking I/O). A thread abandoned on cancel still keeps the process from exiting."),
    # production incidents
    "E_INCIDENT_INPUT_TOO_LARGE": ("incident input larger than the size limit", "Export one incident per file, or raise --max-bytes."),
    "E_INCIDENT_JSON_INVALID": ("incident export, bundle or rules file is not valid JSON, or writes a key twice in one object", "Fix the JSON at the reported line and column."),
    "E_INCIDENT_FORMAT_UNSUPPORTED": ("the file is not in the export format asked for", "Pick the format with --format canonical, runledger or replay."),
    "E_INCIDENT_NESTING_TOO_DEEP": ("incident JSON nested deeper than the limit", "Flatten the payload, remove it with --redact, or raise --max-depth."),
    "E_INCIDENT_SHAPE_INVALID": ("incident export, event or rules file has the wrong JSON type", "A canonical export is one object; events are objects; a rules file is an array."),
    "E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED": ("incident schema_version missing or not 1", "Set \"schema_version\": 1."),
    "E_INCIDENT_FIELD_UNKNOWN": ("incident export or event has a field the format does not have", "Remove the field; unknown fields are refused, never guessed at."),
    "E_INCIDENT_FIELD_MISSING": ("incident export or event lacks a required field", "Add the field; see `replay schema incident-export`."),
    "E_INCIDENT_FIELD_INVALID": ("incident field has the wrong type", "Give the field the type `replay schema incident-export` names."),
    "E_INCIDENT_ARGS_WRAPPED": ("`--format replay`: a tool call's arguments in the journal are no object (Codex's apply_patch writes its patch as a text; a number, an array, null): imported as `{\"input\": <the arguments as written>}` (a warning)", "Nothing to mend in the journal: a replayed agent sends such a call's args as incident.json has them, {\"input\": <the value>}, redacted as any argument is (a patch's text, which has spaces, is \"[redacted]\")."),
    "E_INCIDENT_EVENT_TYPE_UNKNOWN": ("incident event type not in the event table", "Map the trace to tool_call, tool_result, business_effect, final_output, task_error."),
    "E_INCIDENT_TOO_MANY_EVENTS": ("incident trace longer than the event limit", "Export only the failing task, or raise --max-events."),
    "E_INCIDENT_CALL_ID_DUPLICATE": ("a tool_call reuses a call id", "Give every tool_call its own call id."),
    "E_INCIDENT_CALL_CONCURRENT": ("a tool_call starts before the previous call has its result", "Record calls serially, each followed by its tool_result."),
    "E_INCIDENT_RESULT_UNMATCHED": ("a tool_result names no open call, or is a second result", "Pair each tool_call with exactly one tool_result after it."),
    "E_INCIDENT_RESULT_MISSING": ("a tool_call has no tool_result", "Record an ambiguous timeout as a failed tool_result (ok false)."),
    "E_INCIDENT_EFFECT_CALL_UNKNOWN": ("a business_effect names no earlier call", "Reference the call_id of a tool_call recorded before the effect."),
    "E_INCIDENT_TERMINAL_MISSING": ("the trace has no final_output or task_error", "End the trace with the agent's final output or its recorded error."),
    "E_INCIDENT_TERMINAL_NOT_LAST": ("an event comes after the terminal event", "Put exactly one final_output or task_error last."),
    "E_INCIDENT_CASE_REQUIRED": ("the log holds several cases and no --case was given (a `replay run` config's `case`)", "Choose one with --case ID (in a config: `case = \"ID\"`)."),
    "E_INCIDENT_CASE_NOT_FOUND": ("the --case id is not in the log", "Pass a case id (or runId) the log contains."),
    "E_INCIDENT_TASK_START_MISSING": ("the log has no task input for the case", "Export the task_start record (or run record) with the input."),
    "E_INCIDENT_TASK_START_DUPLICATE": ("the log has a second task_start for the case", "Export one run of the case per log."),
    "E_INCIDENT_RULES_MISSING": ("no business rule was given", "Add at least one rule to `assertions` or --rules."),
    "E_INCIDENT_TOO_MANY_ASSERTIONS": ("more rules than the limit", "Keep the rules that decide the incident, or raise --max-assertions."),
    "E_INCIDENT_RULE_INVALID": ("a rule has a missing, unknown or ill-typed field", "See `replay schema incident-rules` for each rule type's fields."),
    "E_INCIDENT_RULE_TYPE_UNKNOWN": ("a rule type that does not exist", "Use effect_count, output_equals, required_output or max_tool_errors."),
    "E_INCIDENT_RULE_ID_DUPLICATE": ("two rules share an id", "Give every rule its own id."),
    "E_INCIDENT_REDACT_POINTER_INVALID": ("a --redact value is not a JSON Pointer into input, events or assertions", "Write e.g. --redact /events/*/args/internal_reference."),
    "E_INCIDENT_REDACT_PATH_MISSING": ("a --redact pointer names nothing in the incident", "Use only paths present in the export (call ids are c1, c2, ...)."),
    "E_INCIDENT_NAME_PRIVATE": ("a name redaction keeps as it is (a tool's, an effect type, a rule id) holds a credential, email or card number", "Rename it in the export (and in the rules that name it) to a name that holds no credential or personal data."),
    "E_INCIDENT_REDACT_PATH_PROTECTED": ("a --redact pointer would remove protocol structure or a rule", "Remove fields inside args, result, error, effect, output or input instead."),
    "E_INCIDENT_REDACTION_CHANGED_VERDICT": ("a rule judges the redacted incident otherwise than the export: a --redact pointer or a redacted value took what it reads (a warning)", "Check the --redact pointers against the fields the rules read (effect fields, output paths); leave those in."),
    "E_INCIDENT_NOT_REDACTED": ("a stage other than `redact` takes an export load_incident reads (the config is refused), an incident reached a writer without redaction, or a bundle holds a value redaction would change (edited after its import)", "Put a `redact` stage right after load_incident, before any other stage."),
    "E_INCIDENT_EXPORTS_NOT_FOUND": ("a folder given to `incident import` holds no export of the --format asked for (nothing was written)", "Give the folder that holds the exports (*.json; *.jsonl/*.ndjson logs with --format runledger or replay), or one export file."),
    "E_INCIDENT_OUTPUT_NOT_EMPTY": ("the --out folder (a `replay run` config's `out`) exists and is not empty", "Choose a new or empty folder; results are never overwritten."),
    "E_INCIDENT_BUNDLE_INVALID": ("not an incident bundle, or one that was changed", "Pass the incident.json an import wrote, or a promoted fixture."),
    "E_INCIDENT_CHECKSUM_MISMATCH": ("a promoted fixture does not match its SHA-256 checksum", "Restore the fixture, or import and promote the incident again."),
    "E_INCIDENT_PROMOTE_TARGET_EXISTS": ("the promote target already exists", "Choose another path; promote never overwrites."),
    "E_INCIDENT_AGENT_COMMAND_INVALID": ("--agent-command (a `replay run` config's `command`) is not a JSON array of strings, or its program is missing or not executable", "Pass e.g. --agent-command '[\"python\", \"agent.py\"]' (in a config: `command = [\"python\", \"agent.py\"]`)."),
    "E_INCIDENT_AGENT_START_FAILED": ("the agent process could not be started", "The system could not run the program (its format, or a resource limit): check that it runs on its own."),
    "E_INCIDENT_AGENT_TIMEOUT": ("the agent did not finish in time", "Raise --timeout-ms or make the agent finish sooner."),
    "E_INCIDENT_AGENT_LIMIT_EXCEEDED": ("the agent sent too many messages, calls or bytes", "Raise --max-messages / --max-tool-calls, or fix the agent's loop."),
    "E_INCIDENT_AGENT_PROTOCOL_INVALID": ("the agent sent a message the protocol does not allow", "Print only protocol JSON lines on stdout; logs go to stderr."),
    "E_INCIDENT_AGENT_EXITED": ("the agent ended before a final_output or task_error, after a final_output with an exit code other than 0, or by a signal", "Make the agent finish with final_output or task_error, then exit with code 0."),
    "E_INCIDENT_REPLAY_DIVERGED": ("the agent's calls or output differ from the recording", "Read replay.json: the divergence names the recorded call and what differs."),
    "E_INCIDENT_RULES_FAILED": ("a business rule failed or was inconclusive (--gate)", "Read evaluation.json; inconclusive effect counts need effects_complete."),
    # session journals, replay scripts, the replay model and goldens
    "E_SESSION_LINE_INVALID": ("session line breaks the session journal format", "See `replay schema session`: each line has a string `type`; `assistant/chunk` lines have integer `turn` and `step` and a `chunk` object."),
    "E_SESSION_GROUP_UNFINISHED": ("a model call's chunks end without a finish chunk", "Say what happened there (throw or hang) in replay.override.json beside the session."),
    "E_SESSION_GROUP_SPLIT": ("a model call's chunks are not contiguous or go on after its finish", "Each model call's chunks come together and end with one finish; check how the agent tags (turn, step)."),
    "E_OVERRIDE_INVALID": ("override sidecar is not valid (a key written twice in one object among its faults)", "See `replay schema replay-override`."),
    "E_OVERRIDE_STEP_UNKNOWN": ("override names a model call the session does not have", "Name the (turn, step) of an assistant/chunk group; `replay script SESSION` lists them."),
    "E_SCRIPT_INVALID": ("replay script document is not valid", "Make it again with `replay script SESSION > script.json`; see `replay schema replay-script`."),
    "E_REPLAY_OUT_OF_ORDER": ("replay model was asked for another call than the recording's next", "The agent must make the recorded calls in order; find what changed in the loop, or re-record the session."),
    "E_REPLAY_PAST_END": ("replay model was asked for a call after the recording's last", "The agent made more model calls than the recording holds; find why, or re-record the session."),
    "E_REPLAY_LEFTOVER": ("recorded model calls were never asked for", "The agent stopped before the recording did; find why, or re-record the session."),
    "E_GOLDEN_MISMATCH": ("new journal differs from the recorded golden", "Read the first difference; if the change is intended, record the golden again."),
    # walk and diff (the code is E_ + the refusal's name in capitals; errors carry it as `refusal` too)
    "E_RUN_NOT_FOUND": ("no journal for this run id under the data dir", "Check the run id (`ls .replay/journal`) or pass --data-dir."),
    "E_INVALID_RUN_ID": ("run id fails the syntax check", "Use letters, digits, `.`, `_` and `-` only, without `..`; or pass a path to the journal."),
    "E_STEP_NOT_FOUND": ("the --at step never appears in the journal", "Run `replay walk RUN` to list the steps, then pick one."),
    "E_JOURNAL_READ_FAILED": ("the journal could not be read (IO error, a line that is no record)", "Fix or remove the line at the byte offset given (`replay heal` leaves out a line that is no record and logs it, a torn last line too), then walk or compare what heal writes."),
    "E_DIFF_INPUT_INVALID": ("diff needs exactly two runs", "Give two journals, artifacts or run ids (or a stream holding two runs)."),
    "E_RUNS_DIFFER": ("the two runs differ", "Read the differences on stdout; `--ignore PATH` leaves out fields expected to differ."),
    # scaling out and live streams
    "E_EXTRA_NOT_INSTALLED": ("an optional extra this feature needs is not installed", "Install it where replay is installed: pip install 'dask[distributed]' fsspec (the dask extra) or nats-py (the nats extra)."),
    "E_FILESYSTEM_NOT_INSTALLED": ("no fsspec filesystem for this URL's protocol is installed", "Install the package the error names (e.g. pip install s3fs for s3://), or give a local path."),
    "E_CLUSTER_UNREACHABLE": ("the Dask scheduler could not be reached", "Check --scheduler / DASK_SCHEDULER_ADDRESS and that the scheduler is running."),
    "E_CLUSTER_TASK_FAILED": ("a Dask task failed (its workers kept dying, or the task broke)", "Read the message and the workers' logs (memory limits, killed processes)."),
    "E_WORKER_LOST": ("the worker processes of --workers N kept dying (killed: out of memory, a signal)", "Give the workers more memory or run fewer --workers, then run the command again."),
    "E_NATS_UNREACHABLE": ("the NATS server could not be reached, or has no JetStream", "Check the nats:// address and that the server runs with JetStream (nats-server -js)."),
    # internal
    "E_UNHANDLED": ("unexpected runtime failure", "Rerun with --log-level debug and report the output."),
    # warnings that had no code (a notice's rule, kept beside its code, says which check saw it)
    "E_INPUTS_NOT_FOUND": ("no journal or artifact was found in the folders given: nothing was read (a warning)", "Give the folder that holds the *.jsonl journals or *.json artifacts, or the files themselves."),
    "E_TIMESTAMP_BACKWARDS": ("an event's timestamp is earlier than the event's before it in its run: kept in journal order (a warning; rule check_order)", "Look at the runner's clock, or at how the journal was joined: heal keeps the events in journal order."),
    "E_RUN_NOT_WHOLE": ("a run is not shaped as a whole run: it does not begin with run_started or begins twice, goes on after its terminal event or has none, ends otherwise than its run record's status says, has no events, or uses a type heal renames (a warning; rule check_runs)", "Run `replay heal` on the journal: it inserts what is missing and renames aliases; what it leaves as it is, the message says."),
    "E_RUN_ID_REUSED": ("a runId comes back after another run of its input: its events there are read as a run of their own (a warning; rule check_run_ids)", "Split the input by runId first (runs written interleaved are healed and reported as pieces)."),
    "E_RECORD_ID_REUSED": ("a record's id, or a dated record, is written again in its run with other content: both kept (a warning; rule drop_resume_duplicates)", "Give each record an id of its own; a resumed session writing a record again with the same content is dropped by heal."),
    "E_INPUT_TRUNCATED": ("a file `read --follow` follows was truncated: it is read again from its start (a warning)", "Nothing to do if the file was rotated or rewritten on purpose; its lines read before are not read again."),
    "E_INPUT_REMOVED": ("a file `read --follow` follows was removed: the file opened is still followed (a warning)", "Ctrl-C ends --follow; `replay read --follow` a new file at that path again to read it."),
    "E_JSONL_LINE_UNFINISHED": ("reading stopped (--follow ended, Ctrl-C) while the input's last line had no newline yet: that line was not read (a warning)", "Read the file again once its writer has finished the line."),
    "E_RUNNER_FIELD_INVALID": ("a run fact of the runner's output object (response, error, framework, sources), or a member of its `error` (`code`, ...), is of a type the contract does not have, or missing where it is needed: not kept in the run record; or a runner event's `step`, `turn`, `parentId` or `synthetic` holds a value heal cannot repair (another type than the event schema's: a `step` object, `\"synthetic\": 0`; a null `step` or `turn` and a false or null `synthetic` are heal's to drop), or the event carries `$record`: left out of the event. Said in the heal log's notices (a warning; rule check_runner_output)", "Write the field as the contract has it (`replay schema runner-output`), or leave it out."),
    "E_DIALECT_OPENED_EARLY": ("a dialect's whole-document log came as lines (piped) larger than --max-line-bytes: its run record is written before its end, without how the run ended (status, response) (a warning)", "Heal the document file itself, or raise --max-line-bytes above its size."),
    "E_RUNS_FAILED": ("`report --fail-on-error`: a run in the report failed (exit 1; a warning)", "Read the report for the failed runs, or drop --fail-on-error to report without gating."),
    "E_RUNS_STATUS_UNKNOWN": ("`report --fail-on-unknown`: a run's journal does not tell how it ended (status unknown; exit 1; a warning)", "The runs named stopped without saying how they ended (killed, crashed, or their journal cut off): look at how each ends (`replay walk`), and have the agent write a run_completed or run_failed event (or a run record with its status) at each run's end; `replay heal` closes such a run but cannot tell how it ended (it stays unknown). Or drop --fail-on-unknown."),
    "E_HEAL_LOG_NOT_WRITTEN": ("stdout's reader went away (a `| head`) before heal's end: the --log heal log was not written, as it would hold part of the run (a warning)", "Let heal's stdout be read to its end (`> healed.jsonl`) when the heal log is needed."),
    "E_OUTPUT_STALE_KEPT": ("outputs in --out whose inputs are no longer inputs of the command were changed since they were written: kept (a warning)", "Remove them if they are no longer needed."),
    "E_PYTHON_UNRAISABLE": ("an exception Python could not raise (in a finalizer, at exit), passed on as a log record (a warning; what an interrupt leaves, at debug)", "Read the error and the object; rerun with --log-level debug and report it if it repeats."),
    "E_PYTHON_WARNING": ("a library replay uses (distributed, fsspec, ...) issued a Python warning, passed on as a log record (a warning)", "Read the message and where; it is the library's own, and the command goes on."),
    "E_CLUSTER_TASKS_NOT_STOPPED": ("tasks of a failed command may still run on the Dask cluster (not stopped within the wait, or the scheduler was lost): they may write into, and leave, the folders named (a warning)", "Check the folders named once the cluster's tasks end, and remove what they left."),
}

EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
# Signals that interrupt replay as Ctrl-C does (the CLI makes SIGTERM and SIGHUP act as Ctrl-C; exit 128 + the number)
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def interrupted_exit(signal_number: int) -> int:
    """The exit code of a run an interrupt stopped, as a shell gives it: 128 + the signal's number (130 for Ctrl-C's
    SIGINT, 143 for SIGTERM, 129 for SIGHUP)."""
    return 128 + signal_number


# Field order in the JSON form: identity first, then where, then what to do about it.
_ORDER = ("code", "message", "path", "source", "line", "column", "offset", "stage", "expected", "received", "howToFix", "example")


# The catalogue's advice for a usage error names the command so; an error made while a command runs names it as typed.
COMMAND_PLACEHOLDER = "replay COMMAND"


def how_to_fix(code: str, command: str | None = None) -> str:
    """The advice an error with ``code`` gives when its report has none of its own: the catalogue's, with the
    ``command`` it is about named in it (else the one running: ``running_command``)."""
    if code not in CATALOGUE:
        raise KeyError(f"error code {code} is not in the catalogue")
    return command_named(CATALOGUE[code][1], command)


def command_named(advice: str, command: str | None = None) -> str:
    """``advice`` with the command it is about (else the one running: ``running_command``) in place of the
    catalogue's ``COMMAND_PLACEHOLDER``; also for an advice made where no command ran (a worker process)."""
    if COMMAND_PLACEHOLDER not in advice:
        return advice
    return advice.replace(COMMAND_PLACEHOLDER, command or running_command())


def running_command() -> str:
    """The command being run, as typed (``replay heal``, ``replay incident import``), as the CLI finds it (the path
    of click's current context: ``find_running_command_by``); ``COMMAND_PLACEHOLDER`` outside a command (replay used
    as a library, a worker process)."""
    return _running_command() or COMMAND_PLACEHOLDER


def find_running_command_by(lookup: Callable[[], str | None]) -> None:
    """How ``running_command`` finds the command being run: the CLI says (the engine imports nothing above it)."""
    global _running_command
    _running_command = lookup


def _no_command() -> str | None:
    return None


_running_command: Callable[[], str | None] = _no_command


def diagnostic(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """Build one error record (the body of ``{"error": ...}``); None fields are left out."""
    if "howToFix" not in fields:
        fields["howToFix"] = how_to_fix(code)
    body: dict[str, Any] = {"code": code, "message": message}
    for key in _ORDER[2:]:
        value = fields.pop(key, None)
        if value is not None:
            body[key] = value
    body.update((k, v) for k, v in fields.items() if v is not None)
    return body


def as_received(value: Any, limit: int = 120) -> Any:
    """What an error's ``received`` shows of a value a config gave (an option, a stage's type or id, its inputs): a
    string, number or boolean as itself (a long string cut), anything else as its JSON text (``null``, ``["a"]``, a
    TOML date as its ISO form), never as Python writes it (``None``, ``'a'``, ``True``). A TOML ``inf`` or ``nan``
    (JSON has none: it would be written ``null``) is shown as TOML writes it: ``"inf"``, ``"-inf"``, ``"nan"``."""
    if isinstance(value, str):
        return excerpt(value, limit)
    value = _toml_floats(value)
    if isinstance(value, bool | int | float | str):  # (a str now: an inf or nan, as its TOML text)
        return value
    return excerpt(exactjson.dumps(value, default=str).decode("utf-8", "replace"), limit)


def _toml_floats(value: Any) -> Any:
    """``value`` with each ``inf`` / ``nan`` in it as its TOML text (a string), not the ``null`` JSON would make it."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _toml_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_toml_floats(v) for v in value]
    return value


def excerpt(data: bytes | str, limit: int = 120, *, around: int | None = None) -> str:
    """What an error's ``received`` shows of bad input: its text cut at ``limit`` characters, or with
    ``around``, the ``limit`` characters centred on that position (where a parser gave up)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if around is not None:
        half = limit // 2
        return text[max(0, around - half):around + half] or "empty input"
    return text if len(text) <= limit else text[:limit] + "…"


class NotUtf8(NamedTuple):
    """The first byte of some data that is not part of a UTF-8 character (``utf8_fault``)."""

    offset: int  # of the byte, from the data's start
    line: int  # 1-based
    line_start: int  # offset of that line's first byte, from the data's start
    byte: int
    reason: str  # the codec's: "invalid start byte", "invalid continuation byte", ...
    skipped: int = 0  # bytes of the file before the data (a byte order mark): offsets in the file count them

    @property
    def column(self) -> int:
        """The byte's 1-based column: bytes from its line's start, as every error's ``column`` counts."""
        return self.offset - self.line_start + 1

    @property
    def position(self) -> dict[str, int]:
        """Where an error puts the byte: its ``line``, (byte) ``column`` and the ``offset`` in the file of its line's
        start (as ``exactjson.position`` gives them for a parser's place)."""
        return {"line": self.line, "column": self.column, "offset": self.skipped + self.line_start}

    @property
    def not_json(self) -> str:
        """Why a line holding the byte is no JSON, said after "line N" (the same words wherever a line is read)."""
        return f"is not valid JSON: byte 0x{self.byte:02x} at column {self.column} is not UTF-8 ({self.reason})"


def utf8_fault(data: bytes, skipped: int = 0) -> NotUtf8 | None:
    """Where ``data`` (``skipped`` bytes into its file: after a byte order mark) first stops being UTF-8; None when all
    of it is (ASCII at once). orjson refuses such data at line 1, column 1, wherever the byte is: this says where."""
    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        at = bad.start
        return NotUtf8(at, data.count(b"\n", 0, at) + 1, data.rfind(b"\n", 0, at) + 1, data[at], bad.reason, skipped)
    return None


def invalid_line(raw: bytes, exc: Any, line: int | None) -> dict[str, Any]:
    """Why journal line ``line`` (``raw``, without its newline) is no JSON, as the fields of its E_JSONL_LINE_INVALID
    (``exc``: orjson's JSONDecodeError): ``message``, the byte ``column`` where, ``received``, and a ``howToFix`` when
    the code's own does not say it: at its byte that is not UTF-8 (orjson checks the whole line first and says column
    1), as nested deeper than replay reads, or with orjson's message."""
    bad = utf8_fault(raw)
    if bad is not None:
        return {"message": f"line {line} {bad.not_json}", "column": bad.column, "received": excerpt(raw),
                "howToFix": "Save the journal as UTF-8: the byte at the reported column is not part of a UTF-8 "
                            "character. Other lines are still read."}
    column = exactjson.byte_column(raw, exc.pos)
    if exactjson.too_deep(exc):
        return {"message": f"line {line} is nested deeper than {exactjson.MAX_DEPTH} levels, the most replay reads",
                "column": column, "received": excerpt(raw),
                "howToFix": f"Flatten the payload to at most {exactjson.MAX_DEPTH} levels of arrays and objects (the "
                            "column is where reading stopped). Other lines are still read."}
    fields = {"message": f"line {line} is not valid JSON: {exc.msg} at column {column}", "column": column,
              "received": excerpt(raw)}
    if raw.startswith(exactjson.UTF8_BOM):
        # (every reader leaves one mark out of a line, io.journals.without_mark: this is a second)
        fields["howToFix"] = ("The line starts with two UTF-8 byte order marks: one is left out, the second is not "
                              "JSON. Strip them (`sed 's/^\\(\\xEF\\xBB\\xBF\\)*//'`). Other lines are still read.")
    elif exc.msg == AFTER_DOCUMENT and b"\r" in raw[len(raw[:column - 1].rstrip(b" \t\r")):column - 1]:
        fields["howToFix"] = ("The line holds more than one record, parted by a carriage return (CR): the file ends "
                              "its lines with CR alone (old Mac style), and JSONL lines end with a newline (LF or "
                              "CRLF). Convert the line ends (`tr '\\r' '\\n'`), then read it again.")
    elif piece_of_a_record(raw):
        fields["howToFix"] = PIECE_OF_A_RECORD_FIX
    return fields


PIECE_OF_A_RECORD_FIX = ("The line looks like a piece of a record written over several lines (pretty-printed, as `jq .` "
                         "writes it): write one record a line (`jq -c .`), or let `replay heal` join them. Other lines "
                         "are still read.")


def piece_of_a_record(raw: bytes) -> bool:
    """Does journal line ``raw`` look like a line of a pretty-printed record (what ``jq .`` writes): a lone brace or
    bracket, an indented ``"key": ...``, or an indented array element (``"x",``; the last one, ``"y"`` or ``2``, is
    JSON alone but no object)?"""
    return _PIECE_OF_A_RECORD.fullmatch(raw) is not None


def torn_message(line: int | None, offset: int | None) -> str:
    """E_JSONL_LINE_TORN's message for last line ``line``, which starts at byte ``offset``."""
    return f"last line {line} (byte {offset}) has no newline and is not valid JSON: the write was cut off"


def line_refusal(body: bytes, exc: Any, line: int, offset: int, *, last: bool) -> tuple[str, dict[str, Any]]:
    """Why journal line ``line`` (``body``, without its newline; it starts at byte ``offset``), which orjson refused
    (``exc``), is no JSON, as ``replay read`` says it: its code and the error's fields. ``last``: it has no newline
    after it (the input's last line), so it is torn (E_JSONL_LINE_TORN) unless it is wrong whatever might follow."""
    if last and exactjson.cut_off(body, exc):
        return "E_JSONL_LINE_TORN", {"message": torn_message(line, offset), "line": line, "offset": offset,
                                     "received": excerpt(body)}
    return "E_JSONL_LINE_INVALID", invalid_line(body, exc, line) | {"line": line, "offset": offset}


AFTER_DOCUMENT = "unexpected content after document"  # orjson's words for a complete value with more after it
# A line of a pretty-printed record: a lone brace or bracket, an indented `"key": ...`, or an indented array element
# (a string, a number, true, false, null, `{}` or `[]`, with its comma but the last)
_PIECE_OF_A_RECORD = re.compile(rb'\s*(?:[{}\[\]],?|\s+"[^"]*"\s*:.*'
                                rb'|\s+(?:"(?:[^"\\]|\\.)*"|-?[0-9][-+.0-9eE]*|true|false|null|\{\}|\[\]),?)\s*', re.S)


def utf8_text(data: bytes, code: str, what: str, skipped: int = 0, **fields: Any) -> str:
    """``data`` as text; a byte that is not UTF-8 is refused as ``code``, at its line, (byte) column and the offset of
    its line's start (in the file ``data`` starts ``skipped`` bytes into: after a byte order mark). A command-line
    argument holding such bytes reaches Python as surrogate escapes: pass ``arg.encode("utf-8", "surrogateescape")``,
    its bytes as given."""
    bad = utf8_fault(data, skipped)
    if bad is None:
        return data.decode("utf-8")
    raise ReplayError(code, f"{what} is not UTF-8: byte 0x{bad.byte:02x} at line {bad.line}, column {bad.column} ({bad.reason})",
                      **{**bad.position, "expected": "UTF-8 text", "received": excerpt(data), **fields})


def error_line(body: dict[str, Any]) -> bytes:
    """The one-line JSON form written on stderr; the credentials of a NATS address in it (``nats://USER:PASSWORD@``,
    ``nats://TOKEN@``) shown as ``***``, wherever it is named (a path, a message, what was received)."""
    line = printable_json({"error": body}) + b"\n"
    return _NATS_CREDENTIALS.sub(b"nats://***@", line) if b"nats://" in line else line


_NATS_CREDENTIALS = re.compile(rb"nats://(?:[^/@\s\"\\]|\\.)+@")  # (up to the @ that ends them: a host has none)


def printable_json(value: Any, default: Any = None) -> bytes:
    """``value`` as JSON for stderr, every string in it valid UTF-8 (``printable``: a file name that is not UTF-8
    reaches us with surrogate escapes), so any JSON reader takes the line; what else JSON cannot write, as ``str``
    writes it."""
    try:
        line = exactjson.dumps(value, default=default)
    except TypeError:
        line = b""
    if not line or exactjson.holds_half_a_pair(line):
        with exactjson.deep():  # (``printable`` recurses twice a level: a value as deep as JSON is read, 1024 levels)
            line = exactjson.dumps(printable(value), default=str)
    return line


def printable(value: Any) -> Any:
    """``value`` with every string made valid UTF-8 (undecodable bytes become U+FFFD, half of a surrogate pair its
    ``\\ud83d`` escape)."""
    if isinstance(value, str):
        return utf8(value).decode("utf-8", "replace")
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v) for v in value]
    return value


class ReplayError(Exception):
    """A failure with a catalogue code; the CLI prints it as JSON (``to_json``: ``body``, every field) and exits with
    ``exit_code``. Its ``str()`` (what a traceback and pytest show) is ``CODE: message`` and the advice (howToFix)."""

    def __init__(self, code: str, message: str, *, exit_code: int = EXIT_REFUSED, **fields: Any) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.body = diagnostic(code, message, **fields)

    @property
    def code(self) -> str:
        return self.body["code"]

    @property
    def message(self) -> str:
        """The message alone, as the JSON error's ``message`` has it (``str()`` adds the code and the advice)."""
        return str(self.body.get("message", ""))

    def __str__(self) -> str:
        advice = self.body.get("howToFix")
        return f"{self.code}: {self.message}" + (f"\n  howToFix: {advice}" if advice else "")

    def to_json(self) -> bytes:
        return error_line(self.body)


def input_unreadable(path: str, exc: OSError, /, *, what: str = "", exit_code: int = EXIT_FAILED, **fields: Any) -> ReplayError:
    """A file that cannot be opened or read (a link to nothing, no permission, a folder, a device error): the one
    error every command gives for it, whether it reads the input (``read``), first takes its digest (``heal --in``) or
    reads a file a flag names (``what``: "pipeline config", "context file", ...): the file in ``path`` and ``source``,
    the system's reason in ``received`` (``fields`` say more, or name the place otherwise); exit 1 for an input, as
    the other inputs go on (``exit_code``: 2 for a file read before anything runs)."""
    number, why = os_reason(exc)
    name = f"{what} {printable(path)!r}" if what else repr(printable(path))
    advice = _UNREADABLE_ADVICE.get(number)  # (else the code's own: permissions, the disk)
    return ReplayError("E_INPUT_UNREADABLE", f"cannot read {name}: {why}", exit_code=exit_code,
                       **({"path": path, "source": printable(path), "received": why}
                          | ({"howToFix": advice} if advice else {}) | fields))


def folder_for_a_file(path: str, /, *, what: str, **fields: Any) -> ReplayError:
    """A file a flag names that is a folder (``--rules DIR``, ``--override DIR``): E_INPUT_UNREADABLE, exit 2, as
    reading it fails (EISDIR) wherever that is found out, before or as the file is opened (``fields``: ``path`` naming
    the flag, a ``howToFix`` of its own)."""
    return input_unreadable(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)), what=what,
                            exit_code=EXIT_REFUSED, **({"expected": "a file"} | fields))


_ERRNO_OF = ((FileNotFoundError, errno.ENOENT), (PermissionError, errno.EACCES), (IsADirectoryError, errno.EISDIR),
             (NotADirectoryError, errno.ENOTDIR))


def os_reason(exc: OSError) -> tuple[int, str]:
    """The system's error number and words for ``exc``, also when it was raised without them: fsspec raises
    ``FileNotFoundError(path)``, whose text is the path (said as the reason, it named the file twice)."""
    number = exc.errno or next((n for kind, n in _ERRNO_OF if isinstance(exc, kind)), 0)
    return number, exc.strerror or (os.strerror(number) if number else "") or str(exc) or type(exc).__name__


def exc_reason(exc: BaseException) -> str:
    """What ``exc`` says went wrong, never empty: the system's words for an OSError (``os_reason``), else its text,
    else the name of its type (one raised with no text: ``MemoryError()``, ``TimeoutError()``)."""
    if isinstance(exc, OSError):
        return os_reason(exc)[1]
    return str(exc) or type(exc).__name__


# What to do about an input that cannot be opened, by the system's reason, where permissions and the disk are not it.
_UNREADABLE_ADVICE = {
    errno.ENOENT: "Nothing is there now: a link to nothing, or a file removed meanwhile. Restore it, or remove the link.",
    errno.ELOOP: "It is a symbolic link in a loop (links that point at each other): point it at a file, or remove it.",
    errno.EISDIR: "It is a folder: name a file in it (or pass the folder where a command walks folders).",
}


def refused(code: str, message: str, **fields: Any) -> ReplayError:
    """A refusal the walk specification names (``E_RUN_NOT_FOUND``, ``E_INVALID_RUN_ID``, ``E_STEP_NOT_FOUND``,
    ``E_JOURNAL_READ_FAILED``): exit 2, its name (the code without ``E_``, in lower case: ``run_not_found``) as
    ``refusal``, and the message starting ``REFUSED [name]``, the text the specification has stderr carry."""
    name, text = refusal(code, message)
    return ReplayError(code, text, refusal=name, **fields)


def refusal(code: str, message: str) -> tuple[str, str]:
    """A refusal's name (the code without ``E_``, in lower case) and its message, ``REFUSED [name] message``."""
    name = code.removeprefix("E_").lower()
    return name, f"REFUSED [{name}] {message}"


def optional_module(name: str, needed_for: str, extra: str, how_to_fix: str) -> Any:
    """The module ``name`` of an optional extra, imported; E_EXTRA_NOT_INSTALLED (exit 2) naming what needs it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ReplayError("E_EXTRA_NOT_INSTALLED", f"{needed_for}, which is not installed", received=str(exc),
                          expected=extra, howToFix=how_to_fix) from exc


STDOUT_NAME = "<stdout>"


def write_failed(name: str, exc: OSError, *, exit_code: int = 1) -> ReplayError:
    """E_OUTPUT_WRITE_FAILED for an output that could not be written (disk full, I/O error, ...): the
    path and the system's own words for why (``ENOSPC: No space left on device``)."""
    number, why = os_reason(exc)
    code = errno.errorcode.get(number, "")
    received = f"{code}: {why}" if code else why
    target = "stdout" if name == STDOUT_NAME else repr(name)
    advice = {
        errno.ENOSPC: "Free space on the disk (or write elsewhere), then run the command again.",
        errno.EDQUOT: "Free space within your disk quota (or write elsewhere), then run the command again.",
        errno.EROFS: "The file system is read-only: write elsewhere.",
        errno.EACCES: "You may not write there: check the folder's permissions, or write elsewhere.",
        errno.EPERM: "You may not write there: check the folder's permissions, or write elsewhere.",
        errno.EISDIR: "The path names a folder: name a file (without a trailing '/'), e.g. report.html.",
        errno.EBADF: "Name a file, or a descriptor open for writing (`3> out.jsonl` with `/dev/fd/3`).",
    }.get(number, "Check the disk and the path, then run the command again; nothing partial was left at the path.")
    return ReplayError("E_OUTPUT_WRITE_FAILED", f"writing {target} failed: {why}", path=name, received=received,
                       howToFix=advice, exit_code=exit_code)


def empty_value(subject: str, path: str, *, by_flag: bool, option: str | None = None, names: str = "",
                expected: str = "a value", example: str = "out") -> ReplayError:
    """The one refusal (exit 2, before anything runs) of an option left empty where its value must name something
    (``names``: "file", "folder"; "": anything), named as the user gave it: a command-line flag (``by_flag``:
    ``subject`` and ``path`` are the flag: "--out is empty: it names no folder") is a usage error (E_USAGE_INVALID);
    a config's stage and its ``option`` ("stage 'write' has an empty `path`", at ``path``) a stage option with a wrong
    value (E_CONFIG_OPTION_INVALID)."""
    nothing = f"no {names}" if names else "nothing"
    if by_flag:
        message, fix, shown = (f"{subject} is empty: it names {nothing}",
                               f"Give {subject} {expected}, e.g. `{subject} {example}`.", f"{subject} {example}")
    elif option is not None:
        message, fix, shown = (f"{subject} has an empty `{option}`: it names {nothing}",
                               f"Give its `{option}` {expected}, e.g. `{option} = \"{example}\"`.", f'{option} = "{example}"')
    else:  # (an output no option names)
        message, fix, shown = f"{subject} has an empty output path: it names {nothing}", f"Give it {expected}.", None
    return ReplayError("E_USAGE_INVALID" if by_flag else "E_CONFIG_OPTION_INVALID", message, path=path,
                       expected=expected, received="", howToFix=fix, example=shown)


def option_word(option: str, flags: dict[str, str]) -> str:
    """How a message calls ``option``: the flag that set it (``--case``), else the config's key, quoted as code."""
    return flags.get(option) or f"`{option}`"


def option_setting(option: str, value: str, flags: dict[str, str]) -> str:
    """How the user sets ``option`` to ``value``, for an example: ``--case refund-case``, else ``case = "refund-case"``."""
    flag = flags.get(option)
    return f"{flag} {value}" if flag else f"{option} = {exactjson.dumps(value).decode()}"


def stdout_closed() -> ReplayError:
    """E_OUTPUT_UNWRITABLE: fd 1 is closed (``replay read x >&-``); a refusal, before anything runs."""
    return ReplayError("E_OUTPUT_UNWRITABLE", "stdout is closed: replay writes its results there", path=STDOUT_NAME,
                       expected="an open stdout (a terminal, a pipe or a file)", received="closed (EBADF)",
                       howToFix="Give the command somewhere to write: `> out.jsonl`, `| next-command`, or `> /dev/null`.")


class PipeClosed(Exception):
    """The reader of our stdout went away (``| head``): stop quietly, and exit with the verdict so far (``verdict``).

    ``errors``: those counted before it went (``counted_before``: each layer that counts errors adds its own), so
    `replay validate bad.jsonl | head -1` exits 1, as it would have, and a clean input's filter exits 0."""

    def __init__(self, errors: int = 0) -> None:
        super().__init__()
        self.errors = errors

    @property
    def verdict(self) -> int:
        return EXIT_FAILED if self.errors else EXIT_OK


@contextmanager
def counted_before(errors: int) -> Iterator[None]:
    """Within: a ``PipeClosed`` also counts ``errors``, reported before (an earlier run's, the inputs' done so far)."""
    try:
        yield
    except PipeClosed as exc:
        exc.errors += errors
        raise


class StrictAbort(Exception):
    """Raised inside a graph run when ``--strict`` meets the first error."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.body = body


def refuse_duplicate_key(data: bytes, value: Any, code: str, what: str, skipped: int = 0, *, rooted: bool = False,
                         **fields: Any) -> None:
    """A JSON document a person writes (a pipeline config, a heal rules file, an override sidecar) with a key written
    twice in one object is refused as ``code`` at the second one: a JSON reader keeps the last value without a word,
    and the other may be the one meant. ``value`` is what ``data`` parsed to (the cheap check first); ``skipped``: as
    ``utf8_text``'s; ``rooted``: the error's path as a JSONPath (``$.a.b``, as the document's other refusals name
    theirs), else as a config key (``a.b``)."""
    found = exactjson.duplicates(data, value, skipped)[1]
    if found is None:
        return
    path, where = found
    key = path.removeprefix("$").removeprefix(".")
    raise ReplayError(code, f"{what}: key {key} is written twice in one object",
                      **{**fields, "path": path if rooted else key, **where, "howToFix": "Write each key once: keep the value meant and delete the other."})


def json_document(data: bytes, source: str, code: str, *, not_json: str = "", rooted: bool = False,
                  **fields: Any) -> Any:
    """The JSON document ``data`` (the bytes of ``source``): text that is not UTF-8 or not JSON, or writes a key twice in
    one object, is ``code`` at its line, byte column and line offset (``fields``, ``not_json``: as ``read_json_file``'s;
    ``rooted``: a repeated key's path as a JSONPath, else as a config key). A byte order mark is skipped; positions
    stay file positions."""
    data, skipped = exactjson.skip_bom(data)
    try:
        document = exactjson.loads(data)
    except exactjson.JSONDecodeError as exc:
        utf8_text(data, code, source, skipped, source=source, **fields)  # (orjson: line 1, column 1)
        raise ReplayError(code, f"{source}: {not_json}{exc.msg}", source=source, **fields,
                          **exactjson.error_position(data, exc, skipped)) from exc
    refuse_duplicate_key(data, document, code, source, skipped, rooted=rooted, source=source)
    return document
