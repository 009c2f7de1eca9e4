"""Detector recall, measured on a labelled set of generated secrets and personal data (>= 0.95 for every type)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from incident_support import SENSITIVE, sensitive_values

from replay.pipeline.model.incident.detectors import DETECTOR_KINDS, luhn_ok, scan
from replay.pipeline.model.incident.redactor import Redactor
from replay.pipeline.model.incident.replacements import REMOVED

VALUES = sensitive_values()
RECALL = 0.95


def _generator():
    spec = importlib.util.spec_from_file_location("generate_sensitive", SENSITIVE.parent / "generate_sensitive.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_labelled_set_is_what_its_generator_makes_and_covers_every_detector() -> None:
    assert SENSITIVE.read_text() == _generator().render()
    assert set(VALUES) == set(DETECTOR_KINDS)
    assert all(len(v) >= 40 for v in VALUES.values())


def test_the_generated_cards_are_luhn_valid() -> None:
    assert all(luhn_ok("".join(c for c in v if c.isdigit())) for v in VALUES["card_number"])


def _recall(kind: str, samples: list[str]) -> float:
    return sum(kind in {hit[0] for hit in scan(s)} for s in samples) / len(samples)


@pytest.mark.parametrize("kind", DETECTOR_KINDS)
def test_recall_of_each_detector_on_bare_values(kind: str) -> None:
    recall = _recall(kind, VALUES[kind])
    assert recall >= RECALL, f"{kind}: recall {recall:.2f}"


@pytest.mark.parametrize("kind", DETECTOR_KINDS)
def test_recall_of_each_detector_inside_text(kind: str) -> None:
    samples = [f"Customer wrote: please use {v} for this, thanks" for v in VALUES[kind]]
    recall = _recall(kind, samples)
    assert recall >= RECALL, f"{kind}: recall {recall:.2f}"


@pytest.mark.parametrize("kind", DETECTOR_KINDS)
def test_a_detected_value_never_survives_redaction_under_a_neutral_field(kind: str) -> None:
    redactor = Redactor()
    for value in VALUES[kind]:
        out = json.dumps(redactor.value({"field": value, "note": f"see {value} now", "nested": [{"v": value}]}))
        assert value not in out
    assert redactor.counts[kind] >= RECALL * 3 * len(VALUES[kind])


@pytest.mark.parametrize("kind", DETECTOR_KINDS)
def test_a_whole_value_becomes_an_alias_and_text_around_it_is_removed(kind: str) -> None:
    redactor = Redactor()
    value = VALUES[kind][0]
    assert redactor.value(value, "field").split("_")[0] in ("secret", "email", "card", "ip", "phone")
    assert redactor.value(f"here it is: {value}", "field") == REMOVED


@pytest.mark.parametrize("text", ["USD", "refunded", "TIMEOUT", "gateway_timeout", "4900", "49.00", "2026-02-11",
                                  "issue_refund", "E_RATE_LIMIT", "c1", "v1.2.3"])
def test_plain_values_are_not_taken_for_secrets(text: str) -> None:
    assert scan(text) == []
