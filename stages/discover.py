"""DiscoverRunner: the source that finds the user's runner and sends one invocation record for the prompt.

Where the runner comes from, first match wins:

1. ``--runner PATH`` (the ``runner`` option)
2. the ``REPLAY_RUNNER`` environment variable (a path)
3. ``.replay/runner.mjs``   4. ``.replay/runner.js``   5. ``.replay/runner.cjs``
6. ``.replay/runner.py``
7. ``.replay/runner`` (any executable)
8. ``package.json`` script ``replay:runner`` (run with ``sh -c`` in the project, node_modules/.bin on PATH)
9. ``pyproject.toml`` ``[tool.replay] runner = "path"``

How a runner file runs: ``.py`` with the interpreter running replay, ``.mjs/.js/.cjs`` with ``node``,
TypeScript is refused (compile it first), anything else must be executable.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, utf8_text
from replay.pipeline.engine.exactjson import skip_bom
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Output, Source
from replay.pipeline.io.fdio import file_type, read_to_end
from replay.pipeline.io.journals import require_stdin
from replay.pipeline.model.records import INVOCATION_RECORD
from replay.pipeline.model.runner_facts import with_article
from replay.pipeline.model.runner_protocol import new_run_id, runner_request
from replay.pipeline.model.validation import json_type

ENV_VAR = "REPLAY_RUNNER"
RUNNER_FILES = (".replay/runner.mjs", ".replay/runner.js", ".replay/runner.cjs", ".replay/runner.py", ".replay/runner")
PACKAGE_SCRIPT = "replay:runner"
NODE_SUFFIXES = (".mjs", ".js", ".cjs")
TYPESCRIPT_SUFFIXES = (".ts", ".mts", ".cts", ".tsx")

SEARCH_ORDER = (
    "--runner", ENV_VAR, *RUNNER_FILES, f"package.json scripts.{PACKAGE_SCRIPT}", "pyproject.toml [tool.replay] runner",
)


@dataclass(frozen=True)
class RunnerSpec:
    """A runner ready to start: how it was found and the command line that runs it."""

    path: str  # as the user named it (or the file it was found in)
    found_by: str  # which step of the search order found it
    kind: str  # "python" | "node" | "executable" | "script"
    command: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...] = ()  # variables to add to the runner's environment

    def as_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["foundBy"] = record.pop("found_by")
        record["command"] = list(self.command)
        record["env"] = dict(self.env)
        return record


def runner_for_file(path: str, found_by: str, cwd: Path) -> RunnerSpec:
    """How to run the runner file ``path`` (relative to ``cwd``), or the E_RUNNER_* error why not."""
    target = cwd / path
    if target.exists() and not target.is_file() and not target.is_dir():  # (/dev/null, a FIFO: there, but no runner)
        raise ReplayError(
            "E_RUNNER_NOT_EXECUTABLE", f"runner {path!r} (from {found_by}) is a {file_type(target)}, not a runner file",
            path=found_by, expected="a regular file: a .py/.mjs/.js/.cjs runner or an executable", received=file_type(target),
            howToFix="Point it at the runner's file (e.g. --runner .replay/runner.py).",
        )
    if not target.is_file():
        raise ReplayError(
            "E_RUNNER_PATH_NOT_FOUND",
            f"runner {path!r} (from {found_by}) " + ("is a directory" if target.is_dir() else "does not exist"),
            path=found_by, expected="an existing runner file", received=path,
        )
    absolute = str(target.resolve())
    suffix = target.suffix.lower()
    if suffix in TYPESCRIPT_SUFFIXES:
        raise ReplayError(
            "E_RUNNER_UNSUPPORTED_EXTENSION", f"runner {path!r} is TypeScript, which replay does not run directly",
            path=found_by, expected=".py, .mjs, .js, .cjs or an executable file", received=suffix,
            howToFix="Compile it to .mjs (e.g. `npx tsc`) and point --runner at the output, or write the runner in Python.",
        )
    if suffix == ".py":
        return RunnerSpec(path, found_by, "python", (sys.executable, absolute), str(cwd.resolve()))
    if suffix in NODE_SUFFIXES:
        node = shutil.which("node")
        if node is None:
            raise ReplayError(
                "E_RUNNER_START_FAILED", f"runner {path!r} needs node, which is not on PATH", path=found_by,
                expected="`node` on PATH", received="PATH=" + os.environ.get("PATH", ""),
                howToFix="Install Node.js 18+ (or put it on PATH), or use a .py runner.",
            )
        return RunnerSpec(path, found_by, "node", (node, absolute), str(cwd.resolve()))
    if not os.access(target, os.X_OK):
        raise ReplayError(
            "E_RUNNER_NOT_EXECUTABLE", f"runner {path!r} has no known extension and is not executable", path=found_by,
            expected="an executable file (or a .py/.mjs/.js/.cjs runner)", received=_mode(target),
            howToFix=f"Run `chmod +x {path}` (with a #! line), or give it a .py/.mjs/.js/.cjs extension.",
        )
    return RunnerSpec(path, found_by, "executable", (absolute,), str(cwd.resolve()))


def _mode(target: Path) -> str:
    return "mode " + oct(target.stat().st_mode & 0o777)


def _note_unusable(target: Path, name: str, passed: list[str]) -> None:
    """Add to ``passed`` why ``target``, a candidate of the search that is no regular file, cannot be used when its name
    is there all the same (a folder, a link to nothing or in a loop, a pipe, a device, one that cannot be looked at);
    a name that is not there at all is no candidate and adds nothing."""
    try:
        os.stat(target)
    except FileNotFoundError:
        if target.is_symlink():
            passed.append(f"{name} is a symbolic link to {os.readlink(target)!r}, which does not exist")
        return
    except NotADirectoryError:
        return  # (a folder on the way is a file: no such name)
    except OSError as exc:  # a link in a loop (ELOOP), a folder that cannot be searched (EACCES)...
        passed.append(f"{name} cannot be looked at ({exc.strerror or exc})")
        return
    if target.is_dir():
        passed.append(f"{name} is a directory")
    elif not target.is_file():
        passed.append(f"{name} is a {file_type(target)}")


def _package_script(cwd: Path, passed: list[str]) -> RunnerSpec | None:
    """The ``replay:runner`` script of ``cwd``'s package.json; None when there is none (what was there but could not
    be used is added to ``passed``, for E_RUNNER_NOT_FOUND to say)."""
    manifest = cwd / "package.json"
    if not manifest.is_file():
        _note_unusable(manifest, "package.json", passed)
        return None
    try:
        package = orjson.loads(skip_bom(manifest.read_bytes())[0])  # (npm reads one with a byte order mark too)
    except orjson.JSONDecodeError as exc:
        passed.append(f"package.json is not valid JSON ({exc})")
        return None  # not ours to judge; the search goes on
    scripts = package.get("scripts") if isinstance(package, dict) else None
    script = scripts.get(PACKAGE_SCRIPT) if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip():
        if isinstance(scripts, dict) and PACKAGE_SCRIPT in scripts:
            passed.append(f"package.json scripts.{PACKAGE_SCRIPT} is {_what(script)}, not a command")
        return None
    bin_dir = str((cwd / "node_modules" / ".bin").resolve())
    path = bin_dir + os.pathsep + os.environ.get("PATH", "")
    return RunnerSpec("package.json", f"package.json scripts.{PACKAGE_SCRIPT}", "script", ("sh", "-c", script),
                      str(cwd.resolve()), (("PATH", path),))


def _pyproject_runner(cwd: Path, passed: list[str]) -> RunnerSpec | None:
    """The ``[tool.replay] runner`` of ``cwd``'s pyproject.toml; None when there is none (``passed`` as above)."""
    project = cwd / "pyproject.toml"
    if not project.is_file():
        _note_unusable(project, "pyproject.toml", passed)
        return None
    try:
        config = tomllib.loads(skip_bom(project.read_bytes())[0].decode("utf-8"))  # (a Windows editor's mark)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        passed.append(f"pyproject.toml is not valid TOML ({exc})")
        return None
    tool = config.get("tool")
    section = tool.get("replay") if isinstance(tool, dict) else None  # (another `tool` is no business of ours)
    runner = section.get("runner") if isinstance(section, dict) else None
    if not isinstance(runner, str) or not runner:
        if isinstance(section, dict) and "runner" in section:
            passed.append(f"pyproject.toml [tool.replay] runner is {_what(runner)}, not a path")
        return None
    return runner_for_file(runner, "pyproject.toml [tool.replay] runner", cwd)


def discover_runner(explicit: str | None = None, *, env: Mapping[str, str] | None = None,
                    cwd: str | Path = ".") -> RunnerSpec:
    """The runner to use, by the search order above; E_RUNNER_* errors (exit 2) when there is none usable."""
    env = os.environ if env is None else env
    root = Path(cwd)
    if explicit:
        return runner_for_file(explicit, "--runner", root)
    if env.get(ENV_VAR):
        return runner_for_file(env[ENV_VAR], ENV_VAR, root)
    passed: list[str] = []  # what is there but cannot be a runner: E_RUNNER_NOT_FOUND says so
    for name in RUNNER_FILES:
        if (root / name).is_file():
            return runner_for_file(name, name, root)
        _note_unusable(root / name, name, passed)
    found = _package_script(root, passed) or _pyproject_runner(root, passed)
    if found is not None:
        return found
    received = "none of them in " + str(root.resolve()) + "".join(f"; {why}" for why in passed)
    raise ReplayError(
        "E_RUNNER_NOT_FOUND", "no runner found: replay needs your runner to send the prompt to"
        + (f" ({len(passed)} passed over: `received` says why)" if passed else ""), path="runner",
        expected="one of: " + ", ".join(SEARCH_ORDER), received=received,
        howToFix=("Fix what `received` names, or create " if passed else "Create ")
                 + ".replay/runner.py (or .mjs) that reads the request on stdin and prints the output object; "
                 "or set REPLAY_RUNNER, or pass --runner PATH. See examples/runners/.",
        example="replay --runner examples/runners/echo_runner.py \"What are my top holdings?\"",
    )


def _what(value: Any) -> str:
    """A manifest value as E_RUNNER_NOT_FOUND names it: a blank string, or its JSON type."""
    return with_article("blank string" if isinstance(value, str) else json_type(value))


def prompt_on_stdin(given: str) -> bool:
    """Is the prompt read from stdin (``prompt_from``): no ``given`` one, and stdin neither closed nor a terminal?"""
    return not given and sys.stdin is not None and not sys.stdin.isatty()


def stdin_known_empty() -> bool:
    """Is stdin known to hold no prompt without reading it: ``/dev/null``, or a regular file read to its end? A pipe
    is not: only reading it tells, and a prompt piped in is read once the runner was found (a refused capture leaves
    the pipe unread)."""
    try:
        fd = sys.stdin.fileno()
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            return st.st_size <= os.lseek(fd, 0, os.SEEK_CUR)
        return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(os.devnull).st_rdev
    except (AttributeError, OSError, ValueError):  # (closed, or no descriptor: an in-process test's stdin)
        return False


def prompt_from(given: str) -> str:
    """The prompt: ``given`` (the command's arguments), else stdin when it is not a terminal."""
    if given:  # (bytes of an argument that are not UTF-8 reach us as surrogate escapes)
        prompt = utf8_text(given.encode("utf-8", "surrogateescape"), "E_PROMPT_INVALID", "the prompt argument", path="prompt")
        prompt, received = prompt.strip(), "blank prompt argument"
    elif prompt_on_stdin(given):
        require_stdin()  # (a directory there is refused as unreadable)
        data, skipped = skip_bom(_read_stdin())  # (a prompt a Windows editor saved: `replay < prompt.txt`)
        prompt = utf8_text(data, "E_PROMPT_INVALID", "the prompt on stdin", skipped, path="prompt", source="<stdin>")
        prompt, received = prompt.strip(), "empty stdin"
    else:
        prompt, received = "", f"no prompt argument and stdin is {'closed' if sys.stdin is None else 'a terminal'}"
    if not prompt:
        raise ReplayError(
            "E_PROMPT_REQUIRED", "no prompt: give it as an argument or pipe it on stdin", path="prompt",
            expected="a non-empty prompt argument, or the prompt on stdin", received=received,
            example='replay "What are my top holdings?"   or   echo "What are my top holdings?" | replay',
        )
    return prompt


def _read_stdin() -> bytes:
    """All of stdin; an interrupt while it waits for more ends the wait (``read_to_end``), not the end of stdin."""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # (a stdin with no descriptor: an in-process test's)
        return sys.stdin.buffer.read()
    return read_to_end(fd)


@register("discover")
class DiscoverRunner(Source):
    summary = "Find the user's runner (--runner, REPLAY_RUNNER, .replay/runner.*, package.json, pyproject.toml) and send one invocation record."
    options = {
        "prompt": Option(str, "", "the prompt to send the runner; empty: the command's arguments, else stdin",
                         bind="args", words=True),
        "runner": Option(str, "", "runner path; empty means search in the documented order"),
        "context": Option(dict, {}, "the context object sent to the runner"),
        "run_id": Option(str, "", "the run's id; empty means a new time-sortable one"),
        "cwd": Option(str, ".", "project directory the search starts in and the runner runs in"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._spec: RunnerSpec | None = None
        self._prompt: str | None = None

    def reads_stdin(self) -> str | None:
        return None if self.config["prompt"] else self.named(None)[1]  # (the prompt, when none is given)

    def preflight(self, inputs: list[str]) -> None:
        """Refuse (exit 2) before anything runs: no prompt (a prompt on stdin waits for ``preflight_input``), or no
        usable runner."""
        if prompt_on_stdin(self.config["prompt"]):
            require_stdin()  # (a directory there is refused now: telling reads nothing of it)
            if stdin_known_empty():  # no prompt at all, as on a terminal: said first, before a runner is looked for
                self.prompt()  # (E_PROMPT_REQUIRED: it reads nothing, there is nothing to read)
        else:
            self.prompt()
        self.resolve()

    def preflight_input(self, inputs: list[str]) -> None:
        """Refuse (exit 2) before anything runs: no prompt on stdin. Read only now, once the runner was found and the
        outputs were tried: stdin is read once, and a capture refused for anything else leaves it unread."""
        self.prompt()

    def prompt(self) -> str:
        """The prompt option, else stdin when it is not a terminal; E_PROMPT_REQUIRED when there is none."""
        if self._prompt is None:
            self._prompt = prompt_from(self.config["prompt"])
        return self._prompt

    def resolve(self) -> RunnerSpec:
        """Find the runner now (the capture command calls this to refuse before anything runs)."""
        if self._spec is None:
            self._spec = discover_runner(self.config["runner"] or None, cwd=self.config["cwd"])
        return self._spec

    def invocation(self, moment: datetime | None = None) -> dict[str, Any]:
        moment = moment or datetime.now(UTC)
        run_id = self.config["run_id"] or new_run_id(moment)
        return {
            "$record": INVOCATION_RECORD,
            "runId": run_id,
            "runner": self.resolve().as_record(),
            "input": runner_request(self.prompt(), run_id, moment, dict(self.config["context"])),
        }

    async def produce(self, out: Output) -> None:
        await out.send(Batch.of([self.invocation()], source="<discover>"))
