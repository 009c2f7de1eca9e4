"""A stage, a third-party one too, reports with a code of the catalogue; another is refused, saying so plainly."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.stage import Transform


class MyStage(Transform):
    name = "my_stage"
    summary = "reports a code of its own"

    def __init__(self, code: str = "E_MY_OWN", **options):
        super().__init__(**options)
        self.code = code

    def __call__(self, batch: Batch) -> Batch:
        self.error(self.code, "something of mine", batch, 0, howToFix="Do what I say.", rule="my_rule")
        return batch


def test_a_code_not_in_the_catalogue_is_refused_saying_why():
    """It failed as E_STAGE_FAILED "KeyError: 'error code E_MY_OWN is not in the catalogue'" (and, given a howToFix,
    went out unchecked)."""
    with pytest.raises(ReplayError) as caught:
        MyStage()(Batch.of([{"type": "x"}]))
    error = caught.value
    assert error.code == "E_STAGE_FAILED" and error.body["received"] == "E_MY_OWN" and error.body["stage"] == "my_stage"
    assert "not in replay's catalogue (ERROR_CODES.md)" in error.message
    assert "third-party" in error.message


def test_a_catalogue_code_is_reported_with_the_stages_own_fields():
    stage = MyStage("E_EVENT_INVALID")
    stage(Batch.of([{"type": "x"}]))
    [record] = stage.take("errors")
    assert (record["code"], record["rule"], record["stage"]) == ("E_EVENT_INVALID", "my_rule", "my_stage")


class EmitsItsOwn(Transform):
    name = "emits_its_own"
    summary = "builds its error records itself and sends them with emit"
    ports = ("errors",)

    def __init__(self, code: object = "E_MY_OWN", **options):
        super().__init__(**options)
        self.code = code

    def __call__(self, batch: Batch) -> Batch:
        self.emit("errors", {"code": self.code, "message": "something of mine"})
        return batch


@pytest.mark.parametrize("code", ["E_MY_OWN", None, ["E_EVENT_INVALID"]])
def test_an_error_record_emitted_with_a_code_not_in_the_catalogue_is_refused_as_error_refuses_it(code):
    """emit("errors", ...) sent any code on: printed to stderr as replay's, looked up nowhere."""
    with pytest.raises(ReplayError) as caught:
        EmitsItsOwn(code)(Batch.of([{"type": "x"}]))
    error = caught.value
    assert error.code == "E_STAGE_FAILED" and error.body["stage"] == "emits_its_own"
    assert "not in replay's catalogue (ERROR_CODES.md)" in error.message


def test_an_error_record_emitted_with_a_catalogue_code_goes_on():
    stage = EmitsItsOwn("E_EVENT_INVALID")
    stage(Batch.of([{"type": "x"}]))
    assert stage.take("errors") == [{"code": "E_EVENT_INVALID", "message": "something of mine"}]
    stage.emit("repairs", {"rule": "mine"})  # (other ports carry what they carry)
    assert stage.take("repairs") == [{"rule": "mine"}]
