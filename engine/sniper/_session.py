"""Wiring: a rules file's account section turned into a client, a limiter, a ledger and an
:class:`Engine`, opened and closed together. ``snipe run``, ``snipe demo`` and the tests use
it, so live, demo and tests share one assembly."""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.to_thread
import httpx

from .._clock import Clock
from .._errors import ConfigError, LedgerError
from .._limiter import DEFAULT_LIMITS, Limit, RateLimiter
from .._limitjournal import LimitJournal
from .._plugins import PluginHost
from ..client import FEED_MAX_MESSAGE, GAMES, APIKey, FeedClient, MarketClient, TradeLink
from ..ledger import MEMORY, Ledger
from ..paper import claim_paper_ledger, refuse_paper_ledger
from ..reference import ReferenceHub, StoreMode
from ..rules import Account, RuleSet
from ._bandwidth import rule_games
from ._engine import Engine, EngineSettings
from ._feedwatch import feed_games

__all__ = ["SessionOptions", "feed_client", "limits_for", "open_engine"]


@dataclass(frozen=True)
class SessionOptions:
    """What the command line may override in the rules file's ``account`` section."""

    base_url: str | None = None
    ledger: str | os.PathLike[str] | None = None
    """A path, or :data:`~engine.ledger.MEMORY`; dry runs always use memory. A paper run
    (``EngineSettings.paper``) writes here its paper ledger: ``snipe run --paper`` passes
    the paper file, never the real one (a real ledger is refused, and a real run refuses a
    paper ledger)."""
    transport: httpx.AsyncBaseTransport | None = None
    timeout: float = 10.0
    trade_link: str | None = None
    """Override ``account.trade_link`` (backtests trade to a stand-in link)."""
    limit_journal: bool = False
    """Keep the rate limits across restarts in ``<ledger>.limits`` (``snipe run``; only
    with a ledger file, never in a dry run)."""
    feed: bool | None = None
    """Use the live listing feed as ``account.feed`` says (``None``: unless ``transport``
    is given: an in-process service serves no websocket); ``False``: never."""
    feed_transport: httpx.AsyncBaseTransport | None = None
    """The feed client's transport (tests)."""
    reference_store: StoreMode | None = None
    """How the reference price file is used; ``None``: read and written with a ledger
    file, only read with an in-memory ledger (a dry run must not change it). Backtests say
    ``none``: the trader's file holds prices learned later than the replayed moments."""
    feed_url: str | None = None
    """Where the feed is, over ``account.feed_url`` and ``base_url``'s host (``snipe demo``
    serves its in-process sandbox's feed on a loopback port of its own)."""
    feed_open_timeout: float = 10.0
    """Seconds of the engine's clock a connection may take to say hello (``snipe demo``
    runs a sped-up clock, on which the real network's few seconds are many)."""


def _feed_client(
    ruleset: RuleSet, api_key: str | APIKey, clock: Clock, options: SessionOptions
) -> FeedClient | None:
    """The feed's client when the rules file and the options want one."""
    wanted = options.feed if options.feed is not None else options.transport is None
    if not wanted:
        return None
    return feed_client(
        ruleset.account,
        games=feed_games(rule_games(ruleset), GAMES),
        api_key=api_key,
        clock=clock,
        base_url=options.base_url,
        feed_url=options.feed_url,
        transport=options.feed_transport,
        open_timeout=options.feed_open_timeout,
    )


async def _check_ledger_kind(ledger: Ledger, settings: EngineSettings) -> None:
    """A paper run writes only to a paper ledger (marking a new file so); a real run never
    to a paper one. :class:`ConfigError` otherwise."""
    if settings.dry_run:
        return
    if settings.paper is not None:
        await claim_paper_ledger(ledger)
    else:
        await refuse_paper_ledger(ledger)


def feed_client(
    account: Account,
    *,
    games: list[str],
    api_key: str | APIKey | None,
    clock: Clock,
    base_url: str | None = None,
    feed_url: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    open_timeout: float = 10.0,
) -> FeedClient | None:
    """The listing feed's client as ``account`` says (``feed: off``: none), at
    ``feed_url`` (else the account's ``feed_url``, else the host of ``base_url``, else the
    account's base address); ``snipe run`` and ``snipe record`` build theirs here.
    ``auto`` (give up on a feed that never answers the handshake) is the consumer's to
    apply: see ``AUTO_ATTEMPTS``."""
    if account.feed == "off":
        return None
    return FeedClient(
        feed_url or account.feed_address(base_url),
        games=games,
        api_key=api_key,
        clock=clock,
        transport=transport,
        open_timeout=open_timeout,
        compression=account.feed_compression,
        max_message=account.feed_max_message or FEED_MAX_MESSAGE,
    )


def limits_for(ruleset: RuleSet) -> dict[str, Limit | None]:
    """The rate limits the rules file asks for (per minute), over the defaults."""
    rates = ruleset.account.rate_limits
    limits: dict[str, Limit | None] = dict(DEFAULT_LIMITS)
    limits["search"] = Limit(rates.search_per_minute, 60.0)
    limits["buy_order"] = Limit(rates.buy_orders_per_minute, 60.0)
    return limits


@asynccontextmanager
async def open_engine(
    ruleset: RuleSet,
    *,
    api_key: str | APIKey,
    clock: Clock,
    host: PluginHost,
    settings: EngineSettings | None = None,
    options: SessionOptions | None = None,
) -> AsyncIterator[Engine]:
    """An engine for ``ruleset`` with everything it needs open; all closed on exit."""
    settings = settings or EngineSettings()
    options = options or SessionOptions()
    account = ruleset.account
    link_url = options.trade_link or account.trade_link
    if link_url is None:
        raise ConfigError(
            "a trade link is needed to buy: set account.trade_link", field="account.trade_link"
        )
    trade_link = TradeLink.parse(link_url)
    limiter = RateLimiter(clock, limits_for(ruleset))
    ledger_path = MEMORY if settings.dry_run else (options.ledger or account.ledger)
    try:
        # The ledger first: a missing, corrupt or foreign file is bad input, said in one
        # line before anything is written beside it (the rate-limit journal included).
        opened = await Ledger.open(ledger_path, clock=clock)
    except LedgerError as exc:
        raise ConfigError(str(exc)) from None
    try:
        await _check_ledger_kind(opened, settings)
    except BaseException:
        await opened.close()
        raise
    try:
        async with (
            opened as ledger,
            ReferenceHub.open(
                ruleset.prices,
                clock=clock,
                ledger=ledger_path,
                wanted=ruleset.sources_used,
                store_mode=options.reference_store
                or ("read-only" if ledger_path == MEMORY else "read-write"),
            ) as references,
            MarketClient(
                api_key,
                base_url=options.base_url or account.base_url,
                transport=options.transport,
                limiter=limiter,
                clock=clock,
                timeout=options.timeout,
            ) as client,
        ):
            if options.limit_journal and ledger_path != MEMORY:
                # before the first request: the previous process's calls still count at
                # the service
                journal = LimitJournal.for_ledger(ledger_path)
                await anyio.to_thread.run_sync(
                    functools.partial(limiter.attach_journal, journal, timeout=options.timeout)
                )
            engine = Engine(
                ruleset=ruleset,
                client=client,
                ledger=ledger,
                clock=clock,
                limiter=limiter,
                host=host,
                trade_link=trade_link,
                trade_link_url=link_url,
                settings=settings,
                references=references,
            )
            engine.feedwatch.client = _feed_client(ruleset, api_key, clock, options)
            yield engine
    finally:
        limiter.close_journal()
