"""Trade links: ``https://.../tradeoffer/new/?partner=123456&token=AbCdEfGh``."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from .._errors import InvalidTradeLink

__all__ = ["TradeLink"]

_PARTNER = re.compile(r"[0-9]{1,20}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{8}")


@dataclass(frozen=True)
class TradeLink:
    """The two parts of a trade link a purchase needs: ``partner`` (numeric text) and
    ``token`` (8 characters). ``repr`` masks most of the token: it is not a key, but it lets
    anyone send offers to the account, so it is not printed whole."""

    partner: str
    token: str

    def __post_init__(self) -> None:
        if not _PARTNER.fullmatch(self.partner):
            raise InvalidTradeLink(f"trade link: partner must be numeric, got {self.partner!r}")
        if not _TOKEN.fullmatch(self.token):
            raise InvalidTradeLink(
                f"trade link: token must be 8 letters or digits, got {len(self.token)} characters"
            )

    @classmethod
    def parse(cls, url: str) -> TradeLink:
        """The ``partner`` and ``token`` of a full trade URL.

        Raises :class:`~engine.InvalidTradeLink` saying what is wrong: not a URL, a missing
        or non-numeric ``partner``, a missing token or one that is not 8 characters. The
        message never quotes the URL.
        """
        if not isinstance(url, str):
            raise InvalidTradeLink(f"trade link must be text, got {type(url).__name__}")
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidTradeLink("trade link is not an http(s) URL")
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        partner = _single(query, "partner")
        token = _single(query, "token")
        if partner is None:
            raise InvalidTradeLink("trade link has no partner parameter")
        if not _PARTNER.fullmatch(partner):
            raise InvalidTradeLink("trade link partner is not a number")
        if token is None:
            raise InvalidTradeLink("trade link has no token parameter")
        if not _TOKEN.fullmatch(token):
            raise InvalidTradeLink(
                f"trade link token must be 8 letters or digits, got {len(token)} characters"
            )
        return cls(partner=partner, token=token)

    def __repr__(self) -> str:
        return f"TradeLink(partner={self.partner!r}, token='{self.token[:2]}******')"

    __str__ = __repr__


def _single(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise InvalidTradeLink(f"trade link has {len(values)} {name} parameters")
    return values[0]
