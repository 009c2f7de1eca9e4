"""ReplayModel: serves an agent loop's model stream calls from a recorded session, exactly and in order.

::

    model = ReplayModel.from_session("tests/scenarios/echo/session.jsonl")
    async for chunk in model.stream(turn=1, step=0, messages=messages):
        ...
    model.check_done()

Each ``stream(turn, step)`` call must be the recording's next model call; it returns an async
iterator over that call's recorded chunks. A call overridden with ``throw`` yields its recorded
chunks and then raises a ``RecordedStreamError`` carrying the recorded ``name`` and ``message``;
one overridden with ``hang`` yields its chunks and then blocks until the caller cancels it (a
timeout or a cancel scope). A replay never improvises: a call out of order, a call past the end,
and recorded calls left unasked at the end (``check_done``) are ``ReplayModelError``s naming the
(turn, step). Errors the agent caught and swallowed are raised again by ``check_done``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

import anyio
import anyio.lowlevel

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import Group, Key, load_script, load_session_groups, step_name


class ReplayModelError(ReplayError):
    """The agent's model calls left the recording (out of order, past the end, calls left over)."""

    def __init__(self, code: str, message: str, *, turn: int | None = None, step: int | None = None,
                 **fields: Any) -> None:
        super().__init__(code, message, exit_code=1, turn=turn, step=step, **fields)
        self.turn = turn
        self.step = step


class RecordedStreamError(Exception):
    """The error a recorded stream threw (a ``throw`` override); its class is named after the recorded name."""

    def __init__(self, name: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.data = dict(data or {})  # any other fields of the recorded error (status, code, ...)

    def __str__(self) -> str:
        return self.message


_ERROR_CLASSES: dict[str, type[RecordedStreamError]] = {}


def recorded_error(error: dict[str, Any]) -> RecordedStreamError:
    """The exception for a recorded error ``{"name", "message", ...}``: ``type(exc).__name__`` is its name."""
    name = str(error.get("name") or "Error")
    cls = RecordedStreamError
    if name.isidentifier() and name != cls.__name__:
        cls = _ERROR_CLASSES.get(name) or _ERROR_CLASSES.setdefault(
            name, type(name, (RecordedStreamError,), {"__module__": "replay.recorded"}))
    data = {k: v for k, v in error.items() if k not in ("name", "message")}
    return cls(name, str(error.get("message", "")), data)


class ReplayModel:
    """A model that replays recorded stream calls; see the module docstring."""

    def __init__(self, groups: Iterable[Group], *, source: str = "<memory>") -> None:
        if isinstance(groups, str | bytes | os.PathLike):  # (a path's characters are no groups: it failed at the first call)
            raise TypeError(f"ReplayModel takes the recorded groups, not a path: load a session journal or a replay "
                            f"script with ReplayModel.load({os.fsdecode(groups)!r})")
        self._groups = list(groups)
        self._next = 0
        self.source = source
        self.failures: list[ReplayModelError] = []

    # loading ----------------------------------------------------------------------------------
    @classmethod
    def from_session(cls, path: str | Path, override: str | Path | None = None, *, use_sidecar: bool = True) -> ReplayModel:
        """From a session journal; ``replay.override.json`` beside it applies unless ``override`` names
        another sidecar or ``use_sidecar`` is false. Refuses a session that cannot replay as recorded."""
        return cls(load_session_groups(path, override, use_sidecar=use_sidecar), source=str(path))

    @classmethod
    def from_script(cls, path: str | Path) -> ReplayModel:
        """From a replay-script document (what `replay script` prints)."""
        return cls(load_script(path), source=str(path))

    @classmethod
    def load(cls, path: str | Path, override: str | Path | None = None) -> ReplayModel:
        """A ``.json`` file is a replay script, anything else a session journal. An ``override`` names a session's
        sidecar; a script holds its throw / hang actions itself, so one given with a script is refused, not ignored."""
        if str(path).endswith(".json"):
            if override is not None:
                raise ReplayError("E_USAGE_INVALID", f"an override sidecar ({str(override)!r}) applies to a session journal; "
                                  f"{str(path)!r} is a replay script, whose groups hold their throw / hang actions",
                                  path=str(override), expected="no override with a replay script", received=str(override),
                                  howToFix="Load the session journal with the sidecar, or write the script again with "
                                           "`replay script SESSION --override FILE` and load that alone.")
            return cls.from_script(path)
        return cls.from_session(path, override)

    # what is left -----------------------------------------------------------------------------
    @property
    def calls(self) -> list[Key]:
        """Every recorded model call, in order."""
        return [g.key for g in self._groups]

    @property
    def remaining(self) -> list[Key]:
        """The recorded calls not asked for yet."""
        return [g.key for g in self._groups[self._next:]]

    # serving ----------------------------------------------------------------------------------
    def stream(self, turn: int, step: int, **request: Any) -> AsyncIterator[dict[str, Any]]:
        """The chunks of the model call at (turn, step), which must be the recording's next call.

        ``request`` (messages, tools, ...) is accepted and ignored: the answer is the recording's. A ``turn`` or
        ``step`` that is no int (``'1'``, ``1.0``, ``True``) is a TypeError: a recording's are ints, and such a call
        was said out of order with the very (turn, step) it named.
        """
        for name, value in (("turn", turn), ("step", step)):
            if type(value) is not int:
                raise TypeError(f"ReplayModel.stream: `{name}` must be an int, not {type(value).__name__} {value!r}")
        asked = step_name(turn, step)
        if self._next >= len(self._groups):
            last = f"; its last was {step_name(*self._groups[-1].key)}" if self._groups else ""
            self._fail(ReplayModelError(
                "E_REPLAY_PAST_END",
                f"the agent asked for {asked} but the recording has no more model calls "
                f"({len(self._groups)} recorded{last})",
                turn=turn, step=step, source=self.source, expected="no further model call", received=[turn, step]))
        group = self._groups[self._next]
        if group.key != (turn, step):
            self._fail(ReplayModelError(
                "E_REPLAY_OUT_OF_ORDER",
                f"the agent asked for {asked} but the recording's next model call is {step_name(*group.key)}",
                turn=turn, step=step, source=self.source, expected=list(group.key), received=[turn, step]))
        self._next += 1
        return self._serve(group)

    async def _serve(self, group: Group) -> AsyncIterator[dict[str, Any]]:
        for chunk in group.served:
            await anyio.lowlevel.checkpoint()
            yield copy.deepcopy(chunk)  # the agent may keep or change what it gets
        override = group.override
        if override is None:
            return
        if override.action == "throw":
            raise recorded_error(override.error or {})
        await anyio.sleep_forever()  # "hang": the recorded stream never finished; the caller cancels

    def check_done(self) -> None:
        """At the end of a replay: raise the first error already raised (in case the agent swallowed it),
        else ``E_REPLAY_LEFTOVER`` when recorded calls were never asked for."""
        if self.failures:
            raise self.failures[0]
        left = self.remaining
        if left:
            more = f" and {len(left) - 1} more were" if len(left) > 1 else " was"
            raise ReplayModelError(
                "E_REPLAY_LEFTOVER",
                f"the recording's model call {step_name(*left[0])}{more} never asked for "
                f"({self._next} of {len(self._groups)} made)",
                turn=left[0][0], step=left[0][1], source=self.source, expected=[list(k) for k in left], received=self._next)

    def _fail(self, error: ReplayModelError) -> NoReturn:
        self.failures.append(error)
        raise error

    async def __aenter__(self) -> ReplayModel:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            self.check_done()
