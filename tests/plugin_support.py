"""A third-party stage package as pip would leave it on disk, for registry and `replay run` tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from replay.pipeline.engine.registry import ENTRY_POINT_GROUP

PLUGIN = '''
"""A third-party stage: upper-cases event types."""

from replay.pipeline.engine.stage import Option, Transform
from replay.stages.select import SelectEvents


class UpperTypes(Transform):
    summary = "Upper-case every event type (a plugin for tests)."
    options = {"suffix": Option(str, "", "text added after the type")}

    def __call__(self, batch):
        for i, event in enumerate(batch.events or ()):
            if isinstance(event.get("type"), str):
                batch.replace(i, {**event, "type": event["type"].upper() + self.config["suffix"]})
        return batch


class NotAStage:
    pass


class Limited(Transform):
    summary = "Keep at most `limit` events of each batch (a plugin for tests: its option is `int | None`)."
    options = {"limit": Option(int | None, None, "how many to keep (none: all)")}

    def __call__(self, batch):
        return batch if self.config["limit"] is None else batch.select(range(min(self.config["limit"], len(batch))))


class ToolsOnly(SelectEvents):
    """A plugin that extends a built-in stage (select) under a name of its own."""

    summary = "Keep tool events (a plugin for tests)."


class BadDefault(Transform):
    summary = "A plugin whose option's default is not of its type."
    options = {"depth": Option(int, "x", "a number whose default is a string")}

    def __call__(self, batch):
        return batch


class BadOption(Transform):
    summary = "A plugin whose option's type is no type."
    options = {"level": Option("int", 1, "a type given by name")}

    def __call__(self, batch):
        return batch
'''


def make_plugin(root: Path, entry_points: dict[str, str], *, module: str = PLUGIN, dist: str = "replay_upper") -> Path:
    """A package as pip would leave it: a module plus a `<name>-0.1.dist-info/` folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "replay_upper_plugin.py").write_text(textwrap.dedent(module))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{name} = {target}" for name, target in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root
