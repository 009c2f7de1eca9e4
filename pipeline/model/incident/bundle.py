"""Incident bundles: the sanitized ``incident.json``, the output folder beside it, and promotion to a fixture.

A bundle is data only (it never names an agent or a command)::

    {"schema_version": 1, "kind": "incident-bundle", "incident_id": "inc_<16 hex>", "effects_complete": bool,
     "input": {...}, "events": [...], "assertions": [...], "redaction": {<the value-free audit>},
     "checksum": {"algorithm": "sha256", "value": "<hex>"}}        (promoted fixtures only)

Loading one checks everything an import checks again, that it is in normalised form, and (when it has
one) its checksum: SHA-256 over the bundle without ``checksum``, keys sorted, compact JSON. The
checksum catches accidental edits; it is not a signature and says nothing about where the data came
from.

An output folder must be new or empty; it is filled in a hidden sibling folder and renamed into
place, so it appears whole or not at all. An import of many exports puts each in its own folder,
named one to one after the export's file (``folder_name``). Promotion writes the fixture with ``link(2)``, which never
replaces an existing file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.outputs import is_temp_name, published_name
from replay.pipeline.engine.preflight import refuse_file_in_the_way
from replay.pipeline.io.fdio import write_failed
from replay.pipeline.io.journals import describe_kind, path_kind
from replay.pipeline.io.run_files import file_stem
from replay.pipeline.io.staging import atomic_output, publish_folder, temp_folder
from replay.pipeline.model.incident import export, recheck
from replay.pipeline.model.incident.audit import audit_not_ours
from replay.pipeline.model.incident.export import DEFAULT_LIMITS, Limits, refuse
from replay.pipeline.model.incident.masking import masked, masked_steps, member
from replay.pipeline.model.validation import MISSING, json_type

SCHEMA_VERSION = 1
KIND = "incident-bundle"
BUNDLE_FILE = "incident.json"
FILES = ("incident.json", "redaction.json", "evaluation.json", "report.html", "trace.jsonl", "junit.xml")
REPLAY_FILE = "replay.json"
BUNDLE_KEYS = ("schema_version", "kind", "incident_id", "effects_complete", "input", "events", "assertions", "redaction")


INCIDENT_ID = re.compile(r"inc_[0-9a-f]{16}")  # what ``new_incident_id`` makes


def new_incident_id() -> str:
    return "inc_" + secrets.token_hex(8)


def bundle_document(incident: dict[str, Any]) -> dict[str, Any]:
    """The bundle's fields, in their written order (a checksum is kept when the incident has one)."""
    doc = {key: incident[key] for key in BUNDLE_KEYS}
    if "checksum" in incident:
        doc["checksum"] = incident["checksum"]
    return doc


def canonical_bytes(document: dict[str, Any]) -> bytes:
    return exactjson.dumps({k: v for k, v in document.items() if k != "checksum"}, option=orjson.OPT_SORT_KEYS)


def checksum(document: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def pretty(document: Any) -> bytes:
    return exactjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


# loading ------------------------------------------------------------------------------------------
def resolve_bundle_path(path: str) -> str:
    """A bundle is named by its ``incident.json`` or by the folder holding one."""
    target = Path(path)
    if target.is_dir() and (target / BUNDLE_FILE).is_file():
        return str(target / BUNDLE_FILE)
    return path


def load_bundle(path: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """A checked bundle from ``path``; refused (exit 2) when it is not one, was edited, or breaks an import rule."""
    path = resolve_bundle_path(path)
    where = {"source": path}
    if path and Path(path).is_dir():  # (one with an incident.json was taken for it)
        refuse("E_INPUT_NOT_FILE_OR_DIR", f"bundle folder {path!r} has no {BUNDLE_FILE}", {"path": path},
               expected=f"a bundle's {BUNDLE_FILE}, or the folder an import, inspect or replay wrote", received="a folder without one",
               howToFix=f"Name the {BUNDLE_FILE} itself, or the output folder of `replay incident import`.")
    document = export.parse_json(export.read_limited(path, limits, what="bundle"), where, limits)
    if not isinstance(document, dict) or document.get("kind") != KIND:
        looks_like_export = isinstance(document, dict) and "schema_version" in document and "kind" not in document
        refuse("E_INCIDENT_BUNDLE_INVALID", f"{path!r} is not an incident bundle", {**where, "path": "$.kind"},
               expected=f'"kind": "{KIND}"', received=json_type(document) if not isinstance(document, dict)
               else masked(document["kind"]) if "kind" in document else "no kind",
               howToFix="Run `replay incident import EXPORT --out DIR` first, then use DIR/incident.json."
               if looks_like_export else "Pass the incident.json an import wrote, or a fixture `promote` wrote.")
    if document.get("schema_version") != 1 or isinstance(document.get("schema_version"), bool):
        refuse("E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED", "this version reads bundles of schema_version 1 only",
               {**where, "path": "$.schema_version"}, expected=1, received=masked(document.get("schema_version", MISSING)))
    for key in document:  # (an edited bundle is shown as an export is: where and what kind, never the value or the name)
        if key not in (*BUNDLE_KEYS, "checksum"):
            refuse("E_INCIDENT_FIELD_UNKNOWN", f"the bundle has an unknown field {masked(key)!r}",
                   {**where, "path": "$" + member(key)}, expected="one of: " + ", ".join((*BUNDLE_KEYS, "checksum")),
                   received=masked(key))
    for key in BUNDLE_KEYS:
        if key not in document:
            refuse("E_INCIDENT_FIELD_MISSING", f"the bundle has no {key!r}", {**where, "path": f"$.{key}"}, received="nothing")
    if "checksum" in document:
        _verify_checksum(document, where)
    if not (isinstance(document["incident_id"], str) and document["incident_id"]):
        refuse("E_INCIDENT_FIELD_INVALID", "`incident_id` must be a non-empty string", {**where, "path": "$.incident_id"},
               expected="a string", received=json_type(document["incident_id"]))
    if not isinstance(document["redaction"], dict):
        refuse("E_INCIDENT_FIELD_INVALID", "`redaction` must be the audit object", {**where, "path": "$.redaction"},
               expected="an object", received=json_type(document["redaction"]))
    events = document["events"]
    positions = [{**where, "path": f"$.events[{k}]"} for k in range(len(events))] if isinstance(events, list) else []
    normal = export.assemble(document["input"], document["effects_complete"], events, document["assertions"], positions,
                             {**where, "path": "$"}, limits)
    for k, (mine, theirs) in enumerate(zip(normal["events"], events, strict=True)):
        if mine != theirs:
            refuse("E_INCIDENT_BUNDLE_INVALID", f"event {k} of the bundle is not in normalised form", {**where, "path": f"$.events[{k}]"},
                   expected="call ids c1, c2, ... in call order; tool_result with result and error", received="another form",
                   howToFix="Bundles are written by `replay incident import`; import the export again rather than editing one.")
    if not INCIDENT_ID.fullmatch(document["incident_id"]):
        refuse("E_INCIDENT_FIELD_INVALID", "`incident_id` is not one an import makes (inc_ and 16 hex digits)",
               {**where, "path": "$.incident_id"}, expected="inc_ and 16 hex digits", received="another string",
               howToFix="Bundles are written by `replay incident import`; import the export again rather than editing one.")
    rule_ids = [str(rule["id"]) for rule in document["assertions"] if isinstance(rule, dict) and isinstance(rule.get("id"), str)]
    wrong = audit_not_ours(document["redaction"], document["incident_id"], rule_ids)
    if wrong is not None:
        at = masked_steps(["redaction", *wrong])
        refuse("E_INCIDENT_NOT_REDACTED", f"the bundle's redaction audit holds at {at} what an import does "
               "not write there (it holds counts and fixed warnings only): read no further, nothing is written",
               {**where, "path": at}, expected="the audit as `replay incident import` writes it",
               received="another value",
               howToFix="Import the export again (`replay incident import EXPORT --out DIR`) rather than editing a bundle.")
    found = recheck.unredacted(document)
    if found is not None:  # (an import wrote none such: one edited by hand, or written by something else)
        tokens, kinds = found
        path = "$" + "".join(f"[{t}]" if isinstance(t, int) else f".{t}" for t in tokens)
        what = "a member name" if tokens[-1] == recheck.NAME else "a value"
        refuse("E_INCIDENT_NOT_REDACTED", f"the bundle holds {what} at {path} that redaction would change "
               f"({', '.join(k.replace('_', ' ') for k in kinds) or 'redacted'}): an import never leaves one, so it is "
               "read no further and nothing is written", {**where, "path": path},
               expected="values as `replay incident import` redacts them", received=kinds,
               howToFix="Import the export again (`replay incident import EXPORT --out DIR`) rather than editing a bundle; "
                        "to take a value out, import with --redact POINTER.")
    return document


def _verify_checksum(document: dict[str, Any], where: dict[str, Any]) -> None:
    stated = document["checksum"]
    if not (isinstance(stated, dict) and set(stated) == {"algorithm", "value"} and stated["algorithm"] == "sha256"
            and isinstance(stated["value"], str)):
        refuse("E_INCIDENT_FIELD_INVALID", "`checksum` must be {\"algorithm\": \"sha256\", \"value\": \"<hex>\"}",
               {**where, "path": "$.checksum"}, received=json_type(stated))
    actual = checksum(document)
    if actual != stated["value"]:
        refuse("E_INCIDENT_CHECKSUM_MISMATCH", "the fixture's content does not match its SHA-256 checksum: it was edited",
               {**where, "path": "$.checksum.value"}, expected=stated["value"], received=actual,
               howToFix="Restore the fixture from version control, or import and promote the incident again.")


# output folders -----------------------------------------------------------------------------------
def refuse_non_folder_out(out: str, flag: str | None = None) -> None:
    """Refuse an --out that exists and is no folder (a file, a link): an import never writes over it. ``flag``: the
    command-line flag that named ``out`` (``--out``), which the refusal names as its path (else ``out``)."""
    target = Path(out)
    kind = path_kind(target)
    if target.is_symlink() or kind in ("file", "other"):
        refuse("E_INCIDENT_OUTPUT_NOT_EMPTY", f"{_out_named(flag)} {out!r} exists and is not a folder", {"path": flag or out},
               expected="a new or empty folder",
               received="a symbolic link" if target.is_symlink() else describe_kind(kind))


def _out_named(flag: str | None) -> str:
    """What a message calls an output folder: the flag that named it (``--out``), else (a config's option, which the
    path names: ``Stage.as_named``; a folder made in one) the folder."""
    return flag or "the output folder"


def check_output_folder(out: str, flag: str | None = None) -> None:
    """Refuse an --out that exists and is not an empty folder, or under a file (before anything runs). ``flag``: the
    command-line flag that named ``out`` (``--out``), which a refusal names as its path (else ``out`` itself: a folder
    made under the flag's, or a config's)."""
    refuse_non_folder_out(out, flag)
    refuse_file_in_the_way(out, flag)
    target = Path(out)
    if target.is_dir() and any(not is_temp_name(entry.name) for entry in target.iterdir()):  # (readers skip those)
        refuse("E_INCIDENT_OUTPUT_NOT_EMPTY", f"{_out_named(flag)} {out!r} is not empty", {"path": flag or out},
               expected="a new or empty folder", received="a folder with files",
               howToFix="Choose a fresh folder for every run; earlier results are never overwritten.")


def folder_name(path: str, root: str = "") -> str:
    """The folder an export gets in an import of many: its path relative to ``root`` (its file name when
    ``root`` is empty) without the export suffix, as ``file_stem`` writes it (``sub/a.json`` -> ``sub%2Fa``).
    One to one: two exports share a name only when they differ in their suffix alone."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root)) if root else os.path.basename(path)
    rel = rel.replace(os.sep, "/")
    for suffix in sorted({s for found in export.EXPORT_SUFFIXES.values() for s in found}, key=len, reverse=True):
        if rel.endswith(suffix) and len(rel) > len(suffix):
            rel = rel[: -len(suffix)]
            break
    return file_stem(rel)


def write_folder(out: str, files: dict[str, bytes], *, replace: bool = False) -> None:
    """Create folder ``out`` holding ``files``, all at once: staged in a hidden sibling, then renamed; an existing
    empty ``out`` is filled in place (its mode and owner kept): staged inside it, the files moved in at the end
    (``publish_folder``). A system error (disk full, ...) is E_OUTPUT_WRITE_FAILED and leaves no folder at ``out``
    (an existing one stays empty).

    ``replace``: ``out`` is one export's folder inside a command's own folder of many (a run resumed, an
    export that changed): a folder already there is moved aside under a temp name, the new one renamed
    into place and the old one removed, so a reader finds the old folder whole, the new one whole, or none.
    Errors name ``out`` where it is once a folder of many it is staged in is in place (``published_name``)."""
    if not replace:
        check_output_folder(out)
    target = Path(out)
    final = published_name(out)
    try:
        with temp_folder(target, inside=not replace and target.is_dir()) as staging:
            for name, data in files.items():
                try:
                    with atomic_output(staging / name) as handle:  # (no fsync each: inside a staged folder)
                        handle.write(data)
                except ReplayError as exc:  # (it names a file in the staging folder, which nobody sees: ``out`` is named)
                    if isinstance(exc.__cause__, OSError):
                        raise exc.__cause__ from None
                    raise
            try:
                publish_folder(staging, target, replace=replace)  # over an empty folder, or where nothing was
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    raise
                raise ReplayError("E_INCIDENT_OUTPUT_NOT_EMPTY", f"--out {final!r} was filled by someone else meanwhile: "
                                  f"{exc.strerror}", path=final, exit_code=1) from exc
    except OSError as exc:
        raise write_failed(final, exc) from exc


# promotion ----------------------------------------------------------------------------------------
def refuse_existing_fixture(to: str) -> None:
    target = Path(to)
    if target.exists() or target.is_symlink():
        kind = path_kind(target)
        received = ("a symbolic link to nothing" if kind is None else describe_kind(kind) if kind == "other"
                    else describe_kind(kind, "an existing"))
        refuse("E_INCIDENT_PROMOTE_TARGET_EXISTS", f"{to!r} already exists; promote never overwrites a fixture", {"path": to},
               expected="a path where nothing is", received=received,
               howToFix="Choose another name, or delete the old fixture yourself if it is really to be replaced.")


def promote(document: dict[str, Any], to: str, limits: Limits = DEFAULT_LIMITS, source: str = "") -> dict[str, Any]:
    """Write the bundle with its checksum to ``to``; never replaces an existing file, nor writes one larger than
    ``limits`` read (``source``: the bundle it was read from)."""
    doc = {k: v for k, v in bundle_document(document).items() if k != "checksum"}
    digest = checksum(doc)
    data = pretty({**doc, "checksum": {"algorithm": "sha256", "value": digest}})
    export.refuse_too_large("bundle", source or to, len(data), limits, written=True)
    refuse_existing_fixture(to)
    try:
        with atomic_output(to, overwrite=False) as handle:
            handle.write(data)
    except FileExistsError:  # the name was taken meanwhile
        refuse_existing_fixture(to)
        raise
    return {"incident_id": doc["incident_id"], "promoted": to, "sha256": digest, "bytes": len(data)}
