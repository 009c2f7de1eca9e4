"""The pytest plugin (entry point ``pytest11``): the ``replay_session`` fixture, a replay model per session file.

::

    async def test_echo(replay_session):
        model = replay_session("session.jsonl")      # relative to this test file
        assert await run_agent(model, "echo hi") == "hi"

``replay_session(path, override=None)`` loads a session journal (or a ``.json`` replay script) into a
``ReplayModel`` (an ``override`` sidecar is for a session: a script holds its actions, and one given with it is
refused). After the test, every model it gave out must have served all its recorded calls
and raised no replay error the agent may have swallowed; otherwise the test fails at teardown with
the error code and the (turn, step). A test that did not pass (it failed, was skipped or failed as
expected, ``xfail``), or did not run (its setup failed or skipped after a fixture took a model), is not checked
again at teardown: what it left unasked is no news.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from replay.pipeline.testing.replay_model import ReplayModel


class ReplaySessions:
    """What the fixture gives a test: call it with a session path to get a replay model."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.models: list[ReplayModel] = []

    def __call__(self, path: str | Path, override: str | Path | None = None) -> ReplayModel:
        from replay.pipeline.testing.replay_model import ReplayModel

        target = Path(path) if Path(path).is_absolute() else self.base / path
        sidecar = None if override is None else Path(override) if Path(override).is_absolute() else self.base / override
        model = ReplayModel.load(target, sidecar)
        self.models.append(model)
        return model

    def check_done(self) -> None:
        from replay.pipeline.engine.errors import ReplayError

        for model in self.models:
            try:
                model.check_done()
            except ReplayError as exc:
                pytest.fail(f"replay of {model.source}: {exc}", pytrace=False)


_DID_NOT_PASS = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, Any]:
    report = yield
    # the test's setup, then (when its setup passed) its call: a setup that failed or skipped after a fixture took a
    # model (another fixture raised, or called pytest.skip) is a test that did not run, not one that left calls unasked
    if report.when in ("setup", "call"):
        item.stash[_DID_NOT_PASS] = report.failed or report.skipped  # (an xfail is reported as skipped)
    return report


@pytest.fixture
def replay_session(request: pytest.FixtureRequest) -> Iterator[ReplaySessions]:
    """A factory of replay models for session files (paths relative to the test file)."""
    sessions = ReplaySessions(Path(request.path).parent)
    yield sessions
    if not request.node.stash.get(_DID_NOT_PASS, False):
        sessions.check_done()
