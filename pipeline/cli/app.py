"""The ``replay`` command line: the command group, the exit-code contract and error printing.

stdout carries data only. Every failure is one JSON object on stderr (``{"error": {...}}``) with a
code from ERROR_CODES.md. Exit 0 done, 1 failed after output started, 2 refused before any output,
130 interrupted (Ctrl-C; SIGTERM and SIGHUP interrupt as Ctrl-C does and exit 143 and 129: 128 + the
signal's number; a run a stage keeps alive 2 s past the interrupt is ended hard, E_STAGE_NOT_STOPPED naming the
stage: ``engine.interrupts``; a capture that stopped its runner writes its files despite further interrupts, ended
hard only when it is still writing 2 s after one). A reader that closes the pipe early (``| head -1``) ends the run
quietly, with the verdict so far: 1 when an error was reported before, else 0 (``PipeClosed.verdict``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import sys
import time
from collections.abc import Iterable
from types import FrameType
from typing import Any

import click

from replay.pipeline.cli.command import ReplayCommand, ReplayCommandGroup, say
from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    INTERRUPTS,
    PipeClosed,
    ReplayError,
    StrictAbort,
    error_line,
    find_running_command_by,
    interrupted_exit,
)
from replay.pipeline.engine.executor import ErrorPort, RunResult, StageFailed, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.log import LEVELS, SESSION, log_unraisable, log_warnings, make_logger, write_stderr
from replay.pipeline.engine.memory import spare_teardown, tune_gc
from replay.pipeline.engine.quota import DEFAULT_LIMIT
from replay.pipeline.engine.stage import Option, Source

EXAMPLES = """\b
Examples:
  replay read run.jsonl                      canonical JSONL on stdout
  replay read runs/ | replay heal | replay report
  replay read --follow live.jsonl            keep reading while it grows
  replay run examples/pipelines/tools-only.toml run.jsonl
  replay stages --json                       every stage type and its options
  replay schema event                        the canonical event's JSON Schema
"""

# Commands live in their own modules; imported lazily so `replay read` does not pay for the rest.
COMMANDS = {
    "capture": "replay.pipeline.cli.commands.capture:capture",
    "heal": "replay.pipeline.cli.commands.heal:heal",
    "validate": "replay.pipeline.cli.commands.validate:validate",
    "report": "replay.pipeline.cli.commands.report:report",
    "read": "replay.pipeline.cli.commands.read:read",
    "run": "replay.pipeline.cli.commands.run:run",
    "stages": "replay.pipeline.cli.commands.stages:stages",
    "schema": "replay.pipeline.cli.commands.schema:schema",
    "export": "replay.pipeline.cli.commands.export:export",
    "incident": "replay.pipeline.cli.commands.incident:incident",
    "golden": "replay.pipeline.cli.commands.golden:golden",
    "script": "replay.pipeline.cli.commands.script:script",
    "walk": "replay.pipeline.cli.commands.walk:walk",
    "diff": "replay.pipeline.cli.commands.diff:diff",
    "write": "replay.pipeline.cli.commands.write:write",
}
DEFAULT_COMMAND = "capture"  # `replay "prompt"` means `replay capture "prompt"` once capture exists
HELP = "help"  # `replay help [COMMAND]`, as the seed has it
IMPLIED = "replay.implied_capture"  # ctx.meta key: capture was put in front of a leading flag
TYPED = "replay.typed_args"  # ctx.meta key: the arguments of the command line run, as typed (``typed_line``)
# Verbs the product reserves: never taken as a prompt, even in a build that lacks their command (a
# mistyped or unbuilt command must not start the user's runner). Every command name is reserved too.
RESERVED = frozenset({HELP, "version", "write", "test", "init", "import", "inspect", "promote", "replay", "fuzz"})


def _quote(text: str) -> str:
    """``text`` as a shell word (shlex is loaded only when a mistyped command needs the hint)."""
    import shlex

    return shlex.quote(text)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # slow to import: only for --version

    try:
        return version("agent-replay")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    say(f"replay {package_version()}")
    ctx.exit()


class Interrupted(Exception):
    """Ctrl-C, carried past click (which would print a newline on stderr for it)."""


_interrupt: int = signal.SIGINT  # the signal that interrupted the run (exit 128 + it): Ctrl-C's, unless SIGTERM or SIGHUP came


def interrupt_like_ctrl_c() -> None:
    """SIGTERM and SIGHUP (``kill``, ``timeout``, a closed terminal) interrupt replay as Ctrl-C does: runners are
    stopped, no partial output is left, a capture still writes its files. One started ignored (``nohup``) stays so."""
    for number in INTERRUPTS:
        if number != signal.SIGINT and signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, _as_ctrl_c)


def _as_ctrl_c(number: int, frame: FrameType | None) -> None:
    """Handle SIGTERM or SIGHUP with whatever handles Ctrl-C now (asyncio's cancellation inside a run, else KeyboardInterrupt)."""
    global _interrupt
    _interrupt = number
    interrupts.interrupted(number)  # (the last resort's clock, with this signal's exit code; not again as SIGINT below)
    if interrupts.finishing_run():
        return  # the run took an interrupt already and writes what it has (capture): the last resort alone hears this
    handler = interrupts.unwrapped(signal.getsignal(signal.SIGINT))
    (handler if callable(handler) else signal.default_int_handler)(signal.SIGINT, frame)


class Unforeseen(Exception):
    """An error replay did not foresee, carried past click's main (its cause), which would take it for something it is
    not; ``run_cli`` reports the cause as ``E_UNHANDLED``."""


class ReplayGroup(ReplayCommandGroup):
    """replay itself: lazily loaded subcommands; a lone first argument that is no command is a prompt for the default command.

    The seed's shorthand is one argument, `replay "prompt"`. Several positional words whose first is
    not a command (`replay walk run_1` in a build without walk, `replay hello world`) are refused and
    nothing runs: a mistyped command must never start the user's runner. Words the product reserves
    (RESERVED) are never prompts, even in a build without their command.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise Interrupted() from exc
        except EOFError as exc:  # (click's main takes any EOFError for Ctrl-D at a prompt, an interrupt: exit 130, and a
            raise Unforeseen() from exc  # blank line on stderr; none of replay's is one: a fork server killed, a plugin's)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in (*COMMANDS, HELP) if self.get_command(ctx, name) is not None)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == HELP:
            return help_command
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            return None  # a command whose module is not part of this build

    def has_command(self, name: str) -> bool:
        """Is the command's module part of this build? Checked without importing it (start-up time)."""
        module = COMMANDS[name].partition(":")[0]
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """No arguments: a piped prompt (`echo prompt | replay`) goes to capture; on a terminal, the help (as every
        group gives it: ``ReplayCommandGroup``). After the group's own flags (`--log-level info`), a flag the group does
        not know (`replay --runner r.py "prompt"`) is capture's. The command line is kept as typed (``typed_line``)."""
        ctx.meta.setdefault(TYPED, list(args))
        if self.has_command(DEFAULT_COMMAND) and not ctx.resilient_parsing:
            from replay.pipeline.io.journals import stdin_is_terminal

            start = self._own_flags_end(ctx, args)
            rest = args[start:]
            if not rest and sys.stdin is not None and not stdin_is_terminal() and not self._asks_for_info(args):
                args = [*args, DEFAULT_COMMAND]
            elif rest and rest[0].startswith("-") and rest[0] != "--":
                self._refuse_flag_before_command(ctx, rest)
                args = [*args[:start], DEFAULT_COMMAND, *rest]
                ctx.meta[IMPLIED] = True  # the user did not type `capture`: the one-argument rule applies
        return super().parse_args(ctx, args)

    def _refuse_flag_before_command(self, ctx: click.Context, rest: list[str]) -> None:
        """`replay --strict read x.jsonl`: a flag that neither replay nor capture has, followed by a command name, is
        the command's flag put before it; refused as replay's (not capture's) unknown flag, saying where it goes."""
        default = self.get_command(ctx, DEFAULT_COMMAND)
        assert default is not None
        i = flags_end(rest, flags_taking_values(default.get_params(ctx)))
        if i < len(rest) and rest[i] in COMMANDS:
            self._refuse_capture_flags_before(ctx, rest[:i], rest[i], rest[i + 1:])
        if i >= len(rest) or not rest[i].startswith("-") or rest[i] == "--":
            return  # capture's flags, then a prompt (`replay --runner r.py "prompt"`)
        name = next((word for word in rest[i + 1:] if word in COMMANDS), None)
        command = self.get_command(ctx, name) if name is not None else None
        if command is None:
            return  # no command follows (`replay --bogus "prompt"`): capture's parser refuses it, with its flags
        flag = rest[i].partition("=")[0]
        how = (f"Put {flag} after the command name: `replay {name} {flag} ...`; only {', '.join(own_flags(self))} "
               f"go before it." if flag in flags_taking_values(command.get_params(ctx)) else
               f"`replay {name}` has no {flag} either: run `replay {name} --help` to list its flags.")
        raise ReplayError("E_UNKNOWN_FLAG", f"No such option '{flag}' for replay itself (before the command {name!r}).",
                          path=ctx.command_path, received=flag, expected=", ".join(own_flags(self)), howToFix=how)

    def _refuse_capture_flags_before(self, ctx: click.Context, flags: list[str], name: str, after: list[str]) -> None:
        """`replay --runner r.py capture "prompt"`, `replay --timeout-ms 5 read x.jsonl`: capture's flags (``flags``, with
        their values) before a command name (``after`` it, its arguments), which no prompt is: they were "unknown command
        'capture'". Refused (E_USAGE_INVALID: a flag replay knows, in the wrong place; one no command has there is
        E_UNKNOWN_FLAG, ``_refuse_flag_before_command``), saying where they go: after `capture`, or before a prompt
        without it."""
        flag, given = flags[0].partition("=")[0], " ".join(map(_quote, flags))
        own = ", ".join(own_flags(self))
        if name == DEFAULT_COMMAND:
            prompt = " ".join(map(_quote, after)) or '"prompt"'
            message = (f"{flag} came before the command 'capture': it is capture's flag, not one of replay's own, and goes "
                       "after `capture` (or before a prompt without `capture`)")
            how = (f"Put {flag} after the command name: `replay capture {given} {prompt}`; or leave `capture` out: "
                   f"`replay {given} {prompt}`. Only {own} go before a command.")
        else:
            command = self.get_command(ctx, name)
            theirs = command is not None and flag in flags_taking_values(command.get_params(ctx))
            message = (f"{flag} came before the command {name!r}: it is capture's flag, not one of replay's own, and "
                       "only goes before a prompt without `capture`")
            how = (f"Put {flag} after the command name: `replay {name} {flag} ...`" if theirs else
                   f"`replay {name}` has no {flag} (run `replay {name} --help` to list its flags)")
            how += f"; only {own} go before a command. To send {name!r} to your runner as a prompt, run " \
                   f"`replay capture {given} {_quote(name)}`."
        raise ReplayError("E_USAGE_INVALID", message, path=ctx.command_path, received=flag,
                          expected=f"only {own} before a command", howToFix=how)

    def _own_flags_end(self, ctx: click.Context, args: list[str]) -> int:
        """Where the group's own leading flags (and their values) end in ``args``."""
        return flags_end(args, flags_taking_values(self.get_params(ctx)))

    def _asks_for_info(self, args: list[str]) -> bool:
        return any(a in ("-h", "--help", "-V", "--version") for a in args)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name.startswith("-") and not ctx.resilient_parsing:
            # Only what came after `--` starts with '-' here (parse_args gives capture every other leading flag):
            # `replay -- "-x y"` is a prompt that starts with '-', as `replay --runner r.py -- "-x y"` is.
            default = self.get_command(ctx, DEFAULT_COMMAND)
            if default is not None:
                self._refuse_several_words(ctx, args)
                return DEFAULT_COMMAND, default, ["--", *args]
        if name.startswith("-") or not args:  # (`replay ""` goes on: a blank prompt, as `replay "   "` is)
            return super().resolve_command(ctx, args)
        if name == DEFAULT_COMMAND and ctx.meta.get(IMPLIED):
            default = self.get_command(ctx, DEFAULT_COMMAND)
            assert default is not None
            words = positional_words(default, ctx, args[1:])
            self._refuse_several_words(ctx, words)
            self._refuse_a_path(words[:1])
            if words and (words[0] in COMMANDS or words[0] in RESERVED):
                raise ReplayError(
                    "E_USAGE_INVALID", f"{words[0]!r} is a command name, and command names are never prompts",
                    received=args[1:], howToFix=f"Put the command first (`replay {words[0]} ...`); to send "
                    f"{words[0]!r} as a prompt, run `replay capture ... {_quote(words[0])}`.",
                )
            return name, default, args[1:]
        if name in COMMANDS or name in RESERVED:
            command = self.get_command(ctx, name)
            if command is None:
                built = "is not part of this build" if name in COMMANDS else "is reserved for a command replay does not have yet"
                raise ReplayError(
                    "E_COMMAND_UNKNOWN", f"command {name!r} {built}", received=name, expected=self._listing(ctx),
                    howToFix=f"Run `replay --help` to list the commands; to send {name!r} as a prompt, run "
                             f"`replay capture {_quote(name)}`.",
                )
            return name, command, args[1:]
        default = self.get_command(ctx, DEFAULT_COMMAND)
        if default is None:
            raise ReplayError("E_COMMAND_UNKNOWN", f"unknown command {name!r}", received=name, expected=self._listing(ctx))
        self._refuse_a_path([name])
        if not any(ch.isspace() for ch in name):
            # A one-word first argument that is nearly a command name is a typo, not a prompt: refuse
            # it rather than start the user's runner with "valdate" as the question.
            import difflib  # (only for a command name that is not one)

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.75)
            if near:
                raise ReplayError(
                    "E_COMMAND_UNKNOWN", f"unknown command {name!r}; did you mean {near[0]!r}?", received=name,
                    expected=self._listing(ctx),
                    howToFix=f"Run `replay {near[0]} ...`, or `replay capture {name}` to send it as a prompt.",
                )
        self._refuse_several_words(ctx, positional_words(default, ctx, args))
        return DEFAULT_COMMAND, default, args

    @staticmethod
    def _refuse_a_path(words: list[str]) -> None:
        """`replay run.jsonl`: a lone prompt that names a file or folder here is a command left out, not a question for
        the user's runner (which may be a paid model call); `replay capture run.jsonl` sends it as a prompt."""
        if not words or any(ch.isspace() for ch in words[0]) or not os.path.lexists(words[0]):
            return
        path = words[0]
        raise ReplayError(
            "E_USAGE_INVALID", f"{path!r} names a {'folder' if os.path.isdir(path) else 'file'} here, and a prompt "
            "without `capture` is never a path: was a command left out?", received=path,
            howToFix=f"Name the command (`replay report {_quote(path)}`, `replay heal {_quote(path)}`, `replay walk "
                     f"{_quote(path)}`, ...); to send {path!r} to your runner as a prompt, run `replay capture {_quote(path)}`.",
            example=f"replay report {_quote(path)}",
        )

    def _refuse_several_words(self, ctx: click.Context, words: list[str]) -> None:
        """`replay walk run_1`, `replay hello world`: the prompt shorthand is one argument; more words are
        a command line meant for a command, and must not start the runner."""
        if len(words) <= 1:
            return
        raise ReplayError(
            "E_COMMAND_UNKNOWN",
            f"unknown command {words[0]!r} (followed by {len(words) - 1} more argument{'s' * (len(words) > 2)}); "
            "a prompt without `capture` is one quoted argument",
            received=words, expected=self._listing(ctx),
            howToFix=f"Run `replay --help` to list the commands; to send a prompt, quote it as one argument: "
                     f"`replay {'-- ' * words[0].startswith('-')}{_quote(' '.join(words))}` (or `replay capture WORDS...`).",
        )

    def _listing(self, ctx: click.Context) -> str:
        return "one of: " + ", ".join(self.list_commands(ctx))


def own_flags(command: click.Command) -> list[str]:
    """The flags ``command`` itself declares (not --help), as an unknown flag's error lists them."""
    return sorted({flag for p in command.params for flag in (*p.opts, *p.secondary_opts) if flag.startswith("-")})


def flags_taking_values(params: Iterable[click.Parameter]) -> dict[str, bool]:
    """Each flag of ``params``, and whether a value follows it (``--out DIR``) or not (a switch, a count): as
    click parses them (its ``store`` and ``append`` actions take one value)."""
    return {flag: not param.is_flag and not param.count
            for param in params if isinstance(param, click.Option) for flag in (*param.opts, *param.secondary_opts)}


def past_flag(args: list[str], i: int, takes_value: dict[str, bool]) -> int | None:
    """Where the argument after the flag ``args[i]`` (and its value: ``--out DIR``, ``--out=DIR``) is; None when
    ``args[i]`` is no flag ``takes_value`` knows."""
    flag, eq, _ = args[i].partition("=")
    if flag not in takes_value:
        return None
    return i + (2 if takes_value[flag] and not eq else 1)


def flags_end(args: list[str], takes_value: dict[str, bool]) -> int:
    """Where the leading flags of ``args`` that ``takes_value`` knows (and their values) end: the first argument
    that is none of them (a word, ``--``, an unknown flag), or ``len(args)`` (a value flag last, its value missing)."""
    i = 0
    while i < len(args) and (after := past_flag(args, i, takes_value)) is not None:
        i = after
    return min(i, len(args))


def positional_words(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """The positional arguments in ``args`` as ``command`` would parse them under ``ctx`` (its help flags too;
    flag values are not words). Empty when ``args`` hold a flag ``command`` does not have: its parser refuses
    those (E_UNKNOWN_FLAG)."""
    takes_value = flags_taking_values(command.get_params(ctx))
    words: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            words.extend(args[i + 1:])
            break
        if arg.startswith("-") and arg != "-":
            after = past_flag(args, i, takes_value)
            if after is None:
                return []
            i = after
            continue
        words.append(arg)
        i += 1
    return words


@click.command(HELP, cls=ReplayCommand)
@click.argument("command", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, command: tuple[str, ...]) -> None:
    """Show the help of replay, or of COMMAND (`replay help heal`, `replay help incident import`)."""
    target = ctx.find_root()
    for name in command:
        group = target.command
        sub = group.get_command(target, name) if isinstance(group, click.Group) else None
        if sub is None:
            names = group.list_commands(target) if isinstance(group, click.Group) else []
            raise ReplayError("E_COMMAND_UNKNOWN", f"no command {' '.join(command)!r} to show the help of", received=name,
                              expected="one of: " + ", ".join(names) if names else f"no subcommand: {target.command_path!r} has none")
        target = click.Context(sub, info_name=name, parent=target)
    say(target.get_help())


@click.group(cls=ReplayGroup, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.option("--log-level", type=click.Choice(LEVELS), default="warning", show_default=True,
              help="Log detail on stderr (JSON lines unless stderr is a terminal).")
@click.option("--max-errors", type=click.IntRange(min=0), default=DEFAULT_LIMIT, show_default=True,
              help="Errors (and warnings) printed per input and code; the rest are counted in one E_ERRORS_SUPPRESSED "
                   "(E_NOTICES_SUPPRESSED) line (0: all).")
@click.pass_context
def cli(ctx: click.Context, log_level: str, max_errors: int) -> None:
    """Capture, heal, validate, report and replay LLM agent run journals (JSONL event streams).

    Every command is a streaming graph of stages; stdout carries data only, errors are JSON on stderr.
    """
    ctx.obj = {"log": make_logger(log_level), "max_errors": max_errors}
    SESSION["log"] = ctx.obj["log"]
    log_warnings(ctx.obj["log"])


# The logger of the command being run, for run_cli's handlers: they run after click's context has closed, and a
# stage's traceback (`--log-level debug`) must go through the level the user asked for, not a fresh default one.


def logger() -> Any:
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, dict):
        return ctx.find_root().obj["log"]
    return SESSION.get("log") or make_logger()


def max_errors() -> int:
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, dict):
        return int(ctx.find_root().obj.get("max_errors", DEFAULT_LIMIT))
    return DEFAULT_LIMIT


def execute(graph: Graph, *, strict: bool = False, command: str = "", error_port: ErrorPort | None = None) -> RunResult:
    """Run a graph to completion on the asyncio backend and log a summary. A source that reads stdin for want of a path
    (``Source.reads_stdin_unnamed``: ``read``) is refused a terminal there first (``refuse_terminal_stdin``), whatever built
    the graph (a command, ``replay run``): the one place that rule is applied."""
    if any(isinstance(node.stage, Source) and node.stage.reads_stdin_unnamed() for node in graph.nodes.values()):
        refuse_terminal_stdin()
    log = logger()
    error_port = error_port or ErrorPort(strict=strict, limit=max_errors())
    started = time.perf_counter()
    log.debug("graph.start", command=command, stages=list(graph.nodes))
    result = interrupts.run_async(lambda: run_graph(graph, strict=strict, error_port=error_port, log=log))
    log.info("graph.done", command=command, errors=result.errors, seconds=round(time.perf_counter() - started, 3),
             dropped=result.dropped or None)
    return result


def run_spec(name: str, args: list[str] | tuple[str, ...] = (), *, set: dict[str, Any] | None = None,
             add: dict[str, dict[str, Any]] | None = None, bypass: list[str] | tuple[str, ...] = (),
             strict: bool = False, error_port: ErrorPort | None = None) -> RunResult:
    """A command's whole job once its flags are parsed: bind them into its shipped spec and run it."""
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.spec import bind, load_spec

    doc = bind(load_spec(name), set=set, add=add, bypass=bypass)
    return execute(graph_from_config(doc, paths=list(args)), strict=strict, command=name, error_port=error_port)


def refuse_terminal_stdin(takes_paths: bool = True) -> None:
    """The one rule of every command that reads stdin when no path is given: a terminal there is refused
    (E_USAGE_INVALID, exit 2), not waited on; a `-` given as a path reads it, terminal or not. A command line that
    reads only stdin (not ``takes_paths``: `replay validate --pass-through`) is advised only the pipe and `-`."""
    from replay.pipeline.io.journals import STDIN, stdin_is_terminal

    if not stdin_is_terminal():
        return
    typed = typed_line() or typed_command() or "replay read"
    piped = f"replay read run.jsonl | {typed}"
    on_terminal = f"to type the stream on the terminal, pass `-` (`{typed} -`, Ctrl-D ends it)."
    if not takes_paths:
        raise ReplayError("E_USAGE_INVALID", "nothing to read: stdin is a terminal", path=STDIN,
                          expected="a stream piped on stdin", received="a terminal on stdin",
                          howToFix=f"Pipe a stream in (`{piped}`); {on_terminal}", example=piped)
    raise ReplayError("E_USAGE_INVALID", "nothing to read: stdin is a terminal and no path was given", path=STDIN,
                      expected="a path, or a stream piped on stdin", received="a terminal on stdin",
                      howToFix=f"Pass a path (`{typed} run.jsonl`) or pipe a stream in (`{piped}`); {on_terminal}",
                      example=f"{typed} run.jsonl")


def warn_nothing_found(event: str, inputs: list[str], done: str) -> None:
    """The E_INPUTS_NOT_FOUND warning of validate, heal and report (``journals.warn_inputs_not_found``), on the
    command's logger."""
    from replay.pipeline.io.journals import warn_inputs_not_found

    warn_inputs_not_found(logger(), event, inputs, done)


def bounded(option: Option) -> click.ParamType:
    """The click type of a flag that sets a stage option: its number type, no less than the option's minimum (what a
    config may give it too: one definition, on the stage)."""
    if option.type is int:
        return click.IntRange(min=None if option.minimum is None else int(option.minimum))
    return click.FloatRange(min=option.minimum)


def exit_code_for(result: RunResult) -> int:
    return EXIT_FAILED if result.errors else EXIT_OK


def typed_command() -> str | None:
    """The command being run as typed (``replay incident import``): the path of click's current context, None
    outside one. What a usage error made while it runs names in its advice (``errors.running_command``)."""
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx is not None else None


find_running_command_by(typed_command)


def typed_line() -> str | None:
    """The whole command line being run as typed (``replay export --otlp``), as click's current context keeps it
    (``TYPED``, beside ``typed_command``'s path); None outside one. An example of it keeps the flags it needs."""
    import shlex

    ctx = click.get_current_context(silent=True)
    args = ctx.meta.get(TYPED) if ctx is not None else None
    return f"{ctx.find_root().info_name} {shlex.join(args)}" if ctx is not None and args else None


def _print_error(body: dict[str, Any]) -> None:
    write_stderr(error_line(body))  # (stderr closed, full or gone: the exit code still says it)


def _near_flags(flag: str, possibilities: list[str]) -> list[str]:
    """The flags click offers for ``flag`` that are near it by their names (``--lgo``: ``--log``): click compares them
    with their dashes, which two flags always share (``--out`` was offered ``--quiet``)."""
    import difflib  # (only for a flag that is not one)

    name = flag.lstrip("-")
    return [p for p in possibilities if difflib.SequenceMatcher(None, name, p.lstrip("-")).ratio() >= 0.6]


def _click_error(exc: click.ClickException) -> dict[str, Any]:
    from replay.pipeline.engine.errors import diagnostic, how_to_fix

    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)  # the command the words were given to: its help is the advice, by name
    typed = ctx.command_path if ctx is not None else None
    if isinstance(exc, click.NoSuchOption):
        command = ctx.command if ctx is not None else None
        known = own_flags(command) if command is not None else []
        advice = how_to_fix("E_UNKNOWN_FLAG", typed)
        replays = own_flags(ctx.find_root().command) if ctx is not None else []
        flag = (exc.option_name or "").partition("=")[0]
        if command is not None and flag in replays and ctx is not None and ctx.parent is not None:
            advice = (f"{flag} is a flag of replay itself, not of `{typed}`: put it before the command, "
                      f"`replay {flag} ... {command.name} ...` (replay's own flags: {', '.join(replays)}).")
        elif command is not None and command.name == DEFAULT_COMMAND:
            advice = ("Run `replay capture --help` to list the flags; a prompt that starts with '-' goes after "
                      "`--`: `replay -- '-v or -q?'`.")
        near = _near_flags(flag, exc.possibilities or [])
        message = f"No such option {exc.option_name!r}." + (
            "" if not near else f" Did you mean {near[0]!r}?" if len(near) == 1
            else f" (Did you mean one of: {', '.join(map(repr, near))}?)")
        return diagnostic("E_UNKNOWN_FLAG", message, path=typed, received=exc.option_name, howToFix=advice,
                          expected=", ".join(near) if near else ", ".join(known) or None)
    if isinstance(exc, click.UsageError) and message.startswith("No such command"):
        return diagnostic("E_COMMAND_UNKNOWN", message)
    return diagnostic("E_USAGE_INVALID", message, howToFix=how_to_fix("E_USAGE_INVALID", typed))


def main(argv: list[str] | None = None) -> None:
    tune_gc()
    log_unraisable()
    interrupt_like_ctrl_c()
    interrupts.enable()  # a stage that keeps a run alive past an interrupt's grace ends the process (E_STAGE_NOT_STOPPED)
    code = run_cli(argv)
    spare_teardown()
    sys.exit(code)


def run_cli(argv: list[str] | None = None) -> int:
    """Run replay's command line on ``argv`` (None: ``sys.argv[1:]``) in this process and return its exit code
    (0 ok, 1 failed, 2 refused, 128 + the signal's number when interrupted): what ``main`` does, without exiting; errors are written
    as JSON on stderr, as the CLI writes them."""
    SESSION.clear()  # an earlier in-process run's logger is not this one's
    try:
        rv = cli.main(args=argv, prog_name="replay", standalone_mode=False)
        return rv if isinstance(rv, int) else EXIT_OK
    except ReplayError as exc:
        _print_error(exc.body)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        _print_error(_click_error(exc))
        return EXIT_REFUSED
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        return interrupted_exit(_interrupt)
    except PipeClosed as exc:
        return exc.verdict
    except BrokenPipeError:  # (click's own output, --help or --version: every other write to stdout goes through
        from replay.pipeline.io.fdio import silence_stdout  # fdio, which makes it PipeClosed with the verdict so far)

        silence_stdout()
        return EXIT_OK
    except StrictAbort:
        return EXIT_FAILED  # the error itself was printed when it happened
    except StageFailed as exc:
        from replay.pipeline.engine.errors import diagnostic

        where = {"exception": exc.traceback} if exc.traceback else {"exc_info": exc.exc}
        logger().debug("stage.failed", stage=exc.stage_id, **where)
        _print_error(diagnostic("E_STAGE_FAILED", str(exc), path=exc.path, stage=exc.stage_id))
        return EXIT_FAILED
    except Exception as caught:
        from replay.pipeline.engine.errors import diagnostic

        error = caught.__cause__ if isinstance(caught, Unforeseen) and caught.__cause__ is not None else caught
        logger().debug("unhandled", exc_info=error)
        _print_error(diagnostic("E_UNHANDLED", f"{type(error).__name__}: {error}"))
        return EXIT_FAILED
