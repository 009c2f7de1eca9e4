"""The schemas in schemas/ against the fixtures, and against `replay validate`, so code and schemas cannot drift.

Fixture conventions (tests/fixtures/artifacts/):
- valid/: every *.json passes replay-artifact.schema.json, every *.jsonl line passes stream.schema.json,
  and `replay validate` finds no problem in any of them;
- invalid/: each file is named after the one code it triggers (CODE.json or CODE.variant.json[l]);
  the schema rejects it and `replay validate` reports that code and no other;
- semantic/: problems a JSON Schema cannot state (seq order, a seq written 1.0): the schema accepts the file and
  `replay validate` reports the code in its name.

Journals "claim to be canonical" when they are .jsonl files under examples/ (unless a path part says
raw, broken, messy, invalid or unhealed) or under tests/fixtures/ in a directory named valid, canonical or
healed, or named *.canonical.jsonl / *.healed.jsonl; the corpus of foreign formats never does.
Schemas written by others (heal-log, heal-rules, runner-output) are checked against
tests/fixtures/<schema name>/{valid,invalid}/ once both exist.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, ROOT, errors_of, jsonl, run_replay
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from replay.pipeline.model.incident.redactor import Redactor

SCHEMAS = ROOT / "schemas"
ARTIFACTS = FIXTURES / "artifacts"
SCHEMA_FILES = sorted(SCHEMAS.glob("*.schema.json"))
CODE_NAME = re.compile(r"^(E_[A-Z0-9_]+)(\.[\w-]+)*\.jsonl?$")
OTHERS_SCHEMAS = ("heal-log", "heal-rules", "runner-output")


def _load(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


@functools.cache
def registry() -> Registry:
    resources = [(_load(p)["$id"], Resource.from_contents(_load(p))) for p in SCHEMA_FILES]
    return Registry().with_resources(resources)


@functools.cache
def validator(stem: str) -> Draft202012Validator:
    schema = _load(SCHEMAS / f"{stem}.schema.json")
    return Draft202012Validator(schema, registry=registry(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(stem: str, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(stem).iter_errors(instance)]


def fixtures(folder: str) -> list[Path]:
    return sorted(p for p in (ARTIFACTS / folder).iterdir() if p.suffix in (".json", ".jsonl"))


def ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def lines_of(path: Path) -> list[Any]:
    return jsonl(path.read_bytes())


# the schemas themselves -----------------------------------------------------------------------
@pytest.mark.parametrize("path", SCHEMA_FILES, ids=ids(SCHEMA_FILES))
def test_every_schema_is_a_valid_2020_12_schema(path: Path) -> None:
    schema = _load(path)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/" + path.name), "the $id names the file, so relative $refs resolve"
    Draft202012Validator.check_schema(schema)


def test_the_artifact_schema_and_the_bundled_schemas_are_the_same_files() -> None:
    listed = run_replay("schema")
    assert listed.returncode == 0
    assert "replay-artifact" in listed.stdout.decode().split()
    printed = run_replay("schema", "replay-artifact")
    assert orjson.loads(printed.stdout) == _load(SCHEMAS / "replay-artifact.schema.json")


def test_date_time_format_is_really_checked() -> None:
    # Without rfc3339-validator installed, jsonschema silently accepts any string as a date-time.
    assert schema_errors("event", {"seq": 1, "timestamp": "yesterday", "type": "t", "runId": "r", "payload": {}})


def test_artifact_events_are_canonical_events_by_reference() -> None:
    """The artifact schema does not restate the event: it refers to event.schema.json."""
    items = _load(SCHEMAS / "replay-artifact.schema.json")["properties"]["events"]["items"]
    assert items == {"$ref": "event.schema.json"}
    bad_event = {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "t", "runId": "r", "payload": {}, "synthetic": False}
    artifact = _load(ARTIFACTS / "valid" / "minimal.json") | {"events": [bad_event]}
    assert schema_errors("replay-artifact", artifact)


# replay validate over whole fixture folders, once per folder ----------------------------------------
@functools.cache
def validate_folder(folder: str) -> tuple[int, dict[str, dict], dict[str, list[dict]]]:
    """Exit code, summary line by source, and error bodies by source of `replay validate --in folder`."""
    done = run_replay("validate", "--in", str(ARTIFACTS / folder))
    summaries = {Path(s["source"]).name: s for s in jsonl(done.stdout)}
    errors: dict[str, list[dict]] = {}
    for body in errors_of(done.stderr):
        errors.setdefault(Path(body["source"]).name, []).append(body)
    return done.returncode, summaries, errors


VALID = fixtures("valid")
INVALID = fixtures("invalid")
SEMANTIC = fixtures("semantic")


def test_fixture_folders_are_not_empty() -> None:
    assert VALID and INVALID and SEMANTIC


@pytest.mark.parametrize("path", VALID, ids=ids(VALID))
def test_valid_fixture_passes_the_schema(path: Path) -> None:
    if path.suffix == ".json":
        assert schema_errors("replay-artifact", _load(path)) == []
    else:
        for n, record in enumerate(lines_of(path), 1):
            assert schema_errors("stream", record) == [], f"line {n}"


@pytest.mark.parametrize("path", VALID, ids=ids(VALID))
def test_valid_fixture_passes_replay_validate(path: Path) -> None:
    code, summaries, errors = validate_folder("valid")
    assert errors.get(path.name, []) == []
    assert summaries[path.name]["valid"] is True
    assert code == 0


def test_valid_folder_exits_zero_with_one_summary_per_file() -> None:
    code, summaries, errors = validate_folder("valid")
    assert code == 0 and errors == {}
    assert sorted(summaries) == sorted(p.name for p in VALID)


def _code_of(path: Path) -> str:
    match = CODE_NAME.match(path.name)
    assert match, f"{path.name} must be named after its error code"
    return match.group(1)


@pytest.mark.parametrize("path", INVALID, ids=ids(INVALID))
def test_invalid_fixture_fails_the_schema(path: Path) -> None:
    try:
        records = [_load(path)] if path.suffix == ".json" else lines_of(path)
    except orjson.JSONDecodeError:
        assert _code_of(path) == "E_ARTIFACT_JSON_INVALID"  # not even JSON: no schema can accept it
        return
    stem = "replay-artifact" if path.suffix == ".json" else "stream"
    assert any(schema_errors(stem, record) for record in records), f"the {stem} schema accepts {path.name}"


@pytest.mark.parametrize("path", INVALID + SEMANTIC, ids=ids(INVALID + SEMANTIC))
def test_invalid_fixture_fails_replay_validate_with_its_code(path: Path) -> None:
    folder = path.parent.name
    code, summaries, errors = validate_folder(folder)
    assert code == 1
    found = errors.get(path.name, [])
    assert {body["code"] for body in found} == {_code_of(path)}
    assert summaries[path.name]["valid"] is False
    assert summaries[path.name]["errors"] == len(found)
    for body in found:
        assert body["path"].startswith("$")
        for key in ("message", "expected", "received", "howToFix"):
            assert key in body, f"{key} missing from {body}"


@pytest.mark.parametrize("path", SEMANTIC, ids=ids(SEMANTIC))
def test_semantic_fixture_passes_the_schema(path: Path) -> None:
    """These problems are beyond what a JSON Schema can say: only replay validate sees them."""
    if path.suffix == ".json":
        assert schema_errors("replay-artifact", _load(path)) == []
    else:
        for record in lines_of(path):
            assert schema_errors("stream", record) == []


def test_the_event_schema_says_the_seq_rule_it_cannot_state() -> None:
    """JSON Schema 2020-12's integer takes 1.0, which `replay validate` refuses as a seq (semantic/ ...fraction.jsonl):
    the schema, the single source of truth for the format, states the stricter rule in seq's description."""
    seq = _load(SCHEMAS / "event.schema.json")["properties"]["seq"]
    assert seq["type"] == "integer" and validator("event").is_valid({**_EVENT, "seq": 1.0})
    assert "1.0" in seq["description"] and "replay validate" in seq["description"]


_EVENT = {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r", "payload": {}}


def test_every_artifact_code_has_an_invalid_fixture() -> None:
    named = {_code_of(p) for p in INVALID + SEMANTIC}
    content_codes = {
        "E_ARTIFACT_JSON_INVALID", "E_ARTIFACT_SHAPE_INVALID", "E_ARTIFACT_TYPE_INVALID", "E_SCHEMA_VERSION_UNSUPPORTED",
        "E_ARTIFACT_ID_INVALID", "E_ARTIFACT_STATUS_INVALID", "E_ARTIFACT_EVENTS_INVALID", "E_ARTIFACT_EVENT_INVALID",
        "E_ARTIFACT_EVENT_TYPE_INVALID", "E_ARTIFACT_EVENT_SEQ_INVALID", "E_ARTIFACT_EVENT_TIMESTAMP_INVALID",
    }
    assert content_codes <= named


# journals that claim to be canonical ----------------------------------------------------------------
NOT_CANONICAL_PARTS = ("raw", "broken", "messy", "odd", "invalid", "unhealed", "session")  # session journals: replay schema session
CANONICAL_DIRS = {"valid", "canonical", "healed"}


def claims_canonical(path: Path) -> bool:
    if not path.name.endswith((".jsonl", ".ndjson")):
        return False
    if path.is_relative_to(EXAMPLES):
        parts = [part.lower() for part in path.relative_to(EXAMPLES).parts]
        return not any(word in part for part in parts for word in NOT_CANONICAL_PARTS)
    rel = path.relative_to(FIXTURES)
    if rel.parts[0] == "corpus" or "invalid" in rel.parts or "semantic" in rel.parts:
        return False
    return bool(CANONICAL_DIRS & set(rel.parts[:-1])) or path.name.endswith((".canonical.jsonl", ".healed.jsonl"))


CANONICAL = sorted(p for base in (EXAMPLES, FIXTURES) for p in base.rglob("*") if p.is_file() and claims_canonical(p))


def test_canonical_journals_are_found() -> None:
    assert ARTIFACTS / "valid" / "two-runs.jsonl" in CANONICAL


@pytest.mark.parametrize("path", CANONICAL, ids=[str(p.relative_to(ROOT)) for p in CANONICAL])
def test_canonical_journal_events_match_the_event_schema(path: Path) -> None:
    for n, record in enumerate(lines_of(path), 1):
        if "$record" in record:
            assert schema_errors("stream", record) == [], f"{path.name} line {n}"
        else:
            assert schema_errors("event", record) == [], f"{path.name} line {n}"


# schemas other people write, against their fixtures ------------------------------------------------
# Besides tests/fixtures/<schema>/{valid,invalid}/*.json, files named by these conventions anywhere under
# examples/ and tests/fixtures/ must validate (unless a path part says invalid or broken).
NAMED_LIKE = {"heal-log": ("*.heal-log.json",), "heal-rules": ("heal.rules.json", "*.rules.json"), "runner-output": ()}
REQUEST = {"prompt": "What are my top holdings?", "query": "What are my top holdings?", "runId": "run_schema_check",
           "timestamp": "2026-03-01T12:00:00.000Z", "context": {}}


def _deliberately_bad(path: Path) -> bool:
    return any(word in part.lower() for part in path.parts for word in ("invalid", "broken"))


def other_fixtures(stem: str) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(name, instance) pairs that must pass and must fail the schema ``stem``."""
    folder = FIXTURES / stem
    valid = [(p.name, _load(p)) for p in sorted((folder / "valid").glob("*.json"))]
    invalid = [(p.name, _load(p)) for p in sorted((folder / "invalid").glob("*.json"))]
    for pattern in NAMED_LIKE[stem]:
        for base in (EXAMPLES, FIXTURES):
            for p in sorted(base.rglob(pattern)):
                if p.is_relative_to(folder) or _deliberately_bad(p.relative_to(ROOT)):
                    continue
                valid.append((str(p.relative_to(ROOT)), _load(p)))
    if stem == "runner-output":
        # The example runners' own output: what a user copies must satisfy the contract.
        for runner in sorted((EXAMPLES / "runners").glob("echo_runner.py")):
            done = subprocess.run([sys.executable, str(runner)], input=orjson.dumps(REQUEST), capture_output=True, timeout=60)
            assert done.returncode == 0, done.stderr
            valid.append((str(runner.relative_to(ROOT)), orjson.loads(done.stdout)))
    return valid, invalid


@pytest.mark.parametrize("stem", OTHERS_SCHEMAS)
def test_other_schemas_against_their_fixtures(stem: str) -> None:
    if not (SCHEMAS / f"{stem}.schema.json").exists():
        pytest.skip(f"schemas/{stem}.schema.json is not written yet")
    valid, invalid = other_fixtures(stem)
    if not (valid or invalid):
        pytest.skip(f"no {stem} fixtures yet (tests/fixtures/{stem}/valid|invalid, or files named {NAMED_LIKE[stem]})")
    for name, instance in valid:
        assert schema_errors(stem, instance) == [], name
    for name, instance in invalid:
        assert schema_errors(stem, instance), f"the {stem} schema accepts {name}"


# reserved records: the stream schema and `replay validate` give the same verdict -------------------
def _ev(seq: int, kind: str) -> dict[str, Any]:
    return {"seq": seq, "timestamp": "2026-03-01T12:00:00.000Z", "type": kind, "runId": "r1", "payload": {}}


HEALED_RUN = [{"$record": "run", "runId": "r1", "status": "ok", "response": "hi"}, _ev(1, "run_started"),
              _ev(2, "assistant_message"), _ev(3, "run_completed")]
AUDIT = Redactor().audit()  # what a redact stage sends at the end of the records it redacted
RESERVED_RECORDS = {
    "heal": {"$record": "heal", "runId": "r1", "repairs": 2, "byRule": {"alias": 2}},
    "heal-null-run-id": {"$record": "heal", "runId": None, "repairs": 1},
    "heal-run-dropped": {"$record": "heal", "runId": "r1", "repairs": 1, "runDropped": True},
    "heal-run-dropped-false": {"$record": "heal", "runId": "r1", "repairs": 1, "runDropped": False},
    "heal-run-dropped-string": {"$record": "heal", "runId": "r1", "repairs": 1, "runDropped": "yes"},
    "heal-extra-field": {"$record": "heal", "runId": "r1", "repairs": 1, "note": "kept"},
    "heal-no-run-id": {"$record": "heal", "repairs": 1},
    "heal-zero-repairs": {"$record": "heal", "runId": "r1", "repairs": 0},
    "heal-by-rule-zero": {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"alias": 0}},
    "source": {"$record": "source", "source": "a.jsonl"},
    "source-extra-field": {"$record": "source", "source": "a.jsonl", "note": "x"},
    "redaction": {"$record": "redaction", **AUDIT},
    "redaction-incident-id": {"$record": "redaction", **AUDIT, "incident_id": "inc_0123456789abcdef"},
    "redaction-extra-field": {"$record": "redaction", **AUDIT, "note": "Jane called"},
    "redaction-no-warnings": {"$record": "redaction", **{k: v for k, v in AUDIT.items() if k != "warnings"}},
    "redaction-negative-count": {"$record": "redaction", **AUDIT, "pointer_removed": -1},
    "summary": {"$record": "summary", "runId": "r1"},
    "diagnostics": {"$record": "diagnostics"},
}


@pytest.mark.parametrize("name", sorted(RESERVED_RECORDS))
def test_validate_agrees_with_the_stream_schema_on_a_reserved_record(name: str) -> None:
    record = RESERVED_RECORDS[name]
    schema_says = schema_errors("stream", record) == []
    done = run_replay("validate", "-", input=b"".join(orjson.dumps(r) + b"\n" for r in [*HEALED_RUN, record]))
    found = errors_of(done.stderr)
    assert (done.returncode == 0 and found == []) is schema_says, (schema_says, found)
    assert all(body["code"] == "E_EVENT_INVALID" for body in found), found


# dropped records: one shape, whoever left the line out ---------------------------------------------
DROPPED_INPUTS = {
    "too-long-line": ("run.jsonl", b'{"a":1}\n{"pad":"' + b"x" * 3000 + b'"}\n'),  # read leaves it out
    "too-long-document": ("run.json", orjson.dumps({"events": [{"pad": "x" * 3000}]}, option=orjson.OPT_INDENT_2)),
    "not-utf-8": ("run.jsonl", b'{"a":\xff}\n'),  # parse leaves it out
    "too-deep": ("run.jsonl", b"[" * 1100 + b"]" * 1100 + b"\n"),
    "not-an-object": ("run.jsonl", b'{"a":1}\n[1]\n'),
    "torn": ("run.jsonl", b'{"a":1}\n{"a":'),
    "cut-off-document": ("run.json", orjson.dumps({"events": [{"pad": "x"}]}, option=orjson.OPT_INDENT_2)[:-3]),
}


@pytest.mark.parametrize("name", sorted(DROPPED_INPUTS))
def test_a_dropped_record_has_one_shape_and_carries_the_advice_on_stderr(name: str, tmp_path: Path) -> None:
    """read writes a dropped record for a line it left out (too long) as for one parse left out (not UTF-8, too deep):
    the stream schema's shape, with the error's howToFix, which a parse down the pipe gives again."""
    file, data = DROPPED_INPUTS[name]
    path = tmp_path / file
    path.write_bytes(data)
    done = run_replay("read", "--max-line-bytes", "2500", str(path))
    [error] = errors_of(done.stderr)
    [mark] = [r for r in jsonl(done.stdout) if r.get("$record") == "dropped"]
    assert schema_errors("stream", mark) == []
    # (beside the error's fields, the line itself: whole, or its start with its length when the record must fit the limit)
    assert {k: v for k, v in mark.items() if k not in ("original", "originalBytes")} == \
        {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}
    again = run_replay("validate", "-", input=done.stdout)
    [repeated] = [e for e in errors_of(again.stderr) if e["code"] == error["code"]]
    assert repeated["howToFix"] == error["howToFix"]


def test_the_chunk_check_has_a_class_for_every_type_the_session_schema_gives_a_chunk_field() -> None:
    """Found by review: a chunk field of a type the chunk check has no class for fails here, not as a KeyError."""
    from replay.pipeline.model.session_rules import _TYPES, chunk_rules

    assert all(rule["type"] in _TYPES for rule in chunk_rules()[1].values() if "type" in rule)


def test_the_keys_the_code_allows_are_read_from_the_schemas_so_a_key_added_to_a_schema_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: the keys the script loader and the heal-rules loader allow were copied by hand from the
    schemas that state them; now they are read from the schemas (``schema_facts``). A `note` the bundled schemas refuse
    is refused; added to a copy of the schemas the code reads instead, it is accepted (and for the heal rules, a
    string property, checked as a string), and the error lists the keys in the schema's order."""
    import shutil

    from replay.pipeline.engine.errors import ReplayError
    from replay.pipeline.model import schema_facts
    from replay.pipeline.model.healing import load_rules
    from replay.pipeline.model.session import groups_from_script

    group = {"turn": 1, "step": 0, "chunks": [{"type": "finish", "finishReason": "stop"}]}
    script, in_group = {"version": 1, "groups": [group], "note": "x"}, {"version": 1, "groups": [{**group, "note": "x"}]}
    rules = tmp_path / "rules.json"
    rules.write_bytes(b'{"note": "ours", "eventAliases": {}}')

    def refusal(call: Any, *args: Any) -> dict[str, Any]:
        with pytest.raises(ReplayError) as info:
            call(*args)
        return info.value.body

    copy = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, copy)
    monkeypatch.setattr(schema_facts, "_source", lambda: copy)
    schema_facts.forget()
    try:
        for at, refused in ((".", refusal(groups_from_script, script)), (".groups[0].", refusal(groups_from_script, in_group)),
                            (".", refusal(load_rules, rules))):
            assert refused["path"] == f"${at}note" and "note" not in refused["expected"]
        read = {name: orjson.loads((copy / f"{name}.schema.json").read_bytes()) for name in ("replay-script", "heal-rules")}
        for properties in (read["replay-script"]["properties"], read["replay-script"]["$defs"]["group"]["properties"],
                           read["heal-rules"]["properties"]):
            properties["note"] = {"type": "string"}
        for name, document in read.items():
            (copy / f"{name}.schema.json").write_bytes(orjson.dumps(document))
        schema_facts.forget()
        assert len(groups_from_script(script)) == len(groups_from_script(in_group)) == 1
        assert load_rules(rules) == {"note": "ours", "eventAliases": {}}
        rules.write_bytes(b'{"note": 5}')
        assert refusal(load_rules, rules)["path"] == "$.note"  # a string property of the schema, checked as one
        rules.write_bytes(b'{"notes": "ours"}')
        assert refusal(load_rules, rules)["expected"] == "one of: " + ", ".join(read["heal-rules"]["properties"])
    finally:
        schema_facts.forget()  # (the next test reads the bundled schemas again)


def test_the_format_versions_are_read_from_the_schemas_so_a_new_const_is_written_and_required(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: the replay-script `version` (1) and the heal rules' `version` ("v1") were constants in code
    beside the schemas' `const`. They are read from the schemas now: with the const changed in a copy of the schemas,
    a script is written with the new version, the old one is refused, and the heal rules want the new one."""
    import shutil

    from replay.pipeline.engine.errors import ReplayError
    from replay.pipeline.model import schema_facts
    from replay.pipeline.model.healing import load_rules
    from replay.pipeline.model.session import groups_from_script, script_document

    group = {"turn": 1, "step": 0, "chunks": [{"type": "finish", "finishReason": "stop"}]}
    rules = tmp_path / "rules.json"
    copy = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, copy)
    for name, value in (("replay-script", 2), ("heal-rules", "v2")):
        document = orjson.loads((copy / f"{name}.schema.json").read_bytes())
        document["properties"]["version"] = {"const": value}
        (copy / f"{name}.schema.json").write_bytes(orjson.dumps(document))
    monkeypatch.setattr(schema_facts, "_source", lambda: copy)
    schema_facts.forget()
    try:
        groups = groups_from_script({"version": 2, "groups": [group]})
        assert script_document(groups)["version"] == 2
        with pytest.raises(ReplayError) as info:
            groups_from_script({"version": 1, "groups": [group]})
        assert info.value.body["path"] == "$.version" and info.value.body["expected"] == 2
        rules.write_bytes(b'{"version": "v2"}')
        assert load_rules(rules) == {"version": "v2"}
        rules.write_bytes(b'{"version": "v1"}')
        with pytest.raises(ReplayError) as info:
            load_rules(rules)
        assert info.value.body["expected"] == "v2" and '"v2"' in info.value.body["example"]
    finally:
        schema_facts.forget()
