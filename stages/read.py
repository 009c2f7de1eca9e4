"""ReadJournal: the source that reads journal files, directories, gzip and stdin into line batches."""

from __future__ import annotations

import os
from typing import Any

import anyio
import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import READ_WHOLE, Batch, duplicate_key_note
from replay.pipeline.engine.errors import PipeClosed, ReplayError, diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.share import command_inputs
from replay.pipeline.engine.stage import Option, Output, Source
from replay.pipeline.io.fdio import FdReader, file_removed, pause_grace, ready_soon, silence_stdout, stdout_reader_gone
from replay.pipeline.io.journals import (
    BATCH_EVENTS,
    CHUNK_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    DOCUMENT,
    DOCUMENT_SUFFIXES,
    LINES,
    STDIN,
    HeadFormat,
    Item,
    LineCutter,
    Reader,
    document_too_long,
    expand_paths,
    is_document,
    is_record_array,
    open_journal,
    opened,
    path_kind,
    source_name,
    warn_inputs_not_found,
)
from replay.pipeline.io.run_files import HEALED, is_raw_capture
from replay.pipeline.model.artifacts import document_items, note_lacking
from replay.pipeline.model.dropped import dropped_lines
from replay.pipeline.model.records import DOCUMENT_RECORD, RECORD_KEY, SOURCE_RECORD, dropped_record
from replay.pipeline.model.runs import Inputs
from replay.pipeline.model.validation import JsonLinesHead, document_not_json, named_document_refusal


class _Reached(Exception):
    """The read got to ``end_offset``."""


_READ_THE_REST = "The lines before the offset given came out; read the rest again from a whole copy of the input."

@register("read")
class ReadJournal(Source):
    summary = "Read journals (files, directories, .gz, stdin) as line batches with positions."
    options = {
        "paths": Option(list, [], "files or directories to read; empty means the command's PATHs, else stdin",
                        bind="args"),
        "listed": Option(bool, False, "the paths are files the command found itself (a folder's walk, handed on): one "
                         "not there when read (a link to nothing the walk met, a file removed meanwhile) is reported "
                         "unreadable as it is read and the others read on; a path named so is refused before anything runs"),
        "walked": Option(list, [], "the folders a command walked for its ``listed`` paths (an output inside one is "
                         "refused before anything runs: the next run would read it)", items=str),
        "follow": Option(bool, False, "keep reading a journal that is still being written (like tail -f)"),
        "max_line_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "longest line accepted; longer lines are reported and skipped",
                                 minimum=1),
        "poll_seconds": Option(float, 0.2, "how often --follow looks for new data", minimum=0.001),
        "json_files": Option(str, "split", "a .json file (one JSON document): 'split' into its run record and events, "
                             "or 'whole' as one {\"$record\": \"document\"} record (what validate checks against the artifact schema; "
                             "stdin holding one artifact too; "
                             "an array, a journal written as one (an OpenHands event list too), and a mini-swe-agent "
                             "trajectory are split)",
                             choices=("split", "whole")),
        "documents": Option(bool, True, "an input whose text is one JSON document (an array of records, an artifact, "
                            "another agent's log in one object) is read whole and split into its records; false: every "
                            "input is JSON lines, one record a line (a session journal: `replay script`), so a line that "
                            "is an array is a line that is no object (E_EVENT_NOT_OBJECT), whatever else the input holds"),
        "end_offset": Option(int, 0, "stop reading each input at this byte offset: the lines that start before it are "
                             "read, nothing after (0: read it all); `replay walk --at` sets it to where the step ends", minimum=0),
        "start_offset": Option(int, 0, "read each input from this byte offset on (like `tail -c +N`), which must be a "
                               "line's first byte (0, or the byte after a newline); its lines keep their numbers and "
                               "offsets in the whole file. Only JSON lines of a regular local file: stdin, a URL, "
                               ".gz, --follow and a file read whole as one JSON document are refused when it is > 0. "
                               "With end_offset: the lines that start in [start_offset, end_offset)", minimum=0),
        "mark_sources": Option(bool, True, "with several inputs, put a {\"$record\": \"source\"} line before each "
                               "one's records, so a stream piped on keeps the files apart"),
        "mark_named_documents": Option(bool, False, "put that {\"$record\": \"source\"} line before another agent's "
                                       "log read whole (an OpenHands event list, a mini-swe-agent trajectory) from a named "
                                       "file even when it is the only input: its run is named after the file, and a "
                                       "stream piped on names it so too (`replay read x.json | replay heal` as "
                                       "`replay heal x.json`), not `stdin`"),
        "heal_records": Option(bool, False, "put a {\"$record\": \"heal\"} record after a healed artifact's events, "
                               "holding its `heal` block (repairs, byRule): its repairs, counted wherever the artifact "
                               "is read from (a report of a copy, of stdin, of `replay read` piped on), as heal's "
                               "stream form of the run holds them (heal leaves it out: a healed copy's is written anew)"),
        "mark_dropped": Option(bool, False, "put a {\"$record\": \"dropped\"} line where a line was skipped (too long) "
                               "or an input's reading failed, so a parse down the pipe reports it again"),
    }
    emits_raw = True
    # notices: a JSON document read whole (an artifact, an array, a trajectory) with a key written twice in one object
    # (E_JSON_DUPLICATE_KEY, a warning): only the last value of each is read, and nothing after has its bytes
    ports = ("errors", "notices")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cutter: LineCutter | None = None  # the input being cut into lines (for where a read error stopped)
        self.chunk = CHUNK_BYTES
        self.batch_events = BATCH_EVENTS
        self._short = False
        self._filled = False  # the head's last read filled its chunk (``LineCutter.feed``'s ``may_end`` when it did not)
        self._files: list[str] | None = None
        self.inputs = Inputs()  # which input of its name the lines read are of (each source line sent begins one)
        self._unmarked: str | None = None  # (mark_named_documents) the named input being read that no source line marks yet
        self._grace: float | None = None  # how long a live writer is silent for a pause (``pause_grace``), read once

    def reads_stdin_unnamed(self) -> bool:
        return not self.config["paths"]

    def reads_stdin(self) -> str | None:
        if STDIN in self.config["paths"]:  # (`-` named: in the config's paths, or as the command's argument)
            return self.named(None if "paths" in self.args_keys else "paths")[1]
        return super().reads_stdin()

    def input_files(self) -> list[str]:
        """The files this read will read, found once: the preflight asks first, and the read reads that list."""
        if self._files is None:
            # (refuses a missing input before anything runs; one the command listed is reported as it is read)
            self._files = expand_paths(self.config["paths"], listed=self.config["listed"])
        return self._files

    def input_folders(self) -> list[str]:
        """The folders among this read's paths, as given (each is walked for its journals: ``input_files``); when they
        are ``listed`` (files a command's walk found, not looked at again: a link in a loop is reported as read), the
        folders it ``walked``."""
        if self.config["listed"]:
            return list(self.config["walked"])
        return [path for path in self.config["paths"] if path not in (STDIN, "") and path_kind(path) == "directory"]

    def preflight(self, inputs: list[str]) -> None:
        """Stdin (`-`) named once at most (it can be read once: a second `-` read nothing, without a word); with
        ``start_offset``: every input must be read from it (``line_start.offset_refusal``), before anything runs. The
        pause grace (``pause_grace``: REPLAY_PAUSE_GRACE_MS) is read here, once, so a value that is no number of
        milliseconds is refused before anything is read, whatever the inputs are (files, which never pause, too)."""
        self._grace = pause_grace()
        if self.config["paths"].count(STDIN) > 1:
            typed = "paths" in self.args_keys
            raise ReplayError("E_USAGE_INVALID" if typed else "E_CONFIG_OPTION_INVALID",
                              "stdin ('-') is named twice: it can be read once", received="-",
                              path=STDIN if typed else self.named("paths")[1], expected="'-' once at most",
                              howToFix="Name '-' once; to read the same journal twice, save it to a file and name "
                                       "the file twice.")
        start = self.config["start_offset"]
        if start <= 0:
            return
        from replay.pipeline.io.line_start import offset_refusal  # (here: a read from the start does not load it)

        _, where = self.named("start_offset")
        fix = ("Give the offset of a line's first byte (0, or the byte right after a newline) in a regular file of "
               "JSON lines, not compressed, named on the command line.")
        if self.config["follow"]:
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"start_offset {start} with follow: a followed file is read "
                              "from its start", path=where, received=start, howToFix="Leave out follow, or start_offset.")
        for path in self.input_files():
            refusal = offset_refusal(path, start, self.config["max_line_bytes"])
            if refusal is not None:
                why, there = refusal
                raise ReplayError("E_CONFIG_OPTION_INVALID", f"start_offset {start} does not fit {source_name(path)!r}: {why}",
                                  path=where, source=source_name(path), offset=start, received=there,
                                  expected="the offset of a line's first byte in a regular file of JSON lines",
                                  howToFix=fix)

    async def produce(self, out: Output) -> None:
        end = self.config["end_offset"]
        if end <= 0:
            await self._produce(out)
            return

        async def send(batch: Batch) -> None:
            offsets = batch.offsets
            last = batch.raws[-1] if batch.raws else None
            if offsets and offsets[-1] is not None and last is not None and not batch.tail_open \
                    and offsets[-1] + len(last) + 1 < end:
                await out.send(batch)
                return
            await out.send(batch.select([i for i, o in enumerate(offsets) if o is None or o < end]))
            raise _Reached()

        try:
            await self._produce(Output(send, out.drain, out.stage_id))
        except _Reached:
            await out.drain()

    def emit(self, port: str, record: dict[str, Any]) -> None:
        """With ``end_offset``, problems past the end (a line too long after it) are not this read's."""
        end = self.config["end_offset"]
        offset = record.get("offset")
        if end > 0 and port == "errors" and isinstance(offset, int) and offset >= end:
            return
        super().emit(port, record)

    async def _produce(self, out: Output) -> None:
        dropped_lines(self.shared)  # the stages after know the lines left out are noted (none so far)
        if self._grace is None:  # (a read run without its preflight: a library's, a test's)
            self._grace = pause_grace()
        files = self.input_files()
        if not files and self.config["paths"] and self.log is not None:  # (folders that hold nothing to read)
            warn_inputs_not_found(self.log, "read.nothing_found", self.config["paths"], "read")
        mark = self.config["mark_sources"] and max(len(files), command_inputs()) > 1
        for path in files:
            source = source_name(path)  # a name for diagnostics, valid UTF-8
            if mark:  # downstream, even through a pipe, each file stays a source of its own
                await out.send(_source_mark(source))
                self.inputs.begin(source)
            self._unmarked = source if not mark and path != STDIN and self.config["mark_named_documents"] else None
            self._cutter = None
            try:
                if self.config["start_offset"] > 0:
                    await self._read_from(path, source, out)
                    continue
                named = path.endswith(DOCUMENT_SUFFIXES) and self.config["documents"]
                # (a named .json file is one JSON document: not followed, read whole as without --follow)
                follow = self.config["follow"] and not named
                async with open_journal(path, follow) as reader:
                    if self.config["json_files"] == "whole" and named:
                        await self._read_whole(reader, source, out)
                    else:
                        await self._read_one(reader, source, out, named, path == STDIN, follow)
            except ReplayError as exc:
                if exc.code not in ("E_INPUT_UNREADABLE", "E_GZIP_INVALID"):
                    raise
                advice = {"howToFix": _READ_THE_REST} if self._some_came_out() else {}  # (else the code's own holds)
                where = self._stopped_at()
                if not where and exc.code == "E_GZIP_INVALID":  # (a document read whole: none of it came out)
                    where = {"line": 1, "offset": 0}
                await self._send([exc.body | {"source": source} | where | advice], out)
            except OSError as exc:  # the disk or device failed mid-read (EIO, ECONNRESET, ...): this input ends here
                if isinstance(exc, BrokenPipeError):
                    raise
                await self._send([self._read_failed(source, exc)], out)

    async def _read_from(self, path: str, source: str, out: Output) -> None:
        """A regular file of JSON lines from ``start_offset`` (a line's first byte: ``preflight`` checked) on, straight
        to line cutting (no head is judged mid-file); each line numbered and placed as in a read of the whole file."""
        from replay.pipeline.io.line_start import lines_before

        start = self.config["start_offset"]
        cutter = self._cutter = LineCutter(source, self.config["max_line_bytes"], self.batch_events)
        with opened(path) as fd:
            cutter.line += await lines_before(fd, start)
            cutter.offset = os.lseek(fd, start, os.SEEK_SET)
            reader = FdReader(fd, "file")
            while data := await self._read_next(reader, cutter, out):
                await self._send(cutter.feed(data, may_end=len(data) < self.chunk), out)
            await self._send(cutter.finish(), out)

    def _stopped_at(self) -> dict[str, Any]:
        """Where an input's reading stopped (the first line not read whole): line 1, offset 0 when it stopped at its
        first byte (a gzip corrupt from its start)."""
        cutter = self._cutter
        return {} if cutter is None else {"line": cutter.line, "offset": cutter.offset}

    def _some_came_out(self) -> bool:
        """Had the input any bytes read before its reading stopped?"""
        cutter = self._cutter
        return cutter is not None and (cutter.offset != 0 or bool(cutter.pending))

    def _read_failed(self, source: str, exc: OSError) -> dict[str, Any]:
        """A read error mid-input: where it stopped (the first line not read whole), and why."""
        where = self._stopped_at() or {"line": 1, "offset": 0}  # (no cutter yet: its first bytes failed)
        why = exc.strerror or str(exc) or type(exc).__name__
        if not self._some_came_out():
            return diagnostic("E_INPUT_UNREADABLE", f"reading {source!r} failed: {why}", source=source, received=why,
                              **where)
        return diagnostic("E_INPUT_UNREADABLE",
                          f"reading {source!r} failed at byte {where['offset']} (line {where['line']}): {why}; the lines "
                          "before it were read, nothing from there on", source=source, line=where["line"],
                          offset=where["offset"], received=why, howToFix="Read the input again once the device or "
                          "connection works; the lines before the offset given came out already.")

    async def _read_whole(self, reader: Reader, source: str, out: Output) -> None:
        """One JSON document, whole: a document record, or E_ARTIFACT_JSON_INVALID where it does not parse; one
        longer than max_line_bytes is not read past its limit (E_JSONL_LINE_TOO_LONG, as ``_read_one`` says it). An
        array is no artifact but a journal written as one: its records, as ``_read_one`` gives them; so is another
        agent's run in one object (a trajectory)."""
        data, eof, _, lines_fault = await self._read_head(reader, self.config["max_line_bytes"], [], whole=True,
                                                          capped=True)
        data, skipped = exactjson.skip_bom(data)
        if lines_fault is not None:  # JSON lines: no one document, told from its head
            await self._send([self._not_json(source, data, lines_fault, skipped)], out)
            return
        if not eof:  # longer than max_line_bytes: not read past it
            await self._send([self._document_too_long(source, skipped)], out)
            return
        try:
            document = exactjson.loads(data)
        except orjson.JSONDecodeError as exc:
            await self._send([self._not_json(source, data, exc, skipped)], out)
            return
        self._note_duplicates(source, data, document, skipped)
        from replay.pipeline.model.dialects.detect import document_dialect

        if is_record_array(document):  # no artifact: a journal written as an array (another agent's event list too),
            # split into its records as a read of it splits them (`dialect` maps another agent's)
            await self._mark_named(document, out)
            await self._send(list(document_items(document, source, self.batch_events)), out)
            return
        if document_dialect(document) is not None:  # no artifact: another agent's run in one object, for `dialect`
            await self._mark_named(document, out)
            await self._send([_trajectory_batch(document, source)], out)
            return
        await self._send([_document_batch(document, source)], out)

    async def _mark_named(self, document: Any, out: Output) -> None:
        """(``mark_named_documents``) Before another agent's log read whole from a named file that no source line marks
        (the only input): a source line naming the file, as one goes before each of several inputs. Such a run takes
        its id from the file's name (``dialect``); down a pipe, without it, the name would be the pipe's (`stdin`)."""
        source, self._unmarked = self._unmarked, None
        if source is None:
            return
        from replay.pipeline.model.dialects.detect import document_dialect

        if document_dialect(document) is not None:
            await out.send(_source_mark(source))
            self.inputs.begin(source)

    def _note_duplicates(self, source: str, data: bytes, document: Any, skipped: int) -> None:
        """A document read whole (``data``, ``skipped`` bytes into its input; ``document`` read from it) with a key
        written twice in one object: said on the notices port, where the first such key is written again (a JSONL
        line's are said where it is written anew: ``Batch.replace``, ``dialect``; here every record is)."""
        note = duplicate_key_note(data, document, {"source": source}, outcome=READ_WHOLE, document=skipped)
        if note is not None:
            self.emit("notices", {**note, "stage": self.id})

    def _not_json(self, source: str, data: bytes, exc: orjson.JSONDecodeError, skipped: int) -> dict[str, Any]:
        """A .json file (one JSON document) that does not parse: E_ARTIFACT_JSON_INVALID where parsing stopped (sent
        as a diagnostic: with ``mark_dropped`` a dropped record stands for it, so a parse down the pipe says it too);
        ``data`` starts ``skipped`` bytes into the file (a byte order mark): offsets stay positions in the file."""
        return diagnostic(**document_not_json(data, exc, skipped), source=source, stage=self.id)

    def _refused(self, source: str, refusal: dict[str, Any], value: Any, skipped: int) -> dict[str, Any]:
        """A named .json file whose one JSON value is no artifact to read (``validation.artifact_refusal``: no object,
        no ``events`` array, a format replay does not know), refused as one error for the file at line 1, with the
        code and words validate uses for it: not read as a record (its one line) nor as lines (each no JSON alone). A
        capture's raw side file (its runner's output) is said to be one, with what to read instead."""
        if is_raw_capture(source, value):  # (its artifactType, "raw-capture", is refused before its missing events)
            refusal["howToFix"] = (f"It is a capture's raw runner output (the request, the runner's stdout and stderr): "
                                   f"read the run's {HEALED} beside it, or its journal (DATA_DIR/journal/RUN_ID.jsonl).")
        return diagnostic(refusal.pop("code"), refusal.pop("message"), source=source, line=1, offset=skipped,
                          stage=self.id, **refusal)

    async def _read_one(self, reader: Reader, source: str, out: Output, named_document: bool = False,
                        on_stdin: bool = False, follow: bool = False) -> None:
        """One journal: decide its format from the head, then stream its lines (or its document); with --follow, go
        on reading the lines written after. A file named as one JSON document (``.json``) that reads as one, not as
        lines, but does not parse is E_ARTIFACT_JSON_INVALID, as validate says: not a journal whose last line was
        cut off (its lines are no records), so nothing of it is healed into something made up. So is stdin whose
        head opens a document over lines (``head_format``: DOCUMENT, held whole as a file's is) when it ends inside
        that document (cut off mid-write). Pretty-printed records one after another (`jq . run.jsonl |`) are no
        document cut off (its text goes on after the first record): they stay lines, for join_split_records, longer
        than ``max_line_bytes`` too (each record is held to it, not the stream). ``follow``: go on reading what is
        written after (``read --follow``; never a named .json file: read whole)."""
        limit = self.config["max_line_bytes"]
        cutter = self._cutter = LineCutter(source, limit, self.batch_events)
        head_parts: list[bytes] = []  # the head as it is read
        fed = False  # has the cutter the head?
        # Reading stopped while the input had nothing more for now (what the cutter holds is then its unfinished last
        # line): --follow stopped after a read that found nothing, or a pipe (a terminal, a socket) in a read, which
        # waits only while it has nothing more.
        idle = reader.may_wait
        try:
            whole = named_document  # (a named .json file is one JSON document, whatever its lines)
            documents = self.config["documents"]  # (false: JSON lines whatever the head looks like)
            head, eof, kind, lines_fault = await self._read_head(reader, limit, head_parts, whole, lines=not documents)
            fed = True
            as_read = head  # (its lines go to the cutter as read: it leaves out a mark opening the first line, as any line's)
            head, cutter.offset = exactjson.skip_bom(head)  # offsets stay positions in the file
            if eof and documents:  # all of it is read: one JSON text, maybe
                value, fault = parsed = _parsed(head)
                if fault is None and on_stdin and self.config["json_files"] == "whole" and _one_artifact(value):
                    # (stdin holding one artifact is judged as one, as a named .json file is: ``_read_whole``)
                    self._note_duplicates(source, head, value, cutter.offset)
                    await self._send([_document_batch(value, source)], out)
                    return
                # (an artifact in a format replay does not know is refused wherever it is read from: a named .json
                # file, stdin, one line of a journal: its events are not read as if they were this replay's)
                if fault is None and (named_document or is_document(value)) \
                        and (refusal := named_document_refusal(value)) is not None:
                    await self._send([self._refused(source, refusal, value, cutter.offset)], out)
                    return
                if fault is None and is_document(value):
                    self._note_duplicates(source, head, value, cutter.offset)
                    note_lacking(self.shared, source, value)  # (what heal --in fills into its healed copy, and logs)
                    await self._mark_named(value, out)
                    await self._send(list(document_items(value, source, self.batch_events,
                                                         heal=self.config["heal_records"])), out)
                    return
                if (trajectory := _dialect_document(head, parsed)) is not None:  # e.g. a mini-swe-agent .traj.json
                    self._note_duplicates(source, head, trajectory, cutter.offset)
                    await self._mark_named(trajectory, out)
                    await self._send([_trajectory_batch(trajectory, source)], out)
                    return
                if not follow and fault is not None and (named_document or (
                        kind == DOCUMENT and head.strip() and on_stdin and exactjson.cut_off(head, fault))):
                    await self._send([self._not_json(source, head, fault, cutter.offset)], out)
                    return
            if lines_fault is not None:  # JSON lines, told from the head (``_read_head``: as read whole, validate)
                await self._send([self._not_json(source, head, lines_fault, cutter.offset)], out)
                return
            if not eof and documents and (whole or (kind == DOCUMENT and _one_text_so_far(head))):
                # read whole up to the limit, and it goes on: one error (not for a head that already holds a whole
                # value and more after it, pretty-printed records one after another: lines, as when it all fits)
                await self._send([self._document_too_long(source, cutter.offset)], out)
                return
            cutter.offset = 0
            if eof and not follow:
                await self._send([*cutter.feed(as_read, may_end=True), *cutter.finish()], out)
                return
            # (held while the next read does not wait: ``LineCutter.feed``, ``_read_next``; a followed file's end is
            # only where its writer has got to: never held)
            items = cutter.feed(as_read, may_end=not (follow or self._filled))
            await self._send(items, out, pause=self._short and await self._waits(reader, cutter, follow))
            at_end = eof  # the last read found nothing more
            told_removed = False  # (--follow: the file's removal is said once)
            rewind = getattr(reader, "rewind_if_truncated", None) if follow else None
            while True:
                idle = at_end or reader.may_wait
                # (asked before each read, not after one that found nothing: a file truncated and written past where
                # the read had got to between two looks is told by the bytes before that place, ``FdReader``)
                if rewind is not None and rewind():  # the file was truncated: it starts over, as `tail -f` reads it
                    await self._send(cutter.finish(), out)  # a line it cut off was torn
                    if self.log is not None:
                        self.log.warning("read.truncated", code="E_INPUT_TRUNCATED", source=source, offset=cutter.offset,
                                         message=f"{source} was truncated; reading it again from its start")
                    cutter = self._cutter = LineCutter(source, limit, self.batch_events)  # (its mark: a line's)
                data = await self._read_next(reader, cutter, out)
                idle = at_end = not data
                if data:
                    short = len(data) < self.chunk
                    items = cutter.feed(data, may_end=short and not follow)
                    await self._send(items, out, pause=short and await self._waits(reader, cutter, follow))
                elif follow:
                    if not told_removed and file_removed(reader):  # (tail -f's wait, with a word of why nothing comes)
                        told_removed = True
                        self._removed(source, cutter.offset)
                    await out.drain()
                    if stdout_reader_gone():  # (`read --follow x | head -1`: ends now, as a closed pipe ends a read,
                        silence_stdout()  # not at the file's next write, which may never come; exit 0, not a word)
                        raise PipeClosed()
                    await anyio.sleep(self.config["poll_seconds"])
                else:
                    break
        except anyio.get_cancelled_exc_class():  # Ctrl-C (or a failure elsewhere) stopped the read
            if not fed:  # (stopped while reading the head: the cutter holds it)
                cutter.feed(b"".join(head_parts))  # (as read: the cutter leaves out a mark opening a line)
            if idle:
                self._unfinished(cutter, source)
            raise
        await self._send(cutter.finish(), out)

    async def _read_next(self, reader: Reader, cutter: LineCutter, out: Output) -> bytes:
        """The next read of an input. What the cutter holds back (``LineCutter.feed``: the lines before an open one,
        which joins them if the input ends there) stays held only while that read does not wait: a file's, or a pipe's
        whose writer has written more, writes more within a short grace or is gone (``ready_soon``: `cat run.jsonl |
        replay heal` batches and logs as `replay heal run.jsonl`, however `cat` is scheduled). Before a read that
        waits (a live writer's pause, mid-line: `tail -f log |`) it goes on now, marked as a pause, as it came; where
        the read fails too (a truncated .gz, a failed read: every whole line before it comes out first)."""
        try:
            if cutter.holding and reader.may_wait and not await ready_soon(reader, self._grace):
                await self._send(cutter.release(), out, pause=True)
            return await reader.read(self.chunk)
        except (ReplayError, OSError):
            await self._send(cutter.release(), out)
            raise

    async def _waits(self, reader: Reader, cutter: LineCutter, follow: bool) -> bool:
        """After a short read (all the input had for now) that left no line held back: does the input wait here (a
        pause)? A followed file's does (its end is where its writer has got to); a pipe's, a socket's, a terminal's
        when its writer writes nothing more within a short grace (``ready_soon``: a writer that was only not scheduled
        yet is no pause, which would send the run in progress the slow way); a file's never. (A line held back: the
        next read decides, ``_read_next``.)"""
        if cutter.holding:
            return False
        if not reader.may_wait:
            return follow
        return not await ready_soon(reader, self._grace)

    def _removed(self, source: str, offset: int) -> None:
        """--follow read to the end of a file that was removed meanwhile: it goes on following what it opened, as
        ``tail -f`` does (a writer that holds the file open may still add to it), and says so once, with how to end."""
        if self.log is not None:
            self.log.warning("read.removed", code="E_INPUT_REMOVED", source=source, offset=offset,
                             message=f"{source} was removed; still following the file that was opened, as `tail -f` "
                             "does (a writer that holds it open may add to it). Ctrl-C ends --follow; a new file at "
                             "that path is not this one: `replay read --follow` it again to read it")

    def _unfinished(self, cutter: LineCutter, source: str) -> None:
        """--follow (or Ctrl-C on a pipe) stopped while the input's last line had no newline yet: that line was not
        read, and the user is told where it starts (it is read once it is whole: `replay read` the file again then)."""
        size = len(cutter.pending)
        if size and self.log is not None:
            self.log.warning("read.unfinished", code="E_JSONL_LINE_UNFINISHED", source=source, line=cutter.line, offset=cutter.offset, bytes=size,
                             message=f"{source}: line {cutter.line} (byte {cutter.offset}, {size} bytes so far) was not "
                             "read: it has no newline yet (its writer had not finished it when reading stopped)")

    def _document_too_long(self, source: str, offset: int) -> dict[str, Any]:
        fields = document_too_long(self.config["max_line_bytes"])
        what = fields.pop("what")
        return diagnostic("E_JSONL_LINE_TOO_LONG", f"{source} is {what}; not read", source=source, line=1, offset=offset,
                          **fields)

    async def _read_head(self, reader: Reader, limit: int, parts: list[bytes], whole: bool = False,
                         capped: bool = False, lines: bool = False) -> tuple[bytes, bool, str | None, orjson.JSONDecodeError | None]:
        """The first bytes of an input, enough to choose its format; all of it (up to ``limit``) when
        it is one JSON document, as a named .json file (``whole``) is, of one line or several (JSON lines in it too:
        it is judged as one artifact, as validate judges it); ``capped``: no byte past ``limit`` + 1 is read (a
        document read whole: ``_read_whole``). Returns (bytes, reached end of input, ``head_format`` of them (not
        judged when ``whole``: no format is chosen), the JSON-lines fault that ended a ``whole`` read early, else None);
        ``parts`` holds what was read so far (where reading stopped before it was done), joined as ``HeadFormat`` joins it.

        A ``whole`` input holds JSON lines when its first ``limit`` + 1 bytes do (``validation.JsonLinesHead``, as the walk
        tells them), the bytes returned with the fault being those it was told from. ``lines``: the input is JSON lines
        whatever its head (``documents`` false): its first chunk is all the head there is."""
        judge = HeadFormat(parts)
        json_lines = JsonLinesHead(limit) if whole else None  # (a named .json file: JSON lines in it told from its head)
        while True:
            data = await reader.read(min(self.chunk, limit + 1 - judge.size) if capped else self.chunk)
            if not data:
                return judge.head(), True, judge.kind, None
            self._short = reader.may_wait and len(data) < self.chunk  # the input may have nothing more for now
            self._filled = len(data) == self.chunk
            kind = judge.feed(data, judge=not whole)
            if json_lines is not None and (told := json_lines.feed(data)) is not None:
                return told[0], False, kind, told[1]  # JSON lines: no one document, told from the head
            if lines or kind == LINES or judge.size > limit:
                return judge.head(), False, kind, None

    async def _send(self, items: list[Item], out: Output, pause: bool = False) -> None:
        batches: list[Batch] = []
        marks: list[Batch] = []  # (mark_dropped) the dropped records not yet placed: each goes where its line was
        for item in items:
            if isinstance(item, dict):
                item.setdefault("stage", self.id)
                self.emit("errors", item)
                dropped_lines(self.shared).note(*self.inputs.at(item.get("source")), item.get("line"), item.get("code"))
                if self.config["mark_dropped"]:
                    marks.append(_dropped(item))
            else:
                batches.append(_placed(item, marks) if marks else item)
        batches += marks
        if pause and batches:
            batches[-1].pause = True
        elif pause and self._cutter is not None:  # (only diagnostics, or nothing whole yet: the pause still goes on)
            batches.append(Batch.pause_mark(self._cutter.source, raw=True))
        for batch in batches:
            await out.send(batch)
        if self._side:
            await out.drain()


def _source_mark(source: str) -> Batch:
    """The source line that goes before an input's records: the records after it came from ``source``."""
    return Batch.of([{RECORD_KEY: SOURCE_RECORD, "source": source}], source)


def _document_batch(document: Any, source: str) -> Batch:
    """One JSON document read whole, as one {"$record": "document"} record (``json_files`` "whole": validate's)."""
    batch = Batch.of([{RECORD_KEY: DOCUMENT_RECORD, "document": document}], source)
    batch.pointers = ["$"]
    return batch


def _one_artifact(value: Any) -> bool:
    """Is ``value``, a whole input's one JSON value, an artifact (an object with an ``events`` array), not another
    agent's run in one object? What ``json_files`` "whole" reads as one document record from stdin too."""
    from replay.pipeline.model.dialects.detect import document_dialect

    return isinstance(value, dict) and is_document(value) and document_dialect(value) is None


def _dropped(diagnostic: dict[str, Any]) -> Batch:
    """The dropped record that stands in the stream for what ``diagnostic`` reports (a line left out, where a read
    failed), at its line and offset: the shape parse writes (the diagnostic's fields but who reported it)."""
    where = {k: v for k, v in diagnostic.items() if k not in ("code", "message", "stage")}
    mark = dropped_record(diagnostic["code"], diagnostic["message"], where)
    return Batch(diagnostic.get("source", "<stdin>"), None, [exactjson.dumps(mark)], [diagnostic.get("line")],
                 [diagnostic.get("offset")])


def _placed(batch: Batch, marks: list[Batch]) -> Batch:
    """``batch`` with the dropped records of ``marks`` whose lines lie before its last line put in their places (a line
    too long is cut out of the batch it came in); the others stay in ``marks``, for the batches after it."""
    last = batch.lines[-1] if len(batch) else None
    if last is None:
        return batch
    inside = [m for m in marks if m.lines[0] is not None and m.lines[0] <= last]
    if not inside:
        return batch
    marks[:] = [m for m in marks if m not in inside]
    rows = sorted([*zip(batch.lines, batch.raws, batch.offsets, strict=True),
                   *((m.lines[0], m.raws[0], m.offsets[0]) for m in inside)], key=lambda row: row[0] or 0)
    out = Batch(batch.source, None, [r[1] for r in rows], [r[0] for r in rows], [r[2] for r in rows],
                tail_open=batch.tail_open)
    return out


def _one_text_so_far(head: bytes) -> bool:
    """Could ``head``, an input's first bytes (past a byte order mark), still be the start of one JSON text? Not when
    it holds a whole value with more after it, or a wrong token: then the input is no one document, however long."""
    fault = _parsed(head)[1]
    return fault is None or exactjson.cut_off(head, fault)


def _parsed(data: bytes) -> tuple[Any, orjson.JSONDecodeError | None]:
    """``data``, a whole input, read as one JSON text: (its value, None), or (None, why it is none)."""
    try:
        return exactjson.loads(data), None
    except orjson.JSONDecodeError as exc:
        return None, exc


def _trajectory_batch(trajectory: dict[str, Any], source: str) -> Batch:
    """A whole input that is another agent's run in one object, as one record (``dialect`` maps it)."""
    return Batch(source, [trajectory], [None], [None], [None], ["$"])


def _dialect_document(head: bytes, parsed: tuple[Any, orjson.JSONDecodeError | None]) -> dict[str, Any] | None:
    """A whole input that is one JSON object holding another agent's run (read whole, mapped by ``dialect``);
    ``parsed`` is ``_parsed(head)``. (Whitespace before the object is JSON's: what else comes first makes the input
    lines to ``head_format``, and so no whole input here.)"""
    body = head.lstrip()
    if not body.startswith(b"{") or b"\n" not in body.rstrip():
        return None  # one line: the line reader takes it as a record
    value, fault = parsed
    if fault is not None:
        return None
    from replay.pipeline.model.dialects.detect import is_dialect_document

    return value if is_dialect_document(value) else None
