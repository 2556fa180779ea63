"""Starting the API safely: where it may listen, where tokens come from (pure, synchronous,
table-driven), and the rules file's ``api:`` section."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine import ConfigError, VirtualClock
from engine.api import FailureLimiter, api_options, check_bind, load_tokens
from engine.api._security import (
    FREE_FAILURES,
    Network,
    client_address,
    cross_site,
    host_allowed,
    trusted_proxies,
)
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


LOOPBACK_PROXY = trusted_proxies(ApiSettings(behind_proxy=True))
LAN_PROXIES = trusted_proxies(ApiSettings(behind_proxy=True, trusted_proxies=("10.0.0.0/24",)))


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "proxies", "client"),
    [
        # no stated proxy: the header is never read
        ("127.0.0.1", ["203.0.113.9"], (), "127.0.0.1"),
        # from the proxy: the address it appended (the right-most)
        ("127.0.0.1", ["203.0.113.9"], LOOPBACK_PROXY, "203.0.113.9"),
        ("127.0.0.1", ["6.6.6.6, 203.0.113.9"], LOOPBACK_PROXY, "203.0.113.9"),
        ("127.0.0.1", ["6.6.6.6", "203.0.113.9"], LOOPBACK_PROXY, "203.0.113.9"),  # 2 headers
        ("::ffff:127.0.0.1", ["203.0.113.9"], LOOPBACK_PROXY, "203.0.113.9"),
        ("127.0.0.1", ["[2001:db8::1]"], LOOPBACK_PROXY, "2001:db8::1"),
        # a chain of trusted proxies: the first address none of them is
        ("10.0.0.5", ["6.6.6.6, 203.0.113.9, 10.0.0.7"], LAN_PROXIES, "203.0.113.9"),
        # from anyone else: the peer, whatever it claims
        ("10.0.0.66", ["203.0.113.9"], LOOPBACK_PROXY, "10.0.0.66"),
        ("10.1.0.5", ["203.0.113.9"], LAN_PROXIES, "10.1.0.5"),
        # the proxy states nothing usable: counted as itself
        ("127.0.0.1", [], LOOPBACK_PROXY, "127.0.0.1"),
        ("127.0.0.1", ["127.0.0.1"], LOOPBACK_PROXY, "127.0.0.1"),
        ("127.0.0.1", ["203.0.113.9, unknown"], LOOPBACK_PROXY, "127.0.0.1"),
        (None, ["203.0.113.9"], LOOPBACK_PROXY, "?"),
    ],
)
def test_the_client_a_request_is_counted_against(
    peer: str | None, forwarded_for: list[str], proxies: tuple[Network, ...], client: str
) -> None:
    assert client_address(peer, forwarded_for, proxies) == client


PROXY_RULES = """
version: 1
account: {base_url: "http://sandbox"}
budgets: {per_day: "5.00", total: "10.00"}
api: {listen: "0.0.0.0:9000", SECTION}
rules:
  - {name: r, match: {names: [X]}, max_price: "1.00"}
"""


@pytest.mark.parametrize(
    ("section", "proxies"),
    [
        ("behind_proxy: true", ["127.0.0.0/8", "::1/128"]),  # a proxy on this machine
        (
            "behind_proxy: true, trusted_proxies: [10.0.0.5, 10.0.1.0/24]",
            ["10.0.0.5/32", "10.0.1.0/24"],
        ),
        ("certfile: c.pem, keyfile: k.pem", []),  # TLS, no proxy: the header is never read
    ],
)
def test_the_trusted_proxies_a_rules_file_states(section: str, proxies: list[str]) -> None:
    ruleset = load_rules_text(PROXY_RULES.replace("SECTION", section), "rules.yaml")
    options = api_options(ruleset.api, None, environ={"SNIPE_API_CONTROL_TOKEN": GOOD})
    assert options is not None
    assert [str(network) for network in options.proxies] == proxies


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ("behind_proxy: true, trusted_proxies: [proxy.lan]", "expected an IP address or network"),
        (
            "certfile: c.pem, keyfile: k.pem, trusted_proxies: [10.0.0.5]",
            "only read with behind_proxy",
        ),
    ],
)
def test_a_wrong_trusted_proxies_setting_is_named(section: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error) as caught:
        load_rules_text(PROXY_RULES.replace("SECTION", section), "rules.yaml")
    assert "rules.yaml:5:" in str(caught.value)
