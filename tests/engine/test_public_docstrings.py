"""The public names a stage author or an embedder meets each say what they are (``help()``, an editor's hover)."""

from __future__ import annotations

import pytest

from replay.pipeline.cli.app import run_cli
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.stage import Sink, Source, Transform


@pytest.mark.parametrize("thing", [Batch, Transform, Sink, Source, Transform.flush, run_cli],
                         ids=["Batch", "Transform", "Sink", "Source", "Transform.flush", "run_cli"])
def test_a_public_name_has_its_own_docstring(thing):
    assert (thing.__doc__ or "").strip(), f"{thing.__qualname__} has no docstring"
