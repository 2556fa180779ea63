"""What each notice says and how each channel lays it out (pure: no I/O)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import ConfigError
from engine._plugins import make_plugin_host
from engine.client._secret import Secret
from engine.ledger import Purchase, PurchaseState
from engine.models import Listing
from engine.notify import (
    DailySummary,
    DiscordChannel,
    Notice,
    TelegramChannel,
    WebhookChannel,
    build_channels,
    halted_notice,
    purchase_notice,
    refund_notice,
    sign,
    summary_notice,
    verify_signature,
)
from engine.rules import Decision, load_rules_text

AT = 1_767_225_600.0
TOKEN = "123456:TELEGRAM-SECRET-TOKEN"
HOOK = "https://discord.example/api/webhooks/1/DISCORD-SECRET"


def decision(price: int = 7_500, reference: int | None = 10_000, image: str | None = None) -> Any:
    payload: dict[str, Any] = {"item_id": "42", "name": "AK-47 | Redline (FT)", "price": price}
    if reference is not None:
        payload["platform_price"] = reference
    if image is not None:
        payload["image"] = image
    listing = Listing.model_validate(payload)
    return Decision(listing, "deals", True, ("cheap",), price, "buy", 0, False)


def purchase(**changes: Any) -> Purchase:
    fields: dict[str, Any] = {
        "project_id": "snp-1",
        "item_id": "42",
        "name": "AK-47 | Redline (FT)",
        "game": "csgo",
        "price": 7_500,
        "charged_price": 7_400,
        "rule": "deals",
        "state": PurchaseState.REFUNDED,
        "batch_id": None,
        "allow_trade_locked": False,
        "created_at": AT,
        "updated_at": AT + 60,
        "unlock_at": None,
        "send_until": None,
        "marketplace_id": 9,
        "reason": "Seller failed to accept",
    }
    fields.update(changes)
    return Purchase(**fields)


SUMMARY = DailySummary(
    day="2026-01-01",
    purchases=3,
    spent=45_000,
    refunds=1,
    refunded=7_400,
    failed=2,
    unresolved=0,
    spent_total=120_000,
    cap_per_day=500_000,
    cap_total=1_000_000,
)


@pytest.mark.parametrize(
    ("notice", "title", "must_say"),
    [
        (
            purchase_notice(decision(image="https://img/x.png"), "bought", None, AT),
            "Bought AK-47 | Redline (FT) for $7.50",
            ["price $7.50", "reference $10.00", "discount 25.0%", "rule deals", "item 42"],
        ),
        (
            purchase_notice(decision(), "bought", "reserved", AT),
            "Reserved AK-47 | Redline (FT) for $7.50",
            ["discount 25.0%"],
        ),
        (
            purchase_notice(decision(reference=None), "unknown", "timed out", AT),
            "Purchase of AK-47 | Redline (FT) of unknown outcome (being resolved)",
            ["price $7.50", "detail: timed out"],
        ),
        (
            refund_notice(purchase(), "Seller failed to accept", AT),
            "Refunded: AK-47 | Redline (FT) ($7.40)",
            ["reason: Seller failed to accept", "rule deals", "project_id snp-1"],
        ),
        (
            halted_notice("3 purchase attempts in a row failed", AT),
            "snipe HALTED: buying stopped",
            ["3 purchase attempts in a row failed"],
        ),
        (
            summary_notice(SUMMARY, AT),
            "snipe daily summary 2026-01-01",
            ["purchases 3, spent $45.00", "refunds 1 ($7.40)", "total committed $120.00"],
        ),
    ],
)
def test_each_event_says_what_the_owner_needs(
    notice: Notice, title: str, must_say: list[str]
) -> None:
    assert notice.title == title
    for text in must_say:
        assert text in notice.text


def test_purchase_data_keeps_money_as_integers() -> None:
    data = purchase_notice(decision(image="https://img/x.png"), "bought", None, AT).data
    assert data["price"] == 7_500
    assert data["reference_price"] == 10_000
    assert data["discount_bp"] == 2_500
    assert data["image"] == "https://img/x.png"
    assert data["rule"] == "deals"


def test_discord_request_is_an_embed_with_the_image() -> None:
    notice = purchase_notice(decision(image="https://img/x.png"), "bought", None, AT)
    channel = DiscordChannel(Secret(HOOK), username="snipe", events=("purchase",))
    request = channel.request(notice, AT)
    body = json.loads(request.content)
    assert str(request.url) == HOOK
    (embed,) = body["embeds"]
    assert embed["title"] == notice.title
    assert embed["image"] == {"url": "https://img/x.png"}
    assert "discount 25.0%" in embed["description"]
    assert body["allowed_mentions"] == {"parse": []}


def test_telegram_request_sends_the_text_to_the_chat() -> None:
    notice = purchase_notice(decision(image="https://img/x.png"), "bought", None, AT)
    channel = TelegramChannel(
        Secret(TOKEN), chat_id="-100", api_base="https://api.telegram.org", events=("purchase",)
    )
    request = channel.request(notice, AT)
    assert request.url.path == f"/bot{TOKEN}/sendMessage"
    body = json.loads(request.content)
    assert body["chat_id"] == "-100"
    assert body["text"].startswith(notice.title)
    assert "https://img/x.png" in body["text"]


def test_webhook_signature_verifies_and_tampering_does_not() -> None:
    channel = WebhookChannel("https://hooks.example/snipe", Secret("s3cret"), events=("halted",))
    request = channel.request(halted_notice("kill file", AT), AT)
    body = request.content
    stamp = request.headers["X-Snipe-Timestamp"]
    signature = request.headers["X-Snipe-Signature"]
    assert json.loads(body)["event"] == "halted"
    assert request.headers["X-Snipe-Event"] == "halted"
    ok = verify_signature(b"s3cret", body=body, timestamp=stamp, signature=signature, now=AT)
    assert ok
    for key, tampered_body, when in [
        (b"wrong", body, AT),
        (b"s3cret", body.replace(b"kill", b"kilt"), AT),
        (b"s3cret", body, AT + 3600),  # a replay an hour later
    ]:
        assert not verify_signature(
            key, body=tampered_body, timestamp=stamp, signature=signature, now=when
        )


def test_sign_is_hmac_sha256_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"17.{}", hashlib.sha256).hexdigest()
    assert sign(b"k", 17, b"{}") == f"sha256={expected}"


@pytest.mark.parametrize(
    "channel",
    [
        DiscordChannel(Secret(HOOK), username="snipe", events=("purchase",)),
        TelegramChannel(Secret(TOKEN), chat_id="1", api_base="http://x", events=("purchase",)),
        WebhookChannel("https://hooks.example", Secret("s3cret"), events=("purchase",)),
    ],
)
def test_channel_reprs_hide_secrets(channel: object) -> None:
    text = repr(channel)
    for secret in (TOKEN, HOOK, "DISCORD-SECRET", "s3cret"):
        assert secret not in text


RULES = """\
version: 1
account:
  base_url: "http://sandbox"
budgets: {{per_day: "500.00", total: "1000.00"}}
notify:
{notify}
rules:
  - name: deals
    match: {{names: ["X"]}}
    max_price: "200.00"
"""


@pytest.mark.parametrize(
    ("notify", "where", "says"),
    [
        ('  telegram: {chat_id: 1, token: "123:abc"}', "notify.yaml:6:13", "token_env"),
        ('  discord: {url: "https://d/x"}', "notify.yaml:6:12", "url_env"),
        ('  webhook: {url: "https://h", secret: "x"}', "notify.yaml:6:12", "secret_env"),
        ('  webhok: {url: "https://h"}', "notify.yaml:6:3", "did you mean 'webhook'"),
        ("  telegram: {chat_id: 1, evnts: [halted]}", "notify.yaml:6:26", "did you mean 'events'"),
        ('  webhook: {url: "ftp://h"}', "notify.yaml:6:18", "http(s) address"),
        ("  retries: -1", "notify.yaml:6:12", "greater than or equal to 0"),
    ],
)
def test_bad_notify_sections_name_the_place(notify: str, where: str, says: str) -> None:
    host = make_plugin_host(load_entry_points=False)
    with pytest.raises(ConfigError) as caught:
        load_rules_text(RULES.format(notify=notify), "notify.yaml", host=host)
    assert caught.value.location == where
    assert says in caught.value.message
    assert "123:abc" not in str(caught.value)


def test_channels_read_secrets_from_the_environment_only() -> None:
    host = make_plugin_host(load_entry_points=False)
    notify = '  telegram: {chat_id: 7, token_env: MY_TG}\n  webhook: {url: "https://h"}'
    ruleset = load_rules_text(RULES.format(notify=notify), "n.yaml", host=host)
    with pytest.raises(ConfigError) as caught:
        build_channels(ruleset.notify, host.notifiers(), {"SNIPE_WEBHOOK_SECRET": "s"})
    assert caught.value.field == "notify.telegram.token_env"
    assert "MY_TG" in caught.value.message
    channels = build_channels(
        ruleset.notify, host.notifiers(), {"MY_TG": TOKEN, "SNIPE_WEBHOOK_SECRET": "s"}
    )
    assert sorted(c.name for c in channels) == ["telegram", "webhook"]


def test_a_third_party_notifier_is_configured_like_the_built_in_ones() -> None:
    from engine.hookspecs import hookimpl
    from engine.notify import ChannelConfig, NotifierKind

    class PagerConfig(ChannelConfig):
        service: str

    built: list[Any] = []

    class Plugin:
        @hookimpl
        def snipe_register_notifiers(self) -> list[NotifierKind]:
            return [NotifierKind("pager", PagerConfig, lambda c, env: built.append(c) or c)]

    host = make_plugin_host(load_entry_points=False, plugins=[("pager", Plugin())])
    ruleset = load_rules_text(RULES.format(notify="  pager: {service: ops}"), host=host)
    build_channels(ruleset.notify, host.notifiers(), {})
    assert [c.service for c in built] == ["ops"]
    assert host.notifiers()[-1].plugin == "pager"


def test_the_commented_notify_example_in_rules_example_yaml_is_valid() -> None:
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "rules.example.yaml"
    lines, block = [], False
    for line in example.read_text().splitlines():
        if line.startswith("# notify:"):
            block = True
            lines.append("notify:")
        elif block and line.startswith("#   "):
            lines.append(line[2:])
        else:
            block = False
            lines.append(line)
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text("\n".join(lines), str(example), host=host)
    env = {
        "SNIPE_DISCORD_WEBHOOK": HOOK,
        "SNIPE_TELEGRAM_TOKEN": TOKEN,
        "SNIPE_WEBHOOK_SECRET": "s",
    }
    channels = build_channels(ruleset.notify, host.notifiers(), env)
    assert sorted(c.name for c in channels) == ["discord", "telegram", "webhook"]


def test_snipe_check_lists_channels_and_whether_their_secrets_are_set(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.cli import main

    monkeypatch.setenv("MY_TG", TOKEN)
    monkeypatch.delenv("SNIPE_WEBHOOK_SECRET", raising=False)
    monkeypatch.setenv("SNIPE_PLUGINS", "")
    rules = tmp_path / "r.yaml"
    notify = '  telegram: {chat_id: 7, token_env: MY_TG}\n  webhook: {url: "https://h"}'
    rules.write_text(RULES.format(notify=notify))
    assert main(["check", str(rules)]) == 0
    out = capsys.readouterr().out
    assert "notify      telegram (MY_TG set)" in out
    assert "notify      webhook (SNIPE_WEBHOOK_SECRET not set now)" in out
    assert TOKEN not in out
