"""Running an engine unattended: what ``snipe run`` starts next to :meth:`Engine.run`.

:func:`operations` (an async context manager around the run) wires, for one engine:

- notifications: the rules file's ``notify:`` channels, a :class:`~engine.notify.
  NotificationHub` registered as a plugin, and the delivery tasks (the engine itself
  calls ``snipe_refund``, ``snipe_halted`` and ``snipe_daily_summary``; ops adds only
  ``snipe_halted`` for a run that ends in an error without the engine having HALTED);
- metrics: request counts through the client's request observer, detection latency
  through a plugin, and, with a port, the ``/metrics`` and ``/healthz`` server;
- the status file ``snipe status`` reads;
- with :attr:`OpsSettings.api`, the control-plane API (``engine.api``) and the event bus
  plugin that feeds its event stream.
- chat commands (:class:`~engine.chat.CommandBot`) when the Telegram channel has
  ``commands: true``.

Nothing here is on the buying path: every hook only queues, and every task runs beside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
import httpx
from anyio.abc import Listener, SocketAttribute, SocketStream

from .._errors import SnipeError
from ..api import Api, ApiOptions, EventBus, api_app, serve_app
from ..chat import BotSettings, CommandBot
from ..metrics import CONTENT_TYPE, EngineMetrics, Response, open_listener, serve_listener
from ..notify import Delivery, NotificationHub, TelegramChannel, build_delivery
from ..sniper import (
    Engine,
    EngineMode,
    TradingRefused,
    daily_summary,
    feed_words,
    status_document,
    write_status_file,
)

__all__ = ["Operations", "OpsSettings", "daily_summary", "operations"]

log = logging.getLogger("snipe.ops")


@dataclass(frozen=True)
class OpsSettings:
    metrics_port: int | None = None
    """Serve ``/metrics`` and ``/healthz`` on this port (0: any free port); ``None``: no
    server."""
    metrics_host: str = "127.0.0.1"
    status_file: str | os.PathLike[str] | None = None
    status_every: float = 5.0
    watch_every: float = 1.0
    """Seconds (engine clock) between looks at whether the status file is due."""
    flush_timeout: float = 5.0
    """Real seconds allowed, when stopping, to send the notices still queued."""
    environ: Mapping[str, str] | None = None
    """Where notifier secrets are read (default: ``os.environ``)."""
    notify_transport: httpx.AsyncBaseTransport | None = None
    """For tests: the transport notices are sent through."""
    api: ApiOptions | None = None
    """Serve the control-plane API (checked bind and tokens); ``None``: no API."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Values no API answer may contain (the marketplace API key)."""
    """For tests: the transport notices (and chat commands' Bot API calls) go through."""
    chat: BotSettings = field(default_factory=BotSettings)
    """How chat commands are polled and limited (when a channel enables them)."""


class Operations:
    """Notifications, hooks, metrics and the status file for ``engine``; see the module
    docstring. Built by :func:`operations`."""

    def __init__(self, engine: Engine, settings: OpsSettings = OpsSettings()) -> None:
        self.engine = engine
        self.settings = settings
        # built now, so a missing secret is a ConfigError before anything starts
        self.delivery: Delivery = build_delivery(
            engine.ruleset.notify,
            engine.host.notifiers(),
            clock=engine.clock,
            environ=settings.environ,
            transport=settings.notify_transport,
        )
        self.hub = NotificationHub(self.delivery, engine.clock)
        self.chat: CommandBot | None = next(
            (
                CommandBot(engine, c, transport=settings.notify_transport, settings=settings.chat)
                for c in self.delivery.channels
                if isinstance(c, TelegramChannel) and c.commands
            ),
            None,
        )
        """The chat command loop, with ``notify.telegram.commands: true``."""
        self.metrics = EngineMetrics(engine, notifications=self.delivery.stats)
        self.port: int | None = None
        """The metrics server's port, once it listens."""
        self.bus = EventBus(engine.clock)
        self.api: Api | None = None
        if settings.api is not None:
            self.api = Api(
                engine,
                settings.api.tokens,
                self.bus,
                settings.api.hosts,
                secrets=settings.secrets,
                proxies=settings.api.proxies,
            )
        self.api_port: int | None = None
        """The API's port, once it listens."""
        self.stopped_by: str | None = None
        """Why the run ended with an error, if it did (shown by ``snipe status``)."""
        self._plugin_names: list[str] = []
        self._status_lock = anyio.Lock()

    def _attach(self) -> None:
        engine = self.engine
        plugins: list[tuple[str, object]] = [
            ("ops.notify", self.hub),
            ("ops.latency", self.metrics.latency),
        ]
        if self.api is not None:
            plugins.append(("ops.api", self.bus))
        for name, plugin in plugins:
            if engine.host.register(plugin, name, source="snipe run"):
                self._plugin_names.append(name)
        engine.client.request_observer = self.metrics.observe_request

    def _detach(self) -> None:
        engine = self.engine
        for name in self._plugin_names:
            engine.host.pm.unregister(name=name)
        self._plugin_names.clear()
        engine.client.request_observer = None

    async def _finish(self) -> None:
        await self._write_status()
        with anyio.move_on_after(self.settings.flush_timeout):
            await self.delivery.flush()

    def _record_failure(self, exc: Exception) -> None:
        """The run ended with an error (a refusal to trade, a crash): a person must look,
        as for HALTED (which the engine has told already, if it HALTED). snipe's own errors
        never carry a secret; others are named only."""
        text = str(exc) if isinstance(exc, SnipeError) else f"{type(exc).__name__} (see the log)"
        kind = "refused to trade" if isinstance(exc, TradingRefused) else "stopped"
        self.stopped_by = f"{kind}: {text}"
        if not self.engine.status.halted:
            self.engine.host.notify_halted(self.stopped_by)

    async def _watch(self) -> None:
        clock, settings = self.engine.clock, self.settings
        next_write = clock.now()
        while True:
            if clock.now() >= next_write:
                await self._write_status()
                next_write = clock.now() + settings.status_every
            await clock.sleep(settings.watch_every)

    # -- status file and metrics server --------------------------------------------------

    async def _write_status(self) -> None:
        path = self.settings.status_file
        if path is None:
            return
        mark = getattr(self.engine.clock, "busy", None)  # a virtual clock waits for the thread
        try:
            document = status_document(
                await self.engine.view(),
                every=self.settings.status_every,
                extra={
                    "stopped_by": self.stopped_by,
                    "metrics_port": self.port,
                    "api_port": self.api_port,
                    "notifications": {
                        name: {"sent": s.sent, "failed": s.failed, "dropped": s.dropped}
                        for name, s in self.delivery.stats.items()
                    },
                },
            )
            # one write at a time: the periodic write and the last one share a temporary file
            async with self._status_lock:
                with mark() if mark is not None else contextlib.nullcontext():
                    await anyio.to_thread.run_sync(write_status_file, Path(path), document)
        except OSError as exc:
            self.engine.status.error(f"status file {path}: {exc.strerror}")
        except Exception as exc:  # also when stopping: never an exception group
            self.engine.guard.failed("ops: status file", exc, may_halt=False)

    async def _handle(self, path: str) -> Response:
        if path == "/metrics":
            await self.metrics.refresh()
            return Response(200, self.metrics.render(), CONTENT_TYPE)
        if path == "/healthz":
            return self.health()
        return Response(404, b"not found: try /metrics or /healthz\n")

    def health(self) -> Response:
        """200 while the engine runs and buys; 503 when starting (with what the start-up
        gate waits for), HALTED (with the reason) or stopped."""
        status = self.engine.status
        if status.mode is EngineMode.RUNNING:
            # the feed's state is shown, never a reason for 503: the snapshot stands in
            feed = self.engine.feedwatch.view(self.engine.clock.now())
            words = "" if feed is None else f"; {feed_words(feed)}"
            if status.paused is not None:  # on purpose, resumable: not unwell
                words = f", paused: {status.paused}{words}"
            return Response(200, f"ok: running{words}\n".encode())
        text = status.mode.value
        if status.mode is EngineMode.HALTED:
            text += f": {status.halt_reason}"
        elif status.waiting is not None:
            text += f": waiting (attempt {status.start_attempts}): {status.waiting}"
        return Response(503, f"unhealthy: {text}\n".encode())


class ListenError(OSError):
    """A server of ``snipe run`` could not bind its address: which one, where, and why
    (a port in use named as the metrics port when it was the API's misled the user)."""

    def __init__(self, what: str, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.what = what
        self.where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def __str__(self) -> str:
        return f"cannot serve {self.what} on {self.where}: {self.strerror}"


async def _bind(what: str, host: str, port: int) -> Listener[SocketStream]:
    try:
        return await open_listener(host, port)
    except OSError as exc:
        raise ListenError(what, host, port, exc) from None


@asynccontextmanager
async def operations(
    engine: Engine, settings: OpsSettings = OpsSettings()
) -> AsyncIterator[Operations]:
    """Run :class:`Operations` for ``engine`` while inside; enter it before
    :meth:`Engine.run` (the start-up gate may already see refunds). On the way out, HALTED
    is told, the status file written, and the queued notices get ``flush_timeout`` seconds.
    Raises :class:`~engine.ConfigError` (before starting anything) for a missing secret,
    and :class:`ListenError` (an ``OSError``) when the metrics or the API port cannot be
    bound."""
    ops = Operations(engine, settings)
    listener = api_listener = None
    # bound before anything starts, so a port in use is a plain OSError
    try:
        if settings.metrics_port is not None:
            listener = await _bind("metrics", settings.metrics_host, settings.metrics_port)
            ops.port = int(listener.extra(SocketAttribute.local_port))
        if settings.api is not None:
            api_listener = await _bind("the API", settings.api.host, settings.api.port)
            ops.api_port = int(api_listener.extra(SocketAttribute.local_port))
    except BaseException:
        ops.delivery.close()
        with anyio.CancelScope(shield=True):
            for opened in (listener, api_listener):
                if opened is not None:
                    await opened.aclose()
        raise
    ops._attach()
    error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tasks: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                ("notification delivery", ops.delivery.run),
                ("status watch", ops._watch),
            ]
            if ops.chat is not None:
                tasks.append(("chat commands", ops.chat.run))
            if listener is not None:
                tasks.append(("metrics server", partial(serve_listener, listener, ops._handle)))
                log.info("metrics on http://%s:%d/metrics", settings.metrics_host, ops.port)
            if api_listener is not None and ops.api is not None and settings.api is not None:
                app = api_app(ops.api)
                serve = partial(
                    serve_app, api_listener, app, settings.api.settings, on_stop=ops.bus.close
                )
                tasks.append(("api server", serve))
                log.info("API on %s", settings.api.with_port(ops.api_port).url)
            for name, task in tasks:
                tg.start_soon(_guarded, ops, name, task)
            await ops._write_status()  # tell `snipe status` (and the metrics port) now
            try:
                yield ops
            except Exception as exc:
                # re-raised outside the task group: the caller sees it, not a group
                error = exc
                ops._record_failure(exc)
            finally:
                with anyio.CancelScope(shield=True):
                    await ops._finish()
                tg.cancel_scope.cancel()
    finally:
        ops._detach()
        with anyio.CancelScope(shield=True):
            for opened in (listener, api_listener):
                if opened is not None:
                    await opened.aclose()
    if error is not None:
        raise error


async def _guarded(
    ops: Operations, name: str, task: Callable[[], Awaitable[None]], *, most: float = 60.0
) -> None:
    """Run an operations task; if it fails, log it (traceback once), count it and start it
    again after a backoff: nothing here may stop buying, and nothing here may stay dead."""
    engine = ops.engine
    while True:
        try:
            await task()
            return
        except Exception as exc:
            wait = engine.guard.failed(f"ops: {name}", exc, may_halt=False)
            await engine.clock.sleep(min(most, wait))
