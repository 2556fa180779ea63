"""A value that must never be shown: the API key, the platform API key, access tokens.

``Secret`` keeps its value out of ``repr()``, ``str()``, f-strings and ``%``-formatting;
only :meth:`Secret.reveal` gives it back, and only the transport calls that, at the last
moment before the bytes go out.
"""

from __future__ import annotations

import hmac
from typing import NoReturn

__all__ = ["APIKey", "Secret", "SecretLike", "as_secret"]

_REDACTED = "***"


class Secret:
    """A secret string. ``repr``/``str``/``format`` print ``***``; :meth:`reveal` returns
    the value. Two secrets compare equal when their values do (in constant time)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str) or not value:
            raise TypeError("a secret must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        """The value itself. Only hand it to code that sends it."""
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the value replaced by ``***``."""
        return text.replace(self._value, _REDACTED) if self._value in text else text

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{_REDACTED}')"

    def __str__(self) -> str:
        return _REDACTED

    def __format__(self, spec: str) -> str:
        return _REDACTED

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, len(self._value)))

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled")


class APIKey(Secret):
    """The marketplace account key (query parameter ``api``)."""

    __slots__ = ()


SecretLike = str | Secret


def as_secret(value: SecretLike, *, what: str) -> Secret:
    """``value`` as a :class:`Secret`; a clear ``TypeError`` naming ``what`` otherwise."""
    if isinstance(value, Secret):
        return value
    if isinstance(value, str) and value:
        return Secret(value)
    raise TypeError(f"{what} must be a non-empty string or a Secret, got {type(value).__name__}")
