"""Bundles: loading checks everything again (and the checksum), folders appear whole, promote never overwrites, rendering escapes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from incident_support import REFUND_EXPORT, write_json

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident import audit, bundle, recheck
from replay.pipeline.model.incident.export import load_export
from replay.pipeline.model.incident.matching import judge
from replay.pipeline.model.incident.redactor import Redactor
from replay.pipeline.model.incident.render import folder_files, junit_xml, report_html, trace_lines
from replay.pipeline.model.incident.rules import evaluate


def make_bundle() -> dict[str, Any]:
    incident = load_export(str(REFUND_EXPORT))
    redactor = Redactor()
    doc = redactor.incident(incident)
    doc.update(schema_version=1, kind=bundle.KIND, incident_id="inc_0123456789abcdef")
    doc["redaction"] = redactor.audit(doc["incident_id"])
    return bundle.bundle_document(doc)


def test_a_written_bundle_loads_back(tmp_path: Path) -> None:
    doc = make_bundle()
    assert bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc))) == doc
    assert bundle.load_bundle(str(tmp_path)) == doc  # the folder names its incident.json


@pytest.mark.parametrize(("change", "code"), [
    (lambda d: d.pop("kind"), "E_INCIDENT_BUNDLE_INVALID"),
    (lambda d: d.update(kind="export"), "E_INCIDENT_BUNDLE_INVALID"),
    (lambda d: d.update(schema_version=2), "E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED"),
    (lambda d: d.update(agent_command=["python", "evil.py"]), "E_INCIDENT_FIELD_UNKNOWN"),
    (lambda d: d.pop("redaction"), "E_INCIDENT_FIELD_MISSING"),
    (lambda d: d.update(redaction=None), "E_INCIDENT_FIELD_INVALID"),
    (lambda d: [e.update(call_id="c9") for e in d["events"] if e.get("call_id") == "c1"], "E_INCIDENT_BUNDLE_INVALID"),
    (lambda d: d["events"][1].pop("error"), "E_INCIDENT_BUNDLE_INVALID"),
    (lambda d: d["events"].pop(1), "E_INCIDENT_CALL_CONCURRENT"),
    (lambda d: d.update(assertions=[]), "E_INCIDENT_RULES_MISSING"),
])
def test_a_bundle_that_is_not_one_or_was_changed_is_refused(tmp_path: Path, change: Any, code: str) -> None:
    doc = make_bundle()
    change(doc)
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc)))
    assert caught.value.code == code


@pytest.mark.parametrize(("change", "path", "kinds"), [
    (lambda d: d["events"][0]["args"].update(order_id="jane.doe@example.com"), "$.events[0].args.order_id", ["email"]),
    (lambda d: d["input"].update(request="Jane Doe called about her refund"), "$.input.request", ["freeform_text"]),
    (lambda d: d["events"][1]["result"].update(status="hunter2!"), "$.events[1].result.status", ["identifier"]),
    (lambda d: d["events"][2]["args"].update(order_id=1234567890123), "$.events[2].args.order_id", ["identifier"]),
    (lambda d: d["events"][8]["output"].update(card=4242424242424242), "$.events[8].output.card", ["personal_field"]),
])
def test_a_bundle_holding_what_redaction_would_change_is_refused_where_it_is(
        tmp_path: Path, change: Any, path: str, kinds: list[str]) -> None:
    """An import never leaves such a value; one edited in is named (where, and what it looks like: never the value)."""
    doc = make_bundle()
    change(doc)
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc)))
    assert caught.value.code == "E_INCIDENT_NOT_REDACTED"
    assert caught.value.body["path"] == path and caught.value.body["received"] == kinds
    assert "jane" not in str(caught.value.body).lower() and "hunter2" not in str(caught.value.body)


@pytest.mark.parametrize(("change", "code", "path"), [
    (lambda d: d["redaction"]["warnings"].insert(1, "customer jane.doe@example.com called twice"), "E_INCIDENT_NOT_REDACTED",
     "$.redaction.warnings[1]"),
    (lambda d: d["redaction"].update(incident_id="jane.doe@example.com"), "E_INCIDENT_NOT_REDACTED", "$.redaction.incident_id"),
    (lambda d: d["redaction"].update(note="Jane called"), "E_INCIDENT_NOT_REDACTED", "$.redaction.note"),
    (lambda d: d["redaction"]["fields"].update(identifier=True), "E_INCIDENT_NOT_REDACTED", "$.redaction.fields"),
    (lambda d: d["redaction"].update(secret="hunter2"), "E_INCIDENT_NOT_REDACTED", "$.redaction.secret"),
    (lambda d: d.update(incident_id="inc_jane.doe@example.com"), "E_INCIDENT_FIELD_INVALID", "$.incident_id"),
])
def test_a_bundle_whose_audit_or_id_was_edited_is_refused(tmp_path: Path, change: Any, code: str, path: str) -> None:
    """The re-check read input, events and rules only: an email written into the audit's warnings or the incident's id
    went into redaction.json, report.html and a promoted fixture."""
    doc = make_bundle()
    change(doc)
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc)))
    assert (caught.value.code, caught.value.body["path"]) == (code, path)
    assert "jane" not in str(caught.value.body).lower() and "hunter2" not in str(caught.value.body)


def test_an_audit_naming_the_rules_judged_otherwise_is_one_an_import_writes(tmp_path: Path) -> None:
    doc = make_bundle()
    doc["redaction"]["warnings"].append(audit.verdicts_changed([(doc["assertions"][0]["id"], "fail", "pass")]))
    assert bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc))) == doc
    doc["redaction"]["warnings"][-1] = audit.verdicts_changed([("jane@ex.com", "fail", "pass")])  # no rule's id
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc)))
    assert caught.value.body["path"] == f"$.redaction.warnings[{len(doc['redaction']['warnings']) - 1}]"


def test_a_member_name_redaction_would_change_is_named_by_where_it_is_not_by_itself(tmp_path: Path) -> None:
    doc = make_bundle()
    doc["events"][1]["result"]["jane.doe@example.com"] = 1
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(write_json(tmp_path / "incident.json", doc)))
    assert caught.value.body["path"] == "$.events[1].result.*" and "jane" not in str(caught.value.body)


_KEY = st.sampled_from(["status", "state", "currency", "order_id", "email", "name", "password", "note", "amount_cents",
                        "total", "error", "message", "code", "customer", "items", "x", "api_key", "phone", "jane@ex.com"])
_TEXT = st.sampled_from(["pending", "USD", "ORDER_NOT_FOUND", "timeout", "boom", "Jane", "Jane Doe", "hunter2", "p@ss!",
                         "jane@ex.com", "4242 4242 4242 4242", "10.0.0.7", "+1 415 555 0142", "sk-" + "a" * 24, "",
                         "[redacted]", "id_0123456789abcdef", "a1", " a1"]) | st.text(max_size=12)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | _TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEY, inner, max_size=4), max_leaves=12)


@given(st.dictionaries(_KEY, _VALUE, max_size=4), st.dictionaries(_KEY, _VALUE, max_size=4),
       st.dictionaries(_KEY, _VALUE, max_size=4), st.dictionaries(_KEY, _VALUE, max_size=4), _VALUE)
def test_whatever_an_import_redacts_reads_back_as_redacted(
        data: dict[str, Any], args: dict[str, Any], result: dict[str, Any], output: dict[str, Any], error: Any) -> None:
    """The check a bundle passes on loading finds nothing in what redaction wrote, whatever the values and names."""
    incident = {"input": data, "assertions": [{"id": "r", "type": "required_output", "fields": sorted(output)[:1]}],
                "events": [{"type": "tool_call", "call_id": "c1", "name": "t", "args": args},
                           {"type": "tool_result", "call_id": "c1", "ok": False, "result": result, "error": error},
                           {"type": "final_output", "output": output}]}
    assert recheck.unredacted(Redactor().incident(incident)) is None


def test_an_export_passed_as_a_bundle_gets_advice_to_import_it() -> None:
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(REFUND_EXPORT))
    assert caught.value.code == "E_INCIDENT_BUNDLE_INVALID"
    assert "incident import" in caught.value.body["howToFix"]


# checksums and promotion ------------------------------------------------------------------------------
def test_promote_adds_a_checksum_that_loading_verifies(tmp_path: Path) -> None:
    doc = make_bundle()
    summary = bundle.promote(doc, str(tmp_path / "cases" / "refund.json"))
    written = orjson.loads((tmp_path / "cases" / "refund.json").read_bytes())
    assert written["checksum"] == {"algorithm": "sha256", "value": summary["sha256"]}
    assert summary["sha256"] == bundle.checksum(doc)
    assert bundle.load_bundle(str(tmp_path / "cases" / "refund.json"))["checksum"] == written["checksum"]
    written["events"][1]["result"]["status"] = "lost"
    write_json(tmp_path / "edited.json", written)
    with pytest.raises(ReplayError) as caught:
        bundle.load_bundle(str(tmp_path / "edited.json"))
    assert caught.value.code == "E_INCIDENT_CHECKSUM_MISMATCH"


def test_the_checksum_does_not_depend_on_key_order_or_layout() -> None:
    doc = make_bundle()
    reordered = dict(reversed(list(doc.items())))
    assert bundle.checksum(reordered) == bundle.checksum(doc)


def test_promote_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "refund.json"
    target.write_text("precious")
    with pytest.raises(ReplayError) as caught:
        bundle.promote(make_bundle(), str(target))
    assert caught.value.code == "E_INCIDENT_PROMOTE_TARGET_EXISTS"
    assert target.read_text() == "precious"
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.json")
    with pytest.raises(ReplayError):
        bundle.promote(make_bundle(), str(tmp_path / "dangling.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json", "refund.json"]  # no temp file left


def test_promote_names_what_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "file.json").write_text("precious")
    (tmp_path / "folder.json").mkdir()
    os.mkfifo(tmp_path / "pipe.json")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.json")
    for name, received in [("file.json", "an existing file"), ("folder.json", "an existing folder"),
                           ("pipe.json", "a pipe, a device or a socket"), ("dangling.json", "a symbolic link to nothing")]:
        with pytest.raises(ReplayError) as caught:
            bundle.refuse_existing_fixture(str(tmp_path / name))
        assert caught.value.body["received"] == received, name


def test_promote_refuses_a_name_taken_while_it_was_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "refund.json"
    real_link = os.link

    def racing_link(src: str, dst: str) -> None:
        Path(dst).write_text("someone else")
        real_link(src, dst)

    monkeypatch.setattr(bundle.os, "link", racing_link)
    with pytest.raises(ReplayError) as caught:
        bundle.promote(make_bundle(), str(target))
    assert caught.value.code == "E_INCIDENT_PROMOTE_TARGET_EXISTS"
    assert target.read_text() == "someone else"
    assert [p.name for p in tmp_path.iterdir()] == ["refund.json"]


# output folders ---------------------------------------------------------------------------------------
def test_a_folder_is_created_whole_in_a_new_or_empty_place(tmp_path: Path) -> None:
    bundle.write_folder(str(tmp_path / "new" / "out"), {"a.txt": b"a", "b.txt": b"b"})
    assert sorted(p.name for p in (tmp_path / "new" / "out").iterdir()) == ["a.txt", "b.txt"]
    (tmp_path / "empty").mkdir()
    bundle.write_folder(str(tmp_path / "empty"), {"a.txt": b"a"})
    assert (tmp_path / "empty" / "a.txt").read_bytes() == b"a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "new"]


@pytest.mark.parametrize("kind", ["non-empty folder", "file"])
def test_a_used_output_place_is_refused_and_left_alone(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("keep me")
    else:
        target.mkdir()
        (target / "old.txt").write_text("keep me")
    with pytest.raises(ReplayError) as caught:
        bundle.write_folder(str(target), {"a.txt": b"a"})
    assert caught.value.code == "E_INCIDENT_OUTPUT_NOT_EMPTY" and caught.value.exit_code == 2
    assert (target.read_text() if kind == "file" else (target / "old.txt").read_text()) == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize(("make", "received"), [
    (lambda p: p.write_text("keep me"), "a file"),
    (lambda p: os.mkfifo(p), "a pipe, a device or a socket"),  # (was "a file")
    (lambda p: p.symlink_to(p.parent), "a symbolic link"),  # (to a folder: was "a file")
    (lambda p: p.symlink_to(p.parent / "nothing"), "a symbolic link"),
])
def test_an_output_place_that_is_not_a_folder_is_named_as_what_it_is(tmp_path: Path, make: Any, received: str) -> None:
    target = tmp_path / "out"
    make(target)
    with pytest.raises(ReplayError) as caught:
        bundle.write_folder(str(target), {"a.txt": b"a"})
    assert caught.value.code == "E_INCIDENT_OUTPUT_NOT_EMPTY" and caught.value.body["received"] == received


def test_a_folder_that_fails_halfway_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(ReplayError) as failed:
        bundle.write_folder(str(tmp_path / "out"), {"a.txt": b"a", "b" * 300: b"b"})  # the second file cannot be written
    assert failed.value.code == "E_OUTPUT_WRITE_FAILED" and failed.value.body["path"] == str(tmp_path / "out")
    assert failed.value.body["received"].startswith("ENAMETOOLONG"), failed.value.body
    assert list(tmp_path.iterdir()) == []


def test_replace_swaps_a_folder_whole_and_leaves_no_temp_behind(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("from an unfinished run")
    bundle.write_folder(str(target), {"a.txt": b"a"}, replace=True)
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    bundle.write_folder(str(tmp_path / "new"), {"b.txt": b"b"}, replace=True)  # nothing there: as without replace
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "out"]


# folder names in an import of many ----------------------------------------------------------------------
def test_a_folder_name_is_the_exports_path_without_its_suffix(tmp_path: Path) -> None:
    assert bundle.folder_name("exports/refund-export.json") == "refund-export"
    assert bundle.folder_name(str(tmp_path / "x" / "sub" / "a.v2.jsonl"), str(tmp_path / "x")) == "sub%2Fa.v2"
    assert bundle.folder_name("logs/a.ndjson") == bundle.folder_name("logs/a.jsonl") == "a"  # a clash the command refuses
    assert bundle.folder_name("exports/.json") == "%2Ejson" and bundle.folder_name("exports/run 1.json") == "run%201"


_PART = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), min_size=1, max_size=8) \
    .filter(lambda part: part not in (".", ".."))


@given(st.lists(st.lists(_PART, min_size=1, max_size=3).map("/".join), min_size=2, max_size=6, unique=True),
       st.sampled_from([".json", ".jsonl", ".ndjson"]))
def test_folder_names_are_one_to_one_plain_and_never_hidden(stems: list[str], suffix: str) -> None:
    """Exports whose paths differ (with one suffix) never share a folder, and a name is one plain entry of OUT."""
    names = [bundle.folder_name(f"/exports/{stem}{suffix}", "/exports") for stem in stems]
    assert len(set(names)) == len(names)
    assert all("/" not in name and not name.startswith(".") and name for name in names)


# rendering --------------------------------------------------------------------------------------------
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


def hostile_bundle() -> dict[str, Any]:
    doc = make_bundle()
    doc["events"][-1]["output"]["note"] = HOSTILE
    doc["assertions"][0]["id"] = HOSTILE
    return doc


def test_the_report_escapes_everything_and_runs_no_script() -> None:
    doc = hostile_bundle()
    evaluation = evaluate(doc)
    page = report_html(doc, evaluation, {**judge(doc, []), "agent": {"messages": 0, "logs_withheld": 0, "stderr_bytes_withheld": 0}}).decode()
    assert "<script" not in page.lower() and "<img" not in page.lower() and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"?https?:", page)  # nothing is fetched


def test_junit_reports_a_known_rule_failure_even_when_the_replay_matched() -> None:
    doc = make_bundle()
    evaluation = evaluate(doc)
    replay = {"status": "matched", "divergence": None, "agent": {}}
    xml = junit_xml(doc, evaluation, replay).decode()
    assert 'tests="5" failures="1"' in xml
    assert 'classname="incident.replay" name="replay reproduces the recorded tool calls and terminal output"/>' in xml
    assert '<failure type="fail"' in xml and "one-refund-per-order" in xml
    from xml.etree import ElementTree

    ElementTree.fromstring(junit_xml(hostile_bundle(), evaluate(hostile_bundle())))  # well-formed with hostile values


def test_the_trace_is_one_line_per_event_with_its_replay_state() -> None:
    doc = make_bundle()
    lines = [orjson.loads(line) for line in trace_lines(doc).splitlines()]
    assert [line["seq"] for line in lines] == list(range(1, 10)) and "replay" not in lines[0]
    verdict = judge(doc, [{"type": "tool_call", "call_id": "z", "name": "lookup_order", "args": doc["events"][0]["args"]},
                          {"type": "final_output", "output": {}}])
    lines = [orjson.loads(line) for line in trace_lines(doc, verdict).splitlines()]
    assert [line["replay"] for line in lines] == ["matched", "matched", "diverged", "diverged", "diverged", "not_reached",
                                                  "not_reached", "not_reached", "not_reached"]


def test_a_folder_has_the_documented_files() -> None:
    doc = make_bundle()
    assert sorted(folder_files(doc, evaluate(doc))) == sorted(bundle.FILES)


def test_a_name_value_pair_whose_name_redaction_aliased_reads_back_as_redacted() -> None:
    """A pair's name that was an email became ``email_...``: read back, that alias named a personal field and the
    pair's other members were taken for one (hypothesis found ``{"code": 0, "name": "jane@ex.com"}``)."""
    incident = {"input": {}, "assertions": [{"id": "r", "type": "required_output", "fields": []}],
                "events": [{"type": "tool_call", "call_id": "c1", "name": "t", "args": {}},
                           {"type": "tool_result", "call_id": "c1", "ok": False, "result": {},
                            "error": {"code": 0, "name": "jane@ex.com"}},
                           {"type": "final_output", "output": {}}]}
    assert recheck.unredacted(Redactor().incident(incident)) is None
