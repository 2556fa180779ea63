"""Argument checks: every documented limit of the interface, tested before anything is sent.

Each check raises :class:`~engine.InvalidRequest` naming the endpoint and the argument, so a
bad call costs no request (and no rate-limit slot). :class:`Query` collects query
parameters in order; arrays are repeated parameters (``name=a&name=b``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Final, Literal

from .._errors import InvalidRequest
from ._secret import Secret

__all__ = [
    "EXTERIORS",
    "GAMES",
    "ORDERS",
    "ORDER_BYS",
    "SORTS",
    "Exterior",
    "Game",
    "Order",
    "OrderBy",
    "Query",
    "Sort",
]

Game = Literal["csgo", "tf2", "rust", "dota2"]
Order = Literal["asc", "desc"]
OrderBy = Literal["price", "profit", "discount"]
Exterior = Literal["FN", "MW", "FT", "WW", "BS"]
Sort = Literal["ASC", "DESC"]

GAMES: Final = frozenset({"csgo", "tf2", "rust", "dota2"})
ORDERS: Final = frozenset({"asc", "desc"})
ORDER_BYS: Final = frozenset({"price", "profit", "discount"})
EXTERIORS: Final = frozenset({"FN", "MW", "FT", "WW", "BS"})
SORTS: Final = frozenset({"ASC", "DESC"})

MAX_NAMES: Final = 50
MAX_PROJECT_ID: Final = 50
MAX_DEPOSIT_ID: Final = 50
MAX_PROJECT_IDS_PER_CHECK: Final = 100
MAX_SKIP: Final = 5000
PAGE_LIMIT: Final = (1, 100)

_PLATFORM_ID = re.compile(r"[0-9]{17}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{8}")
_PARTNER = re.compile(r"[0-9]{1,20}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class Query:
    """Query parameters of one request, checked as they are added."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.items: list[tuple[str, str]] = []

    def fail(self, message: str) -> InvalidRequest:
        return InvalidRequest(f"{self.endpoint}: {message}; nothing was sent")

    def add(self, name: str, value: str | None) -> Query:
        if value is not None:
            self.items.append((name, value))
        return self

    # --- typed adders -------------------------------------------------------------------

    def text(self, name: str, value: object, *, max_len: int | None = None) -> str:
        """A required non-empty string (ints are accepted for ids)."""
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.fail(f"{name} must be a string, got {type(value).__name__}")
        text = str(value)
        if not text.strip():
            raise self.fail(f"{name} must not be empty")
        if max_len is not None and len(text) > max_len:
            raise self.fail(f"{name} is {len(text)} characters long; at most {max_len} allowed")
        return text

    def optional_text(self, name: str, value: object, *, max_len: int | None = None) -> Query:
        if value is not None:
            self.add(name, self.text(name, value, max_len=max_len))
        return self

    def required_text(self, name: str, value: object, *, max_len: int | None = None) -> Query:
        return self.add(name, self.text(name, value, max_len=max_len))

    def choice(self, name: str, value: object, allowed: frozenset[str]) -> Query:
        """An enum value (``None`` = not sent)."""
        if value is not None:
            self.add(name, self.check_choice(name, value, allowed))
        return self

    def check_choice(self, name: str, value: object, allowed: frozenset[str]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(f"{name} must be one of {', '.join(sorted(allowed))}; got {value!r}")
        return value

    def money(self, name: str, value: object, *, required: bool = False) -> Query:
        """A price: a non-negative int, USD x 1000 (never a float or a bool)."""
        if value is None and not required:
            return self
        return self.add(name, str(self.check_money(name, value)))

    def check_money(self, name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(
                f"{name} must be an int (USD x 1000), got {type(value).__name__} {value!r}"
            )
        if value < 0:
            raise self.fail(f"{name} must not be negative, got {value}")
        return value

    def integer(
        self, name: str, value: object, *, low: int | None = None, high: int | None = None
    ) -> Query:
        """An optional bounded int (``None`` = not sent)."""
        if value is not None:
            self.add(name, str(self.check_int(name, value, low=low, high=high)))
        return self

    def check_int(
        self, name: str, value: object, *, low: int | None = None, high: int | None = None
    ) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{name} must be an int, got {type(value).__name__} {value!r}")
        if low is not None and value < low:
            raise self.fail(f"{name} must be at least {low}, got {value}")
        if high is not None and value > high:
            raise self.fail(f"{name} must be at most {high}, got {value}")
        return value

    def flag(self, name: str, value: bool) -> Query:
        """A switch sent as ``1`` only when true."""
        return self.add(name, "1") if self.check_bool(name, value) else self

    def check_bool(self, name: str, value: object) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"{name} must be True or False, got {value!r}")
        return value

    def binary(self, name: str, value: bool | None) -> Query:
        """A switch sent as ``1`` or ``0``, or not at all when ``None``."""
        if value is None:
            return self
        if not isinstance(value, bool):
            raise self.fail(f"{name} must be True, False or None, got {value!r}")
        return self.add(name, "1" if value else "0")

    def repeated(
        self,
        name: str,
        values: Iterable[object],
        *,
        max_count: int,
        max_len: int | None = None,
    ) -> Query:
        """A query array: one parameter per value, 1 to ``max_count`` values."""
        if isinstance(values, str | bytes):
            raise self.fail(f"{name} must be a list of strings, not a single string")
        texts = [self.text(f"{name}[{i}]", v, max_len=max_len) for i, v in enumerate(values)]
        if not texts:
            raise self.fail(f"{name} needs at least one value")
        if len(texts) > max_count:
            raise self.fail(f"{name} has {len(texts)} values; at most {max_count} per request")
        for text in texts:
            self.add(name, text)
        return self

    def skip(self, value: int | None) -> Query:
        return self.integer("skip", value, low=0, high=MAX_SKIP)

    def platform_id(self, value: object, *, required: bool = True) -> Query:
        if value is None and not required:
            return self
        return self.add("platform_id", self.check_platform_id(value))

    def check_platform_id(self, value: object) -> str:
        text = value if isinstance(value, str) else None
        if text is None or not _PLATFORM_ID.fullmatch(text):
            raise self.fail(f"platform_id must be exactly 17 digits, got {_describe(value)}")
        return text

    def check_trade_url_token(self, value: object) -> str:
        if not isinstance(value, str) or not _TOKEN.fullmatch(value):
            raise self.fail(
                f"trade_url_token must be 8 letters, digits, '-' or '_', got {_describe(value)}"
            )
        return value

    def check_partner(self, value: object) -> str:
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not _PARTNER.fullmatch(text):
            raise self.fail(f"partner must be the numeric partner id, got {_describe(value)}")
        return text

    def check_token(self, value: object) -> Secret:
        """The trade-link token. Sent through the transport like a secret so that it does
        not appear in logged URLs."""
        raw = value.reveal() if isinstance(value, Secret) else value
        if not isinstance(raw, str) or not _TOKEN.fullmatch(raw):
            raise self.fail("token must be the 8-character token of the trade link")
        return Secret(raw)

    def date(self, name: str, value: object, *, required: bool = True) -> Query:
        """A ``YYYY-MM-DD`` date, from a ``datetime.date`` or text."""
        if value is None and not required:
            return self
        if isinstance(value, dt.datetime):
            raise self.fail(f"{name} must be a date, not a datetime")
        if isinstance(value, dt.date):
            return self.add(name, value.isoformat())
        if isinstance(value, str) and _DATE.fullmatch(value):
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                pass
            else:
                return self.add(name, value)
        raise self.fail(f"{name} must be a date YYYY-MM-DD, got {_describe(value)}")

    def exactly_one(self, **options: object) -> str:
        """The name of the one option given; several or none is an error."""
        given = [name for name, value in options.items() if value is not None]
        if len(given) != 1:
            names = " or ".join(options)
            raise self.fail(f"give exactly one of {names} (got {len(given)})")
        return given[0]


def check_secret(endpoint: str, name: str, value: object) -> Secret:
    """A secret argument (``platform_api``, access token): non-empty text or a Secret."""
    if isinstance(value, Secret):
        return value
    if isinstance(value, str) and value.strip():
        return Secret(value)
    raise InvalidRequest(f"{endpoint}: {name} must be a non-empty string; nothing was sent")


def _describe(value: object) -> str:
    """A short description of a bad value that never echoes long text."""
    if isinstance(value, str):
        return f"{len(value)} characters" if len(value) > 24 else repr(value)
    return type(value).__name__
