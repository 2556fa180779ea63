"""The plugin host: one pluggy manager per engine, built by :func:`make_plugin_host`.

There is no module-level manager: each engine (and each test) builds its own. Built-in
criteria are registered first, through the same hooks as third-party plugins; then the
installed plugins of the entry-point group ``snipe`` (only those named in
``SNIPE_PLUGINS`` when that variable is set; ``SNIPE_PLUGINS=`` loads none).

Every hook is called one implementation at a time so that a plugin that raises is named
and isolated (see :mod:`engine.hookspecs`); failures are kept in :attr:`PluginHost.failures`
and shown by ``snipe check`` and ``snipe plugins``.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pluggy

from . import hookspecs
from ._events import DailySummary
from ._notifiers import NotifierKind
from .ledger import Purchase
from .rules import CORE_RULE_KEYS, NOTIFY_CORE_KEYS, Criterion, Decision, EvalContext, PriceSource

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "PluginFailure",
    "PluginHost",
    "PluginInfo",
    "make_plugin_host",
]

ENTRY_POINT_GROUP = hookspecs.PROJECT
PLUGINS_ENV = "SNIPE_PLUGINS"
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_log = logging.getLogger("snipe.plugins")

EntryPoints = Callable[[], Iterable[importlib.metadata.EntryPoint]]


@dataclass(frozen=True, slots=True)
class PluginFailure:
    """A plugin that failed at some ``stage`` (load, register, a hook name) and why."""

    plugin: str
    stage: str
    error: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r} failed in {self.stage}: {self.error}"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A loaded plugin: its name, where it comes from, and the hooks it implements."""

    name: str
    source: str
    hooks: tuple[str, ...]


class PluginHost:
    """The engine's plugins and the isolated ways to call them."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.failures: list[PluginFailure] = []
        self.not_allowed: list[str] = []
        self._sources: dict[str, str] = {}
        self._criteria: list[Criterion] | None = None
        self._price_sources: dict[str, PriceSource] | None = None
        self._notifiers: list[NotifierKind] | None = None
        self.source_owners: dict[str, str] = {}
        """Price source name -> the plugin that registered it."""

    # ------------------------------------------------------------ registration

    def register(self, plugin: object, name: str, *, source: str = "registered in code") -> bool:
        """Register ``plugin`` under ``name``; on failure record it and return ``False``."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self._fail(name, "registration", exc)
            return False
        wrappers = [
            impl.function.__name__
            for caller in self.pm.get_hookcallers(plugin) or ()
            for impl in caller.get_hookimpls()
            if impl.plugin_name == name and (impl.hookwrapper or impl.wrapper)
        ]
        if wrappers:
            self.pm.unregister(name=name)
            self.failures.append(
                PluginFailure(name, "registration", f"hook wrappers are not supported: {wrappers}")
            )
            return False
        self._sources[name] = source
        self._criteria = self._price_sources = None
        self._notifiers = None
        return True

    def check_pending(self) -> None:
        """Unregister (and record) every plugin implementing a hook that does not exist."""
        while True:
            try:
                self.pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self.pm.get_name(exc.plugin) or repr(exc.plugin)
                self.pm.unregister(exc.plugin)
                self._sources.pop(name, None)
                self.failures.append(PluginFailure(name, "hook names", str(exc)))

    def load_entry_points(
        self, environ: Mapping[str, str], entry_points: EntryPoints | None = None
    ) -> None:
        """Load the installed plugins of the group ``snipe`` allowed by ``SNIPE_PLUGINS``."""
        allowed = _allow_list(environ.get(PLUGINS_ENV))
        found: set[str] = set()
        listing = entry_points or (lambda: importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        for ep in sorted(listing(), key=lambda e: e.name):
            found.add(ep.name)
            if allowed is not None and ep.name not in allowed:
                self.not_allowed.append(ep.name)
                continue
            if self.pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:
                self._fail(ep.name, "import", exc)
                continue
            dist = ep.dist
            origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
            self.register(plugin, ep.name, source=f"entry point ({origin})")
        for missing in sorted((allowed or set()) - found):
            self.failures.append(
                PluginFailure(missing, "load", f"{PLUGINS_ENV} names it but it is not installed")
            )

    def _fail(self, plugin: str, stage: str, exc: BaseException) -> None:
        failure = PluginFailure(plugin, stage, f"{type(exc).__name__}: {exc}")
        _log.error("%s", failure)
        self.failures.append(failure)

    # ------------------------------------------------------------ configuration hooks

    def criteria(self) -> list[Criterion]:
        """Every registered criterion, with its plugin's name filled in (cached)."""
        if self._criteria is None:
            self._criteria = self._collect_criteria()
        return self._criteria

    def _collect_criteria(self) -> list[Criterion]:
        taken: dict[str, str] = {key: "core" for key in CORE_RULE_KEYS}
        out: list[Criterion] = []
        for plugin, result in self._call_each("snipe_register_criteria", {}):
            for item in result or ():
                if not isinstance(item, Criterion):
                    self.failures.append(
                        PluginFailure(plugin, "register criteria", f"{item!r} is not a Criterion")
                    )
                    continue
                if not _KEY.match(item.key):
                    self.failures.append(
                        PluginFailure(
                            plugin,
                            "register criteria",
                            f"key {item.key!r} must be lower_snake_case, at most 40 characters",
                        )
                    )
                    continue
                if item.key in taken:
                    self.failures.append(
                        PluginFailure(
                            plugin,
                            "register criteria",
                            f"key {item.key!r} is already taken by {taken[item.key]!r}",
                        )
                    )
                    continue
                taken[item.key] = plugin
                out.append(_with_plugin(item, plugin))
        return out

    def price_sources(self) -> dict[str, PriceSource]:
        """Every registered price source by name (cached)."""
        if self._price_sources is None:
            sources: dict[str, PriceSource] = {}
            for plugin, result in self._call_each("snipe_register_price_sources", {}):
                for source in result or ():
                    if not isinstance(source, PriceSource) or not source.name:
                        error = f"{source!r} is not a named PriceSource"
                    elif source.name in sources:
                        error = f"price source {source.name!r} is already registered"
                    else:
                        sources[source.name] = source
                        self.source_owners[source.name] = plugin
                        continue
                    self.failures.append(PluginFailure(plugin, "register price sources", error))
            self._price_sources = sources
        return self._price_sources

    def notifiers(self) -> list[NotifierKind]:
        """Every registered notifier kind (keys of ``notify:``), plugin filled in (cached)."""
        if self._notifiers is None:
            taken: dict[str, str] = {key: "core" for key in NOTIFY_CORE_KEYS}
            kinds: list[NotifierKind] = []
            for plugin, result in self._call_each("snipe_register_notifiers", {}):
                for kind in result or ():
                    if not isinstance(kind, NotifierKind):
                        error = f"{kind!r} is not a NotifierKind"
                    elif not _KEY.match(kind.key):
                        error = f"notifier key {kind.key!r} must be lower_snake_case"
                    elif kind.key in taken:
                        error = f"notifier key {kind.key!r} is already taken by {taken[kind.key]!r}"
                    else:
                        taken[kind.key] = plugin
                        kinds.append(dataclasses.replace(kind, plugin=plugin))
                        continue
                    self.failures.append(PluginFailure(plugin, "register notifiers", error))
            self._notifiers = kinds
        return self._notifiers

    def criterion_owner(self, key: str) -> str | None:
        """The plugin that registered the rule key ``key``."""
        return next((c.plugin for c in self.criteria() if c.key == key), None)

    # ------------------------------------------------------------ decision hooks

    def veto(self, decision: Decision, context: EvalContext) -> list[str]:
        """Ask every plugin about ``decision``. An empty list means go; otherwise each entry
        names a plugin that blocked it (a plugin that raised counts as a block)."""
        blocks = []
        kwargs = {"decision": decision, "context": context}
        for plugin, answer in self._call_each("snipe_veto_purchase", kwargs, on_error="block"):
            if answer is _RAISED:
                blocks.append(f"plugin {plugin!r} failed while vetting the purchase (blocked)")
            elif answer is False:
                blocks.append(f"vetoed by plugin {plugin!r}")
        return blocks

    def notify_decisions(self, decisions: Sequence[Decision], context: EvalContext) -> None:
        """Tell every plugin about an evaluation batch (failures are logged and dropped)."""
        for _ in self._call_each(
            "snipe_decisions", {"decisions": decisions, "context": context}, on_error="drop"
        ):
            pass

    def notify_purchase(self, decision: Decision, outcome: str, detail: str | None) -> None:
        """Tell every plugin how a purchase attempt ended (failures logged and dropped)."""
        kwargs = {"decision": decision, "outcome": outcome, "detail": detail}
        for _ in self._call_each("snipe_purchase", kwargs, on_error="drop"):
            pass

    def notify_refund(self, purchase: Purchase, reason: str | None) -> None:
        """Tell every plugin a purchase was refunded (failures logged and dropped)."""
        self._notify("snipe_refund", {"purchase": purchase, "reason": reason})

    def notify_halted(self, reason: str) -> None:
        """Tell every plugin the engine went HALTED (failures logged and dropped)."""
        self._notify("snipe_halted", {"reason": reason})

    def notify_daily_summary(self, summary: DailySummary) -> None:
        """Tell every plugin a UTC day ended (failures logged and dropped)."""
        self._notify("snipe_daily_summary", {"summary": summary})

    def _notify(self, hook: str, kwargs: Mapping[str, Any]) -> None:
        for _ in self._call_each(hook, kwargs, on_error="drop"):
            pass

    def _call_each(
        self, hook: str, kwargs: Mapping[str, Any], *, on_error: str = "drop"
    ) -> Iterable[tuple[str, Any]]:
        caller = getattr(self.pm.hook, hook)
        # registration order: built-ins first, then plugins as they were loaded
        for impl in caller.get_hookimpls():
            try:
                result = impl.function(*(kwargs[arg] for arg in impl.argnames))
            except Exception as exc:
                self._fail(impl.plugin_name, hook, exc)
                if on_error == "block":
                    yield impl.plugin_name, _RAISED
                continue
            yield impl.plugin_name, result

    # ------------------------------------------------------------ introspection

    def plugins(self) -> list[PluginInfo]:
        """The loaded plugins, built-ins first, with the hooks each implements."""
        out = []
        for name, plugin in self.pm.list_name_plugin():
            callers = self.pm.get_hookcallers(plugin) or []
            hooks = tuple(sorted(c.name for c in callers))
            out.append(PluginInfo(name, self._sources.get(name, "?"), hooks))
        return out

    def __repr__(self) -> str:
        names = [name for name, _ in self.pm.list_name_plugin()]
        return f"<PluginHost plugins={names} failures={len(self.failures)}>"


_RAISED = object()


def _with_plugin(criterion: Criterion, plugin: str) -> Criterion:
    return replace(criterion, plugin=plugin)


def _allow_list(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def make_plugin_host(
    *,
    load_entry_points: bool = True,
    environ: Mapping[str, str] | None = None,
    entry_points: EntryPoints | None = None,
    plugins: Sequence[tuple[str, object]] = (),
) -> PluginHost:
    """A new :class:`PluginHost` with the built-in plugins, then ``plugins`` (name, object)
    given in code, then (unless ``load_entry_points`` is false) the installed ones allowed
    by ``SNIPE_PLUGINS`` in ``environ`` (default: ``os.environ``); ``check_pending()`` last.
    """
    from .builtin import BUILTIN_PLUGINS

    host = PluginHost()
    for name, plugin in BUILTIN_PLUGINS:
        host.register(plugin, name, source="built in")
    for name, plugin in plugins:
        host.register(plugin, name)
    if load_entry_points:
        host.load_entry_points(os.environ if environ is None else environ, entry_points)
    host.check_pending()
    return host
