"""The click classes every replay command is made of: a flag that takes one value is given once, and help is data.

A value flag given twice (``write --out a --out b``, ``heal --in A --in B``) is refused (E_USAGE_INVALID, exit 2,
nothing run) rather than keeping the last value in silence. Flags meant to repeat (``multiple``, counts) repeat; so
do switches (``--strict --strict`` says it once more; ``--summary --no-summary``: the last one says, as an alias's
switch is undone). The help (``--help``, ``replay help``, ``--version``) is written as every output on stdout is
(``fdio.write_stdout``), and fails as any command's data does, naming ``<stdout>``: E_OUTPUT_UNWRITABLE for a
closed or read-only stdout, E_OUTPUT_WRITE_FAILED for one that refuses the write (a full disk).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import click

from replay.pipeline.engine.errors import ReplayError


def say(text: str) -> None:
    """``text`` and a newline on stdout, as data (what click's own echo did for help and version)."""
    from replay.pipeline.io.fdio import write_stdout  # (not loaded for a command that never prints its help)

    write_stdout(f"{text}\n".encode())


def _show_help(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        say(ctx.get_help())
        ctx.exit()


def takes_one_value(param: click.Parameter) -> bool:
    """Is ``param`` a flag with one value (``--out FILE``), which a second use would silently replace?"""
    return isinstance(param, click.Option) and not (param.is_flag or param.count or param.multiple)


def refuse_repeated(order: list[click.Parameter]) -> None:
    """Refuse a flag that takes one value given more than once (``order``: the parser's, one entry a use)."""
    for param, uses in Counter(order).items():
        if uses > 1 and takes_one_value(param):
            assert isinstance(param, click.Option)
            flag = next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
            raise ReplayError("E_USAGE_INVALID", f"{flag} was given {uses} times; it takes one value", path=flag,
                              expected=f"{flag} once", received=f"{flag} {uses} times", howToFix=f"Give {flag} once.")


class OnceEach(click.Command):
    """A command whose value flags are given once each, and whose help goes out as data (the module's rules)."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_once(args: list[str]) -> Any:
            opts, rest, order = parse(args=args)
            if not ctx.resilient_parsing:
                refuse_repeated(order)
            return opts, rest, order

        parser.parse_args = parse_once  # type: ignore[method-assign]
        return parser

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        option = super().get_help_option(ctx)
        if option is not None:
            option.callback = _show_help
        return option


class ReplayCommand(OnceEach):
    """A replay command (``@click.command(cls=ReplayCommand)``)."""


class ReplayCommandGroup(OnceEach, click.Group):
    """A replay command with subcommands (``incident``, ``golden``; replay itself: ``app.ReplayGroup``): theirs are
    ReplayCommands. Given no subcommand (`replay incident`, `replay --log-level info`), it shows its help on stdout and
    exits 0, as ``--help`` does and as `docker`, `kubectl` and their groups do, rather than click's usage error (its
    whole help as one JSON error, exit 2): asked for nothing, a group says what it holds."""

    command_class = ReplayCommand

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.no_args_is_help = False  # (``invoke`` shows the help, given no arguments or only the group's flags)

    def invoke(self, ctx: click.Context) -> Any:
        if not ctx._protected_args and not ctx.resilient_parsing:  # no subcommand
            say(ctx.get_help())
            ctx.exit(0)
        return super().invoke(ctx)
