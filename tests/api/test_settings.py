"""Starting the API safely: where it may listen, where tokens come from (pure, synchronous,
table-driven), and the rules file's ``api:`` section."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine import ConfigError, VirtualClock
from engine.api import FailureLimiter, api_options, check_bind, load_tokens
from engine.api._security import FREE_FAILURES, cross_site, host_allowed
from engine.rules import ApiSettings, load_rules_text

GOOD = "g" * 32
OTHER = "o" * 32


@pytest.mark.parametrize(
    ("listen", "extra", "allowed"),
    [
        ("127.0.0.1:8788", {}, True),
        ("localhost:8788", {}, True),
        ("[::1]:8788", {}, True),
        ("127.0.0.2:0", {}, True),
        ("0.0.0.0:8788", {}, False),
        ("192.168.1.5:8788", {}, False),
        ("[::]:8788", {}, False),
        ("myhost.lan:8788", {}, False),  # a name could resolve anywhere
        ("0.0.0.0:8788", {"certfile": "c.pem"}, False),  # a certificate without its key
        ("0.0.0.0:8788", {"certfile": "c.pem", "keyfile": "k.pem"}, True),
        ("0.0.0.0:8788", {"behind_proxy": True}, True),
    ],
)
def test_only_loopback_unless_tls_or_a_stated_proxy(
    listen: str, extra: dict[str, object], allowed: bool
) -> None:
    settings = ApiSettings(listen=listen, **extra)  # type: ignore[arg-type]
    if allowed:
        check_bind(settings)
    else:
        with pytest.raises(ConfigError, match=r"refusing to listen on .* in clear"):
            check_bind(settings)


@pytest.mark.parametrize(
    ("environ", "error"),
    [
        ({}, "no control token"),
        ({"SNIPE_API_READ_TOKEN": GOOD}, "no control token"),
        ({"SNIPE_API_CONTROL_TOKEN": "short"}, "shorter than 24"),
        ({"SNIPE_API_CONTROL_TOKEN": GOOD, "SNIPE_API_READ_TOKEN": GOOD}, "the same"),
        ({"SNIPE_API_CONTROL_TOKEN": GOOD, "SNIPE_API_READ_TOKEN": OTHER}, None),
    ],
)
def test_tokens_from_the_environment(environ: dict[str, str], error: str | None) -> None:
    if error is None:
        store = load_tokens(ApiSettings(), environ=environ)
        assert {(t.name, t.role.value) for t in store.tokens} == {
            ("control", "control"),
            ("read", "read"),
        }
        assert store.match(GOOD) is not None
        assert store.match(GOOD[:-1]) is None
    else:
        with pytest.raises(ConfigError, match=error) as caught:
            load_tokens(ApiSettings(), environ=environ)
        assert GOOD not in str(caught.value)


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# name role token\nphone read {OTHER}\nlaptop control {GOOD}\n")
    os.chmod(path, 0o644)
    settings = ApiSettings(token_file=str(path))
    with pytest.raises(ConfigError, match=r"can be read by others .*chmod 600"):
        load_tokens(settings, environ={})
    os.chmod(path, 0o600)
    store = load_tokens(settings, environ={})
    assert [(t.name, t.role.value) for t in store.tokens] == [
        ("phone", "read"),
        ("laptop", "control"),
    ]
    assert GOOD not in repr(store.tokens)


def test_a_malformed_token_file_line_is_named_without_echoing_it(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"laptop control {GOOD}\nphone {OTHER}\n")
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError) as caught:
        load_tokens(ApiSettings(token_file=str(path)), environ={})
    assert f"{path}:2:1" in str(caught.value)
    assert OTHER not in str(caught.value)


def test_the_rules_file_section_and_the_flag() -> None:
    text = """
version: 1
account: {base_url: "http://sandbox"}
budgets: {per_day: "5.00", total: "10.00"}
api: {listen: "0.0.0.0:9000", behind_proxy: true, allowed_hosts: [snipe.example]}
rules:
  - {name: r, match: {names: [X]}, max_price: "1.00"}
"""
    ruleset = load_rules_text(text, "rules.yaml")
    assert ruleset.api is not None
    environ = {"SNIPE_API_CONTROL_TOKEN": GOOD}
    options = api_options(ruleset.api, None, environ=environ)
    assert options is not None
    assert (options.host, options.port) == ("0.0.0.0", 9000)
    assert "snipe.example" in options.hosts
    assert "0.0.0.0" not in options.hosts
    flagged = api_options(ruleset.api, "127.0.0.1:0", environ=environ)
    assert flagged is not None
    assert (flagged.host, flagged.port) == ("127.0.0.1", 0)
    assert api_options(None, None) is None
    with pytest.raises(ConfigError, match="token"):
        load_rules_text(text.replace("behind_proxy: true", "token: abc"), "rules.yaml")


@pytest.mark.parametrize(
    ("method", "headers", "refused"),
    [
        ("POST", {}, False),  # curl, scripts
        ("POST", {"sec-fetch-site": "same-origin"}, False),
        ("POST", {"sec-fetch-site": "none"}, False),
        ("POST", {"sec-fetch-site": "cross-site"}, True),
        ("POST", {"sec-fetch-site": "same-site"}, True),
        ("POST", {"origin": "http://127.0.0.1:8788"}, False),
        ("POST", {"origin": "http://evil.example"}, True),
        ("POST", {"origin": "null"}, True),
        ("GET", {"origin": "http://evil.example"}, False),  # reads change nothing
    ],
)
def test_cross_site(method: str, headers: dict[str, str], refused: bool) -> None:
    hosts = frozenset({"127.0.0.1", "localhost"})
    assert cross_site(method, headers, hosts) is refused


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8788", True),
        ("localhost", True),
        ("evil.example", False),
        ("127.0.0.1@evil.example", False),
        ("[::1]:1", True),
        (None, False),
        ("a b", False),
    ],
)
def test_host_header(header: str | None, allowed: bool) -> None:
    assert host_allowed(header, frozenset({"127.0.0.1", "localhost", "::1"})) is allowed


def test_the_lockout_doubles_and_a_success_clears_it(clock: VirtualClock) -> None:
    limiter = FailureLimiter(clock, max_clients=2)
    for _ in range(FREE_FAILURES - 1):
        limiter.failed("a")
    assert limiter.locked_for("a") == 0
    limiter.failed("a")
    first = limiter.locked_for("a")
    assert first > 0
    limiter.failed("a")
    assert limiter.locked_for("a") == 2 * first
    limiter.succeeded("a")
    assert limiter.locked_for("a") == 0
    for client in ("b", "c", "d"):  # bounded memory: the oldest is forgotten
        limiter.failed(client)
    assert len(limiter._clients) == 2
