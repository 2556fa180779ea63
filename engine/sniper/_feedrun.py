"""The live feed's runner (:meth:`FeedWatch.run`): the client's events handed to the
engine, and what happens when the client fails.

A network error, a stall, a close: the client heals those itself (capped, jittered
backoff; a :class:`~engine.client.FeedDisconnected`, then a :class:`FeedConnected` of the
next generation). An error nobody planned for escapes the client's ``run_batches``; it
used to make the feed "unavailable" for the rest of the run, which a bot meant to run
for months cannot afford. Now it is logged (the loop guard: once per kind with its
traceback, one line after that; the error named by type, nothing of its text, so no
key), counted (``FeedView.errors``, ``snipe_unexpected_errors_total{loop="feed"}``),
told to the engine as a :class:`FeedDisconnected` of reason ``error`` when a connection
was up (the snapshot takes over at once, as after any disconnect), and the client is
run again after its own backoff (:meth:`FeedClient.retry_delay`, on the engine's clock).
Its next connection is a new generation, healed by a snapshot begun after it, exactly
as after any reconnection.

``account.feed: auto`` still gives up a feed that never answers the handshake: after
:data:`AUTO_ATTEMPTS` attempts without one (an unexpected error counts as an attempt).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ..client import FEED_BATCH, FeedBatch, FeedClient, FeedDisconnected
from ._guard import describe

if TYPE_CHECKING:
    from ._feedwatch import FeedWatch

__all__ = ["AUTO_ATTEMPTS", "run_feed"]

AUTO_ATTEMPTS = 3
"""``auto``: connection attempts without a single handshake before the feed is given up
for the run (detection by snapshot alone)."""

log = logging.getLogger("snipe.engine.feed")


async def run_feed(watch: FeedWatch) -> None:
    """Run ``watch``'s client until cancelled, ``auto`` gives up, or the client returns;
    an unexpected error of the client is retried (see the module docstring)."""
    client = watch.client
    if client is None:
        return
    clock = watch.engine.clock
    failures = 0
    while not watch.unavailable:
        began, generation = clock.now(), watch.generation
        try:
            await _attempt(watch, client)
            return
        except Exception as exc:
            if watch.generation != generation:
                watch.engine.guard.succeeded("feed")  # it connected since: a new run of them
            # the count of failures in a row starts again after a stable run, as the
            # client's own: an error right after each connection is never a hot loop
            stable = clock.now() - began >= client.stable_after
            failures = 1 if stable else failures + 1
            await _failed(watch, exc)
        if watch.settings.mode == "auto" and _give_up(watch, client):
            return
        await clock.sleep(client.retry_delay(failures))


async def _attempt(watch: FeedWatch, client: FeedClient) -> None:
    # the buffer counts events; the stream carries lists of up to FEED_BATCH of them
    size = max(1, watch.settings.buffer // FEED_BATCH)
    send, receive = anyio.create_memory_object_stream[FeedBatch](size)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run_batches, send)
        if watch.settings.mode == "auto":
            tg.start_soon(_give_up_unless_answered, watch, client, tg.cancel_scope)
        await watch.consume(receive)


async def _failed(watch: FeedWatch, exc: Exception) -> None:
    """Log and count ``exc``; a connection that was up ends as any disconnect does."""
    error = exc
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        inner = error.exceptions[0]
        if not isinstance(inner, Exception):
            break
        error = inner
    watch.errors += 1
    watch.last_error = describe(error)
    # never a reason to stop buying: the snapshot stands in until the feed is back
    watch.engine.guard.failed("feed", error, may_halt=False)
    if watch.connected:
        now = watch.engine.clock.now()
        await watch.on_event(FeedDisconnected(watch.generation, now, "error", watch.last_error))


def _give_up(watch: FeedWatch, client: FeedClient) -> bool:
    """``auto``: whether the feed is given up (never a handshake, enough attempts)."""
    if watch.generation == 0 and client.health().attempts >= AUTO_ATTEMPTS:
        watch.unavailable = True
        watch.connected = False
        log.warning(
            "the listing feed at %s does not answer (account.feed: auto): new "
            "listings are seen by the snapshot alone",
            client.url,
        )
        watch.engine.snapshot_soon()
    return watch.unavailable


async def _give_up_unless_answered(
    watch: FeedWatch, client: FeedClient, scope: anyio.CancelScope
) -> None:
    while watch.generation == 0:
        if _give_up(watch, client):
            scope.cancel()
            return
        await watch.engine.clock.sleep(1.0)
