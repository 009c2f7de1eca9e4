"""A .json artifact that is no artifact replay can read is refused by read, report and heal as validate refuses it."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import errors_of, jsonl, run_replay
from heal_support import ev

T = "2026-03-01T12:00:00Z"


def _artifact(run: str, **changes: object) -> dict:
    doc = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": run, "timestamp": T, "prompt": "p", "query": "p",
           "status": "ok", "events": [ev(1, "run_started", run=run), ev(2, "run_completed", run=run)]}
    return {k: v for k, v in (doc | changes).items() if v is not None}


def _folder(tmp_path: Path, bad: dict[str, bytes]) -> Path:
    """A folder with the ``bad`` files and one good journal beside them (still read and healed)."""
    src = tmp_path / "in"
    src.mkdir()
    for name, data in bad.items():
        (src / name).write_bytes(data)
    (src / "good.jsonl").write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in _artifact("g")["events"]))
    return src


def _codes(stderr: bytes) -> dict[str, str]:
    return {Path(e["source"]).name: e["code"] for e in errors_of(stderr)}


def _every_command_says(tmp_path: Path, bad: dict[str, bytes], codes: dict[str, str]) -> None:
    """validate, read, report and heal (filter and directory mode) give each bad file its one code, exit 1, and
    read and heal the good journal beside it all the same."""
    src = _folder(tmp_path, bad)
    files = [str(src / name) for name in bad]
    validate = run_replay("validate", *files)
    said = {(Path(e["source"]).name, e["code"]) for e in errors_of(validate.stderr)}
    assert validate.returncode == 1 and set(codes.items()) <= said, validate.stderr
    for args in (["read", *files, str(src / "good.jsonl")], ["report", *files], ["report", "--in", str(src)],
                 ["heal", *files]):
        done = run_replay(*args)
        assert done.returncode == 1, (args, done.stderr)
        assert _codes(done.stderr) == codes, (args, done.stderr)
        assert len(errors_of(done.stderr)) == len(codes), (args, done.stderr)  # one error a file
    read = run_replay("read", *files, str(src / "good.jsonl"))
    assert [r.get("type") for r in jsonl(read.stdout) if "$record" not in r] == ["run_started", "run_completed"]
    out = tmp_path / "out"
    heal = run_replay("heal", "--in", str(src), "--out", str(out))
    assert heal.returncode == 1 and _codes(heal.stderr) == codes, heal.stderr
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["good.heal-log.json", "good.healed.jsonl"]


def test_an_object_without_an_events_array_is_refused_everywhere_not_read_as_one_event(tmp_path: Path) -> None:
    """`{"id": ..., "status": ...}` in x.json (no `events`) was one event to read, a run of 1 unknown event to report,
    and a healed artifact made of a typeless event to heal --in; validate said E_ARTIFACT_EVENTS_INVALID. A single
    event in a .json file is such an object too (validate judges a .json object an artifact)."""
    no_events = json.dumps(_artifact("x", events=None)).encode() + b"\n"
    not_a_list = json.dumps(_artifact("y", events={"seq": 1})).encode()
    one_event = json.dumps(ev(1, "run_started", run="r")).encode() + b"\n"
    pretty = json.dumps(_artifact("z", events=None), indent=2).encode()
    _every_command_says(tmp_path, {"x.json": no_events, "y.json": not_a_list, "one.json": one_event, "z.json": pretty},
                        dict.fromkeys(["x.json", "y.json", "one.json", "z.json"], "E_ARTIFACT_EVENTS_INVALID"))


def test_an_artifact_that_is_no_object_is_shape_invalid_everywhere(tmp_path: Path) -> None:
    """`"str"` in a .json file was E_EVENT_NOT_OBJECT (and E_ARTIFACT_EVENTS_INVALID from heal --in); validate said
    E_ARTIFACT_SHAPE_INVALID, the seed's code for an artifact that is no object."""
    _every_command_says(tmp_path, {"s.json": b'"str"\n', "n.json": b"42"},
                        {"s.json": "E_ARTIFACT_SHAPE_INVALID", "n.json": "E_ARTIFACT_SHAPE_INVALID"})


def test_an_empty_json_file_is_invalid_json_everywhere_and_an_empty_journal_stays_valid(tmp_path: Path) -> None:
    """An empty .json: validate said E_ARTIFACT_JSON_INVALID, heal --in E_ARTIFACT_EVENTS_INVALID, and read, heal FILE
    and report nothing at all (exit 0)."""
    _every_command_says(tmp_path, {"e.json": b"", "blank.json": b" \n"},
                        {"e.json": "E_ARTIFACT_JSON_INVALID", "blank.json": "E_ARTIFACT_JSON_INVALID"})
    journal = tmp_path / "empty.jsonl"
    journal.write_bytes(b"")
    for args in (["read", str(journal)], ["heal", str(journal)], ["validate", str(journal)]):
        done = run_replay(*args)
        assert done.returncode == 0 and not errors_of(done.stderr), (args, done.stderr)


def test_heal_refuses_an_artifact_of_a_format_it_does_not_know(tmp_path: Path) -> None:
    """schemaVersion "9" or artifactType "other" was healed and stamped "1.0.0" / "replay" without a word; validate
    rejected them. An unknown format is not repairable: refused with validate's codes, the other inputs healed."""
    _every_command_says(tmp_path, {"v.json": json.dumps(_artifact("v", schemaVersion="9")).encode(),
                                   "t.json": json.dumps(_artifact("t", artifactType="other"), indent=1).encode()},
                        {"v.json": "E_SCHEMA_VERSION_UNSUPPORTED", "t.json": "E_ARTIFACT_TYPE_INVALID"})


def test_heal_keeps_an_invalid_status_and_reports_it_in_both_modes(tmp_path: Path) -> None:
    """heal --in replaced status "meh" with "ok" and logged nothing, where `heal FILE` reported it. heal repairs no
    status (the seed's repairs are trace repairs, each logged): both modes keep it and report the healed artifact
    invalid (E_HEALED_ARTIFACT_INVALID, cause E_ARTIFACT_STATUS_INVALID), exit 1."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "meh.json").write_text(json.dumps(_artifact("m", status="meh")))
    out = tmp_path / "out"
    for args in (["heal", "--in", str(src), "--out", str(out)], ["heal", str(src / "meh.json")]):
        done = run_replay(*args)
        [error] = errors_of(done.stderr)
        assert done.returncode == 1 and (error["code"], error["cause"]) == ("E_HEALED_ARTIFACT_INVALID",
                                                                            "E_ARTIFACT_STATUS_INVALID"), done.stderr
    assert json.loads((out / "meh.healed.json").read_text())["status"] == "meh"


def test_an_input_not_there_or_no_file_gives_expected_and_received_in_heal_and_report_too(tmp_path: Path) -> None:
    """`heal --in nothere` and `heal --in SOCKET` gave no `expected`/`received`, where validate gave both (and report
    gave none for a missing --in): one helper gives every command the same fields, validate's PATHs and URLs too
    (validate built its own: received the path, not what is there)."""
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s"))
    try:
        for path, code, received in (("nothere", "E_INPUT_PATH_NOT_FOUND", "nothing"),
                                     ("s", "E_INPUT_NOT_FILE_OR_DIR", "socket")):
            expected = set()
            for args in (["heal", "--in", path, "--out", "o"], ["report", "--in", path], ["read", path],
                         ["validate", path], ["validate", f"file://{tmp_path / path}"]):
                if args[1].startswith("file://") and path == "s":
                    continue  # a URL is a file, a folder or nothing to fsspec
                done = run_replay(*args, cwd=tmp_path)
                [error] = errors_of(done.stderr)
                assert done.returncode == 2 and error["code"] == code, (args, done.stderr)
                assert error["received"] == received and error["expected"] and error["howToFix"], (args, error)
                expected.add(error["expected"])
            assert len(expected) == 1, expected  # validate built its own ("an existing .json/.jsonl file or directory")
    finally:
        server.close()


def test_read_refuses_an_unknown_format_first_as_validate_lists_it(tmp_path: Path) -> None:
    """`{"schemaVersion": "9", "artifactType": "replay"}`: read said E_ARTIFACT_EVENTS_INVALID (events was checked
    first) where validate lists E_SCHEMA_VERSION_UNSUPPORTED first; both now judge version, type, then events."""
    doc = tmp_path / "v9n.json"
    doc.write_text(json.dumps({"schemaVersion": "9", "artifactType": "replay"}))
    [error] = errors_of(run_replay("read", str(doc)).stderr)
    listed = [e["code"] for e in errors_of(run_replay("validate", str(doc)).stderr)]
    first = next(c for c in listed if c in {"E_SCHEMA_VERSION_UNSUPPORTED", "E_ARTIFACT_EVENTS_INVALID"})
    assert error["code"] == first == "E_SCHEMA_VERSION_UNSUPPORTED", (error, listed)
    doc.write_text(json.dumps({"artifactType": "other"}))
    assert [e["code"] for e in errors_of(run_replay("read", str(doc)).stderr)] == ["E_ARTIFACT_TYPE_INVALID"]


def test_the_jsonl_hint_is_for_an_object_with_no_events_not_for_events_of_the_wrong_kind(tmp_path: Path) -> None:
    """"a journal is named .jsonl, not .json" was in every E_ARTIFACT_EVENTS_INVALID, so validate gave it for a real
    artifact whose `events` is 5 or {}; only read's refusal of an object with no `events` at all (a record, maybe)
    says it."""
    doc = tmp_path / "a.json"
    for events in (5, {}):
        doc.write_text(json.dumps(_artifact("r", events=events)))
        for args in (["validate", str(doc)], ["read", str(doc)]):
            [error] = [e for e in errors_of(run_replay(*args).stderr) if e["code"] == "E_ARTIFACT_EVENTS_INVALID"]
            assert ".jsonl" not in error["howToFix"], (args, error)
    doc.write_text(json.dumps(ev(1, "run_started", run="r")))
    [error] = errors_of(run_replay("read", str(doc)).stderr)
    assert error["code"] == "E_ARTIFACT_EVENTS_INVALID" and ".jsonl, not .json" in error["howToFix"], error
