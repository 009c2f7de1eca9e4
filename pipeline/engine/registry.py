"""The stage registry: stage types register where they are defined; third-party ones through entry points.

A built-in stage type lives in ``stages/<type>.py`` and registers itself with ``@register("<type>")``
on its class. The registry lists the built-in types from the module names of the ``replay.stages``
package (no import) and imports a module only when its type is first used, so the CLI starts fast.
Third-party stages register under the entry-point group ``replay.stages``; they never shadow a
built-in.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TypeVar

import orjson

from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.stage import AsyncTransform, Composite, Option, Sink, Source, Stage, Transform

ENTRY_POINT_GROUP = "replay.stages"
BUILTIN_PACKAGE = "replay.stages"

S = TypeVar("S", bound=type[Stage])

# type name -> class, filled by @register as stage modules are imported
_REGISTERED: dict[str, type[Stage]] = {}


def register(name: str) -> Callable[[S], S]:
    """Class decorator: make the stage class available as type ``name`` (in configs and specs)."""

    def decorate(cls: S) -> S:
        if not (isinstance(cls, type) and issubclass(cls, Stage)):
            raise TypeError(f"@register({name!r}) decorates a Stage subclass, not {cls!r}")
        known = _REGISTERED.get(name)
        if known is not None and known is not cls and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"stage type {name!r} is registered twice: {known.__module__} and {cls.__module__}")
        cls.name = name
        _REGISTERED[name] = cls
        return cls

    return decorate


def builtin_names() -> list[str]:
    """The built-in stage types: the module names of the ``replay.stages`` package."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def is_built_in(cls: type[Stage]) -> bool:
    """Is ``cls`` one of replay's own stage classes (defined in ``stages/``), not a plugin's (one that extends a
    built-in is the plugin's)?"""
    return cls.__module__.startswith(BUILTIN_PACKAGE + ".")


# the bases a stage class extends: the executor runs a stage as the one it is
_BASES = (Source, AsyncTransform, Transform, Sink, Composite)


def _load_target(target: str) -> type[Stage]:
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Stage)):
        raise TypeError(f"{target} is not a replay Stage class")
    base = next((b for b in _BASES if issubclass(cls, b)), None)
    if base is None:
        raise TypeError(f"{target} subclasses Stage itself, not one of " + ", ".join(b.__name__ for b in _BASES))
    if cls.kind != base.kind:
        raise TypeError(f"{target} is a {base.__name__}, of kind {base.kind!r}, but says kind = {cls.kind!r}")
    if not isinstance(cls.ports, tuple) or not all(isinstance(p, str) and p and "." not in p for p in cls.ports):
        raise TypeError(f"{target}.ports is not a tuple of port names")
    if not isinstance(cls.options, dict) or not all(isinstance(o, Option) for o in cls.options.values()):
        raise TypeError(f"{target}.options is not a table of Option(...)s")
    for key, option in cls.options.items():
        problem = option.problem()
        if problem:
            raise TypeError(f"option {key!r} of {target}: {problem}")
    return cls


class Registry:
    """Stage types by name: the built-ins, then third-party entry points."""

    def __init__(self, *, plugins: bool = True) -> None:
        self._builtin = set(builtin_names())
        self._want_plugins = plugins
        self._plugins_loaded = False
        self._plugin_targets: dict[str, str] = {}
        self._classes: dict[str, type[Stage]] = {}
        self._problems: list[dict] = []

    @property
    def problems(self) -> list[dict]:
        """Diagnostics for third-party stages that could not be loaded (or would shadow a built-in)."""
        _ = self._plugins
        return self._problems

    @property
    def _plugins(self) -> dict[str, str]:
        """Third-party types, looked up once and only when needed: a graph of built-in stages (every
        command's) never pays for reading the installed packages' entry points."""
        if self._want_plugins and not self._plugins_loaded:
            self._plugins_loaded = True
            from importlib.metadata import entry_points  # slow to import

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                if ep.name in self._builtin:
                    self._problems.append(diagnostic(
                        "E_STAGE_LOAD_FAILED", f"entry point {ep.name!r} ({ep.value}) would shadow a built-in stage; ignored",
                        received=ep.value,
                    ))
                    continue
                self._plugin_targets[ep.name] = ep.value
        return self._plugin_targets

    def names(self) -> list[str]:
        return sorted(self._builtin | set(self._plugins))

    def get(self, name: str, *, path: str | None = None) -> type[Stage]:
        if name in self._classes:
            return self._classes[name]
        if name in self._builtin:
            cls = self._load_builtin(name, path)
        elif name in self._plugins:
            try:
                cls = _load_target(self._plugins[name])
            except (Exception, SystemExit) as exc:  # (a module that calls sys.exit() as it is imported ended replay, silent)
                said = f"SystemExit: {exc}" if isinstance(exc, SystemExit) else exc
                raise ReplayError(
                    "E_STAGE_LOAD_FAILED", f"stage type {name!r} ({self._plugins[name]}) failed to load: {said}",
                    path=path, received=self._plugins[name],
                ) from exc
            if not vars(cls).get("name"):  # its own name, not one inherited from a built-in it extends
                cls.name = name
        else:
            raise ReplayError(
                "E_CONFIG_STAGE_TYPE_UNKNOWN", f"unknown stage type {name!r}", path=path, received=name,
                expected="one of: " + ", ".join(self.names()),
            )
        self._classes[name] = cls
        return cls

    @staticmethod
    def _load_builtin(name: str, path: str | None) -> type[Stage]:
        module = f"{BUILTIN_PACKAGE}.{name}"
        importlib.import_module(module)
        cls = _REGISTERED.get(name)
        if cls is None:
            raise ReplayError("E_STAGE_LOAD_FAILED", f"module {module} registers no stage type {name!r}",
                              path=path, received=module,
                              howToFix=f"Decorate the stage class in {module} with @register({name!r}).")
        return cls

    def describe_all(self) -> list[dict]:
        """Every stage type's description (``Stage.describe``); a third-party one that cannot be loaded or described
        (its describe() raises, an option's default JSON cannot write) is left out and reported in ``problems``."""
        out = []
        for name in self.names():
            try:
                info = self.get(name).describe()
                info["type"] = name
                orjson.dumps(info)  # (what `replay stages` prints of it, text or JSON)
            except ReplayError as exc:
                self._problems.append(exc.body)
                continue
            except Exception as exc:
                if name in self._builtin:
                    raise
                self._problems.append(diagnostic(
                    "E_STAGE_LOAD_FAILED", f"stage type {name!r} ({self._plugins[name]}) cannot be described: "
                    f"{type(exc).__name__}: {exc}", received=self._plugins[name],
                ))
                continue
            out.append(info)
        return out
