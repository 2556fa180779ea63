"""The feed's settings (``account.feed``, ``feed_url``, ``audit_every``,
``full_audit_every``, ``feed_max_message``), the session that
builds its client, and where its state is shown (status file, ``snipe status``,
``/healthz``): table-driven where pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import ConfigError, VirtualClock
from engine._plugins import make_plugin_host
from engine.cli._status import render
from engine.ops import Operations
from engine.rules import load_rules_text
from engine.sniper import SessionOptions, open_engine

from .harness import TRADE_LINK


def _rules(account: str = "") -> str:
    return f"""
version: 1
account:
  base_url: "https://api.market.example/api"
  trade_link: "{TRADE_LINK}"
{account}
budgets: {{per_day: "10.00", total: "10.00"}}
rules:
  - name: deals
    match: {{names: ["AK-47 | Redline (Field-Tested)"], game: csgo}}
    max_price: "5.00"
"""


@pytest.mark.parametrize(
    ("account", "feed", "url", "audit", "full"),
    [
        ("", "auto", "https://api.market.example", 300, 3600),
        ("  feed: off\n", "off", "https://api.market.example", 300, 3600),
        (
            '  feed: on\n  feed_url: "wss://market.example/"\n  audit_every: 2m\n',
            "on",
            "wss://market.example",
            120,
            3600,
        ),
        (
            "  audit_every: 10m\n  full_audit_every: 2h\n",
            "auto",
            "https://api.market.example",
            600,
            7200,
        ),
        # equal: every audit is a full snapshot (the cheap tier off)
        ("  full_audit_every: 5m\n", "auto", "https://api.market.example", 300, 300),
    ],
)
def test_the_feed_settings_and_their_defaults(
    account: str, feed: str, url: str, audit: int, full: int
) -> None:
    ruleset = load_rules_text(_rules(account), host=make_plugin_host(load_entry_points=False))
    assert ruleset.account.feed == feed
    assert ruleset.account.feed_address() == url
    assert ruleset.account.audit_every == audit
    assert ruleset.account.full_audit_every == full


@pytest.mark.parametrize(
    ("account", "seconds"),
    [("", 300), ("  sticker_prices_for: 2m\n", 120), ("  sticker_prices_for: 0\n", 0)],
)
def test_how_long_what_a_search_showed_is_trusted(account: str, seconds: int) -> None:
    ruleset = load_rules_text(_rules(account), host=make_plugin_host(load_entry_points=False))
    assert ruleset.account.sticker_prices_for == seconds


@pytest.mark.parametrize(
    ("account", "field"),
    [
        ("  sticker_prices_for: 2h\n", "account.sticker_prices_for"),  # prices move
        ("  sticker_prices_for: -1\n", "account.sticker_prices_for"),
        ("  feed: sometimes\n", "account.feed"),
        ("  feed_compression: gzip\n", "account.feed_compression"),
        ('  feed_url: "ftp://market.example"\n', "account.feed_url"),
        ('  feed_url: "https://market.example/?key=secret"\n', "account.feed_url"),
        ("  audit_every: 1s\n", "account.audit_every"),
        ("  full_audit_every: 2m\n", "account.full_audit_every"),  # below audit_every (5m)
        ("  audit_every: 30m\n  full_audit_every: 20m\n", "account.full_audit_every"),
        ("  full_audit_every: 30d\n", "account.full_audit_every"),
        ("  full_audit_every: soon\n", "account.full_audit_every"),
        ("  feed_max_message: 1000\n", "account.feed_max_message"),  # under 64 KiB
        ('  feed_max_message: "63 KiB"\n', "account.feed_max_message"),
        ('  feed_max_message: "2 GiB"\n', "account.feed_max_message"),
        ("  feed_max_message: lots\n", "account.feed_max_message"),
        ("  feed_max_message: -1\n", "account.feed_max_message"),
        ("  feed_max_message: 1.5\n", "account.feed_max_message"),
    ],
)
def test_bad_feed_settings_are_refused_naming_the_field(account: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_rules_text(_rules(account), host=make_plugin_host(load_entry_points=False))
    assert field in str(caught.value)
    assert "key=secret" not in str(caught.value)  # an address with a key is not echoed


@pytest.mark.parametrize(
    ("account", "options", "address"),
    [
        ("  feed: on\n", SessionOptions(), "https://api.market.example/socket.io/"),
        ("  feed: off\n", SessionOptions(), None),
        ("", SessionOptions(feed=False), None),
        # an in-process service serves no websocket: no feed unless asked for
        ("", SessionOptions(transport=httpx.MockTransport(lambda r: httpx.Response(500))), None),
        ("", SessionOptions(base_url="http://127.0.0.1:8787"), "http://127.0.0.1:8787/socket.io/"),
    ],
)
async def test_the_session_builds_the_feed_client_when_wanted(
    tmp_path: Path, account: str, options: SessionOptions, address: str | None
) -> None:
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules(account), host=host)
    options = SessionOptions(
        base_url=options.base_url,
        transport=options.transport,
        feed=options.feed,
        ledger=tmp_path / "l.sqlite",
    )
    async with open_engine(
        ruleset, api_key="k" * 20, clock=VirtualClock(), host=host, options=options
    ) as engine:
        client = engine.feedwatch.client
        if address is None:
            assert client is None
        else:
            assert client is not None
            assert client.url.startswith(address)
            assert "k" * 20 not in client.url
            assert "k" * 20 not in repr(client)


@pytest.mark.parametrize(
    ("account", "size"),
    [
        ("", 1 << 20),  # unset: the client's default
        ('  feed_max_message: "64 KiB"\n', 64 << 10),  # the smallest allowed
        ('  feed_max_message: "4 MiB"\n', 4 << 20),
        ("  feed_max_message: 200000\n", 200_000),
        ('  feed_max_message: "1GiB"\n', 1 << 30),  # the largest allowed
    ],
)
async def test_the_largest_feed_message_is_a_setting_that_reaches_the_client(
    tmp_path: Path, account: str, size: int
) -> None:
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules("  feed: on\n" + account), host=host)
    options = SessionOptions(ledger=tmp_path / "l.sqlite")
    async with open_engine(
        ruleset, api_key="k" * 20, clock=VirtualClock(), host=host, options=options
    ) as engine:
        assert engine.feedwatch.client is not None
        assert engine.feedwatch.client.max_message == size


def test_a_bad_message_cap_says_the_range() -> None:
    with pytest.raises(ConfigError) as caught:
        load_rules_text(
            _rules("  feed_max_message: 1000\n"), host=make_plugin_host(load_entry_points=False)
        )
    assert "account.feed_max_message" in str(caught.value)
    assert "between 64 KiB and 1 GiB" in str(caught.value)
    assert "got 1000 bytes" in str(caught.value)


@pytest.mark.parametrize(
    ("account", "compression"), [("", "auto"), ("  feed_compression: off\n", "off")]
)
async def test_the_feed_compression_setting_reaches_the_client(
    tmp_path: Path, account: str, compression: str
) -> None:
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules("  feed: on\n" + account), host=host)
    assert ruleset.account.feed_compression == compression
    options = SessionOptions(ledger=tmp_path / "l.sqlite")
    async with open_engine(
        ruleset, api_key="k" * 20, clock=VirtualClock(), host=host, options=options
    ) as engine:
        assert engine.feedwatch.client is not None
        assert engine.feedwatch.client.compression == compression


FEED = {
    "state": "trusted",
    "connected": True,
    "events": 1200,
    "events_per_second": 431.25,
    "reconnects": 2,
    "gaps_healed": 3,
    "seconds_since_event": 0.4,
    "missed": 1,
    "bytes_received": 10_000_000,
    "bytes_per_day": 3.1e9,
}


@pytest.mark.parametrize(
    ("feed", "says"),
    [
        (FEED, "feed        trusted | 431.2 events/s | last event 0s ago | 2 reconnect(s)"),
        (FEED, "3 gap(s) healed | 1 missed by the audit | 3.1 GB/day"),
        (
            {**FEED, "missed": 3, "missed_full": 1, "missed_cheap": 2, "audits_full": 4}
            | {"audits_cheap": 40, "suspects": 5},
            "3 missed by the audit (full 1, cheap 2; 4 full and 40 cheap audits, 5 suspect(s) "
            "searched) | 3.1 GB/day",
        ),
        ({"state": "down"}, "feed        down | no rate yet | no event yet"),
        ({"state": "down", "events_per_second": "x"}, "down | no rate yet"),
    ],
)
def test_snipe_status_shows_the_feed(feed: dict[str, Any], says: str) -> None:
    report: dict[str, Any] = {
        "state": "running",
        "spent_today": 0,
        "spent_total": 0,
        "in_flight": 0,
        "refunded": 0,
        "purchases_today": {},
        "purchases_total": 0,
        "errors": [],
        "feed": feed,
    }
    assert says in render("l.sqlite", report, 1_767_300_000.0)


async def test_healthz_shows_the_feed_and_stays_200_while_it_is_down(tmp_path: Path) -> None:
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules("  feed: on\n"), host=host)
    options = SessionOptions(ledger=tmp_path / "l.sqlite")
    async with open_engine(
        ruleset, api_key="k" * 20, clock=VirtualClock(), host=host, options=options
    ) as engine:
        from engine.sniper import EngineMode

        engine.status.mode = EngineMode.RUNNING
        answer = Operations(engine).health()
    assert answer.status == 200
    assert b"ok: running; feed connecting" in answer.body
