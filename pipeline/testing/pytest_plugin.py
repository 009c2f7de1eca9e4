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
expected, ``xfail``), did not run (its setup failed or skipped after a fixture took a model) or was stopped (Ctrl-C)
is not checked again at teardown: what it left unasked is no news.
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


_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, Any]:
    report = yield
    # Only a test whose call passed is checked: one whose setup failed or skipped after a fixture took a model (another
    # fixture raised, or called pytest.skip) never ran, and one stopped by Ctrl-C has no call report at all (pytest
    # tears it down while the session ends, where a failure is a crash, not a report).
    if report.when == "setup":
        item.stash[_PASSED] = False
    elif report.when == "call":
        item.stash[_PASSED] = report.passed  # (an xfail is reported as skipped)
    return report


@pytest.fixture
def replay_session(request: pytest.FixtureRequest) -> Iterator[ReplaySessions]:
    """A factory of replay models for session files (paths relative to the test file)."""
    sessions = ReplaySessions(Path(request.path).parent)
    yield sessions
    if request.node.stash.get(_PASSED, False):
        sessions.check_done()
