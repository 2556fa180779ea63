"""The shape of a rules file: pydantic models with unknown keys forbidden, and the
translation of pydantic's errors into errors a trader can act on (place, field, and the
closest key when a key is misspelt).

The rule model is built per plugin host: every registered criterion adds one optional key.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import os
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from .._errors import ConfigError, InvalidRequest
from ._contract import Criterion, Problem
from ._portfolio import PortfolioSettings
from ._prices import PricesSettings
from ._strict import StrictModel
from ._values import USD, Duration, Size
from ._yaml import Document

__all__ = [
    "CORE_RULE_KEYS",
    "NOTIFY_CORE_KEYS",
    "Account",
    "Budgets",
    "BuyOrder",
    "NotifyCore",
    "RateLimits",
    "RuleCore",
    "build_config_model",
    "problems_from_validation_error",
]


class RateLimits(StrictModel):
    """Requests per minute snipe allows itself (interface.md section 8)."""

    search_per_minute: int = Field(20, ge=1, le=600)
    buy_orders_per_minute: int = Field(60, ge=1, le=600)


class Account(StrictModel):
    """Where and as whom snipe trades. The key is read from the environment variable named
    by ``api_key_env`` or from ``api_key_file``; writing it inline needs
    ``allow_inline_key: true``. The key never appears in a repr."""

    base_url: str
    api_key_env: str = "SNIPE_API_KEY"
    api_key_file: str | None = None
    allow_inline_key: bool = False
    api_key: SecretStr | None = Field(default=None, repr=False)
    trade_link: str | None = None
    ledger: str = "snipe-ledger.sqlite"
    rate_limits: RateLimits = RateLimits()
    snapshot_every: Duration = Field(10, ge=10, le=86_400)
    """Seconds between prices-snapshot polls (the service rebuilds it every 10 s). Longer
    saves bandwidth and delays detection by about half the added period on average."""
    feed: Literal["auto", "on", "off"] = "auto"
    """The live listing feed (a websocket of the service's website that tells each new,
    changed and removed listing as it happens): ``auto`` uses it when the service answers
    the handshake and polls the snapshot otherwise; ``on`` always connects (and keeps
    retrying); ``off`` never connects: detection is the snapshot's alone."""
    feed_compression: Literal["auto", "off"] = "auto"
    """``auto`` offers permessage-deflate (RFC 7692) when the feed's websocket opens and
    uses it if the service accepts (the frames are JSON that repeats itself: several times
    fewer bytes); ``off`` never offers it (plain frames, less CPU)."""
    feed_max_message: Size | None = None
    """The largest message the feed may send, in bytes (``"1 MiB"``, ``"512 KiB"``, or a
    number), inflated when compressed, joined when in fragments: a larger one closes the
    connection (1009) and the feed connects again. Unset: 1 MiB. At least 64 KiB (the
    feed's events are ~300 B), at most 1 GiB."""
    feed_url: str | None = None
    """Where the feed is (the website's host: ``https://host``, ``/socket.io/`` is added).
    Unset: the scheme and host of ``base_url`` (where the sandbox serves it)."""
    audit_every: Duration = Field(300, ge=10, le=86_400)
    """While the feed is healthy, seconds between its audits (the feed's gaps counted as
    ``snipe_feed_missed_total``): a cheap one (``GET /v1/prices``, each watched name's
    count and lowest price against what the feed told) unless a full one is due;
    ``snapshot_every`` snapshot polls apply while it is down, not yet healed or found
    missing listings."""
    full_audit_every: Duration = Field(3600, ge=10, le=7 * 86_400)
    """While the feed is healthy, seconds between the full audits (a whole snapshot poll
    diffed against what the feed told; every (re)connection is healed by one too). At
    least ``audit_every``; equal to it, every audit is a full snapshot (the cheap tier
    off: about 13 GB a day for csgo at 5 minutes)."""

    sticker_prices_for: Duration = Field(300, ge=0, le=3_600)
    """Seconds what a search showed of a listing's stickers and of stickers' prices is
    trusted to decide the feed's later events without another search: an ``update`` or
    relist of a listing searched is decided on its stickers, and a listing whose
    stickers' known prices cannot reach a rule's ``min_value`` costs no search. Prices
    move, stickers do not: 0 confirms every candidate with its own search."""

    @field_validator("full_audit_every")
    @classmethod
    def _full_audit_every(cls, value: int, info: ValidationInfo) -> int:
        audit = info.data.get("audit_every")
        if audit is not None and value < audit:
            raise ValueError(
                f"the full audit ({value:g} s) cannot come more often than the audits "
                f"(audit_every: {audit:g} s); set it to at least {audit:g} s "
                "(equal: every audit is a full snapshot)"
            )
        return value

    @field_validator("feed_max_message")
    @classmethod
    def _feed_max_message(cls, value: int | None) -> int | None:
        if value is None:
            return None
        # the very check the feed's client makes (its bounds are the client's)
        from ..client import check_feed_max_message

        try:
            return check_feed_max_message(value)
        except ConfigError as exc:
            raise ValueError(exc.message) from None

    @field_validator("feed_url")
    @classmethod
    def _feed_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
            raise ValueError(
                f"expected an http(s) or ws(s) address such as 'https://host', got {value!r}"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError(
                "the feed address must not carry a query or credentials (the key goes elsewhere)"
            )
        return value.rstrip("/")

    def feed_address(self, base_url: str | None = None) -> str:
        """The feed's address: ``feed_url``, or the scheme and host of ``base_url`` (the
        command line's, else the rules file's)."""
        if self.feed_url is not None:
            return self.feed_url
        parts = urlsplit(base_url or self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"expected an http(s) address such as 'https://host', got {value!r}")
        if parts.query:
            raise ValueError("the base address must not carry a query (the key goes elsewhere)")
        return value.rstrip("/")

    @field_validator("trade_link")
    @classmethod
    def _trade_link(cls, value: str | None) -> str | None:
        if value is None:
            return None
        # the very check `snipe run` makes, so `snipe check` passes only what run accepts
        from ..client import TradeLink

        try:
            TradeLink.parse(value)
        except InvalidRequest as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("api_key")
    @classmethod
    def _no_inline_key_by_default(cls, value: SecretStr | None, info: ValidationInfo) -> Any:
        if value is not None and not info.data.get("allow_inline_key"):
            env = info.data.get("api_key_env", "SNIPE_API_KEY")
            raise ValueError(
                "the API key is written in the rules file; remove `api_key` and set it in "
                f"the environment variable {env} or in a file named by `api_key_file` (to "
                "keep it inline anyway, add `allow_inline_key: true`)"
            )
        return value

    def api_key_source(self) -> str:
        """Where the key comes from, for a summary (never the key itself)."""
        if self.api_key is not None:
            return "inline in the rules file"
        if self.api_key_file is not None:
            return f"file {self.api_key_file}"
        return f"environment variable {self.api_key_env}"

    def resolve_api_key(
        self, environ: Mapping[str, str] | None = None, *, relative_to: str | None = None
    ) -> SecretStr:
        """The API key, wrapped so that printing it shows ``**********``.

        Raises :class:`~engine.ConfigError` naming where it looked (never the key).
        """
        if self.api_key is not None:
            return self.api_key
        if self.api_key_file is not None:
            path = FilePath(self.api_key_file).expanduser()
            if relative_to and not path.is_absolute():
                path = FilePath(relative_to).parent / path
            try:
                text = path.read_text("utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"cannot read the API key file {path}: {exc.strerror}",
                    field="account.api_key_file",
                ) from None
            if not text:
                raise ConfigError(f"the API key file {path} is empty", field="account.api_key_file")
            return SecretStr(text)
        value = (os.environ if environ is None else environ).get(self.api_key_env, "").strip()
        if not value:
            raise ConfigError(
                f"the environment variable {self.api_key_env} (the API key) is not set",
                field="account.api_key_env",
            )
        return SecretStr(value)


class ApiSettings(StrictModel):
    """The ``api:`` section: the control-plane HTTP API ``snipe run`` serves (``--api``
    overrides ``listen``). Tokens are never written here: they come from the environment
    variables named below or from a token file only its owner can read (mode 0600)."""

    listen: str = "127.0.0.1:8788"
    """``HOST:PORT``; anything but a loopback address needs TLS or ``behind_proxy``."""
    read_token_env: str = "SNIPE_API_READ_TOKEN"
    control_token_env: str = "SNIPE_API_CONTROL_TOKEN"
    token_file: str | None = None
    """Lines ``NAME ROLE TOKEN`` (ROLE: read or control); the file must be mode 0600."""
    certfile: str | None = None
    keyfile: str | None = None
    behind_proxy: bool = False
    """Stated on purpose: a reverse proxy terminates TLS in front of a non-loopback bind.
    Requests from a trusted proxy are then counted (failed attempts, lockout) by the client
    address it states in ``X-Forwarded-For``; from any other peer that header is ignored."""
    trusted_proxies: tuple[str, ...] = ()
    """With ``behind_proxy``: the proxies' addresses or networks (``10.0.0.5``,
    ``10.0.0.0/24``); default: loopback (a proxy on this machine)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header values accepted besides the listen address and localhost (DNS
    rebinding defence)."""

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"expected an IP address or network such as '10.0.0.5' or"
                    f" '10.0.0.0/24', got {entry!r}"
                ) from None
        return value

    @model_validator(mode="after")
    def _proxies_need_a_proxy(self) -> ApiSettings:
        if self.trusted_proxies and not self.behind_proxy:
            raise ValueError("trusted_proxies is only read with behind_proxy: true")
        return self

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"expected HOST:PORT such as '127.0.0.1:8788', got {value!r}")
        return value


class Budgets(StrictModel):
    """Global spending caps, in dollars. Both count purchases in flight."""

    per_day: USD
    total: USD


class BuyOrder(StrictModel):
    """For ``action: buy_order``: the order's maximum price and how many to buy."""

    price: USD
    amount: int = Field(1, ge=1, le=1000)


class OrdersSettings(StrictModel):
    """The ``orders:`` section: what happens to the buy orders snipe placed."""

    on_stop: Literal["keep", "remove"] = "remove"
    """At a clean stop (``--for``, SIGINT, SIGTERM): ``remove`` withdraws every open buy
    order snipe placed (an open order spends by itself while nobody watches);
    ``keep`` leaves them on the service (they keep their place in the queue) and the stop
    line says how many were left open."""


class RuleCore(StrictModel):
    """The keys every rule has, whatever plugins are loaded."""

    name: str = Field(min_length=1, max_length=80)
    enabled: bool = True
    note: str | None = None
    priority: int = Field(0, ge=-1000, le=1000)
    action: Literal["buy", "bulk", "buy_order"] = "buy"
    buy_order: BuyOrder | None = None
    max_price: USD
    max_count: int | None = Field(None, ge=1)
    max_spend: USD | None = None

    @model_validator(mode="after")
    def _action_consistent(self) -> RuleCore:
        if self.action == "buy_order" and self.buy_order is None:
            raise ValueError("`action: buy_order` needs a `buy_order:` block with `price`")
        if self.action != "buy_order" and self.buy_order is not None:
            raise ValueError(f"`buy_order:` is given but the action is {self.action!r}")
        if self.buy_order is not None and self.buy_order.price > self.max_price:
            raise ValueError("the buy order price is above the rule's `max_price`")
        return self


class NotifyCore(StrictModel):
    """The ``notify:`` section's own keys (how notices are queued and retried); every
    notifier plugin adds one key (``discord``, ``telegram``, ``webhook``...)."""

    queue_size: int = Field(100, ge=1, le=10_000)
    """Notices waiting per channel; more are dropped and counted."""
    retries: int = Field(5, ge=0, le=20)
    backoff: float = Field(2.0, gt=0, le=3600)
    """Seconds before the first retry, doubled after each."""
    timeout: float = Field(10.0, gt=0, le=120)


CORE_RULE_KEYS: frozenset[str] = frozenset(RuleCore.model_fields)
NOTIFY_CORE_KEYS: frozenset[str] = frozenset(NotifyCore.model_fields)
_ALIAS_PREFIX = "c_"


def build_config_model(
    criteria: Sequence[Criterion], notifiers: Sequence[tuple[str, type[BaseModel]]] = ()
) -> type[BaseModel]:
    """The model of a whole rules file, with one optional rule key per criterion and one
    optional ``notify:`` key per notifier (key, model)."""
    return _config_model(tuple(criteria), tuple(notifiers))


@functools.lru_cache(maxsize=32)
def _config_model(
    criteria: tuple[Criterion, ...], notifiers: tuple[tuple[str, type[BaseModel]], ...] = ()
) -> type[BaseModel]:
    fields: dict[str, Any] = {
        _ALIAS_PREFIX + c.key: (c.schema | None, Field(default=None, alias=c.key)) for c in criteria
    }
    notify_fields: dict[str, Any] = {
        _ALIAS_PREFIX + key: (schema | None, Field(default=None, alias=key))
        for key, schema in notifiers
    }
    notify_model = create_model("Notify", __base__=NotifyCore, __module__=__name__, **notify_fields)
    rule_model = create_model("Rule", __base__=RuleCore, __module__=__name__, **fields)
    rules_type = Annotated[list[rule_model], Field(min_length=1)]
    model: type[BaseModel] = create_model(
        "RulesFile",
        __base__=StrictModel,
        __module__=__name__,
        version=(Literal[1], 1),
        account=(Account, ...),
        budgets=(Budgets, ...),
        notify=(notify_model | None, None),
        prices=(PricesSettings | None, None),
        orders=(OrdersSettings, OrdersSettings()),
        portfolio=(PortfolioSettings | None, None),
        api=(ApiSettings | None, None),
        rules=(rules_type, ...),
    )
    return model


def criterion_values(rule: BaseModel) -> dict[str, Any]:
    """The criteria keys a rule uses -> their validated values (and likewise the notifier
    keys a ``notify:`` section uses)."""
    out: dict[str, Any] = {}
    for name, info in type(rule).model_fields.items():
        if name.startswith(_ALIAS_PREFIX) and info.alias:
            value = getattr(rule, name)
            if value is not None:
                out[info.alias] = value
    return out


# ---------------------------------------------------------------- error translation


def problems_from_validation_error(
    error: ValidationError, doc: Document, model: type[BaseModel]
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, with place, field and a plain message."""
    problems = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        kind = item["type"]
        if kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = _keys_of(parent) if parent is not None else []
            message = _unknown_key_message(str(loc[-1]), allowed)
            where = doc.where(loc, key=True)
        elif kind == "missing":
            message = f"the required key {loc[-1]!r} is missing"
            where = doc.where(loc[:-1])
        else:
            message = _value_message(item, secret="api_key" in loc)
            where = doc.where(loc)
        problems.append(Problem("error", message, location=where, field=format_path(loc) or None))
    return sorted(problems, key=lambda p: _line_column(p.location))


def _line_column(location: str | None) -> tuple[int, int]:
    parts = (location or "").rsplit(":", 2)
    try:
        return int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return 0, 0


def format_path(loc: Iterable[Any]) -> str:
    """``("rules", 2, "float", "max")`` -> ``"rules[2].float.max"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice a typo most likely meant, if one is close enough."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if matches:
        return matches[0]
    folded = {c.lower().replace("-", "_"): c for c in choices}
    return folded.get(word.lower().replace("-", "_"))


def _unknown_key_message(key: str, allowed: list[str]) -> str:
    guess = closest(key, allowed)
    if guess is not None:
        return f"unknown key {key!r}; did you mean {guess!r}?"
    listing = ", ".join(sorted(allowed))
    return f"unknown key {key!r}; the keys here are: {listing}" if allowed else f"unknown {key!r}"


def _value_message(item: Any, *, secret: bool) -> str:
    message = str(item["msg"]).removeprefix("Value error, ")
    raw = item.get("input")
    if item["type"] == "literal_error" and isinstance(raw, str):
        expected = re.findall(r"'([^']*)'", str(item.get("ctx", {}).get("expected", "")))
        guess = closest(raw, expected)
        if guess is not None:
            return f"{message}, got {raw!r}; did you mean {guess!r}?"
    if secret or item["type"].startswith("value_error") or isinstance(raw, dict | list):
        return message
    shown = repr(raw)
    return f"{message}, got {shown[:60]}"


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` (for typo suggestions)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            if get_origin(current) in (list, tuple, set, frozenset):
                current = get_args(current)[0]
                continue
            return None
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next(
            (f for n, f in current.model_fields.items() if part in (n, f.alias)),
            None,
        )
        if field is None:
            return None
        current = field.annotation
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` to reach the type that matters."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            non_none = [a for a in get_args(tp) if a is not type(None)]
            if len(non_none) != 1:
                return tp
            tp = non_none[0]
        else:
            return tp
