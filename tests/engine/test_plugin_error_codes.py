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
