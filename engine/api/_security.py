"""Who may talk to the API, and from where: the pure checks, with an injected clock.

The defaults are the safe ones (issue 18 point 3):

- **bind**: loopback only; any other address needs TLS (``certfile``/``keyfile``) or a
  stated reverse proxy (``behind_proxy: true``), else :func:`check_bind` refuses;
- **tokens**: every request needs ``Authorization: Bearer TOKEN``; a *read* token cannot
  control, a *control* token can do both. Tokens come from environment variables or a
  token file only its owner can read (mode 0600), never from the rules file, and are
  compared in constant time (:func:`hmac.compare_digest`, every token every time). A
  request carrying a token in its URL is refused, so one pasted into a link is never
  accepted (and is then worth changing);
- **failed attempts**: after :data:`FREE_FAILURES` bad tokens a client is locked out for
  a time that doubles with each further failure (:class:`FailureLimiter`). Behind a stated
  reverse proxy the client is the address the proxy states (:func:`client_address`): keyed
  on the proxy's own address, one attacker would lock every user out, and all would share
  one count. ``X-Forwarded-For`` is read only from a trusted proxy: from anyone else it is
  a claim the sender makes up, and trusting it would let an attacker pick a fresh address
  for every guess;
- **hosts**: a ``Host`` header outside the allowed names is refused, which defeats DNS
  rebinding (a web page whose name resolves to 127.0.0.1);
- **cross-site**: no cookie is ever honoured (a browser never adds the bearer header by
  itself), and a ``POST`` a browser marks as cross-site (``Sec-Fetch-Site``) or from a
  foreign ``Origin`` is refused before anything else.
"""

from __future__ import annotations

import enum
import hmac
import ipaddress
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from .._clock import Clock
from .._errors import ConfigError
from ..rules import ApiSettings

__all__ = [
    "FREE_FAILURES",
    "MIN_TOKEN_LENGTH",
    "FailureLimiter",
    "Network",
    "Role",
    "Token",
    "TokenStore",
    "allowed_hosts",
    "check_bind",
    "client_address",
    "cross_site",
    "host_allowed",
    "is_loopback",
    "load_tokens",
    "split_listen",
    "token_in_query",
    "trusted_proxies",
]

MIN_TOKEN_LENGTH = 24
"""Shorter tokens are refused at start: a guessable token defeats everything else."""

FREE_FAILURES = 5
"""Bad tokens a client may send before it is locked out."""

FIRST_LOCKOUT = 2.0
MAX_LOCKOUT = 900.0
"""Seconds of the first lockout, doubled per further failure, up to this."""

_QUERY_NAMES = frozenset({"token", "access_token", "auth", "authorization", "key", "api_key"})


class Role(enum.Enum):
    READ = "read"
    CONTROL = "control"


@dataclass(frozen=True)
class Token:
    name: str
    """Written to the ledger's control events and shown; the secret never is."""
    role: Role
    secret: str = field(repr=False)

    def allows(self, role: Role) -> bool:
        return self.role is Role.CONTROL or role is Role.READ


class TokenStore:
    """The tokens the API accepts."""

    def __init__(self, tokens: Iterable[Token]) -> None:
        self.tokens = tuple(tokens)
        secrets = [t.secret for t in self.tokens]
        if len(set(secrets)) != len(secrets):
            raise ConfigError("api: two tokens are the same; each needs its own", field="api")
        for token in self.tokens:
            if len(token.secret) < MIN_TOKEN_LENGTH:
                raise ConfigError(
                    f"api: the token {token.name!r} is shorter than {MIN_TOKEN_LENGTH}"
                    " characters (make one with: python -c 'import secrets;"
                    " print(secrets.token_urlsafe(32))')",
                    field="api",
                )

    def match(self, presented: str) -> Token | None:
        """The token ``presented`` is, compared in constant time against every token (no
        early exit, so the time says nothing about which one nearly matched)."""
        found = None
        given = presented.encode()
        for token in self.tokens:
            if hmac.compare_digest(given, token.secret.encode()):
                found = token
        return found

    def appears_in(self, text: str) -> bool:
        """Whether any token occurs in ``text`` (a URL's query)."""
        return any(t.secret in text for t in self.tokens)


def load_tokens(settings: ApiSettings, *, environ: Mapping[str, str] | None = None) -> TokenStore:
    """The tokens from the environment (named ``read`` and ``control``) and the token
    file (``NAME ROLE TOKEN`` lines). Raises :class:`~engine.ConfigError` naming the place
    (never a token) when there is no control token, the file is readable by others, or a
    line is malformed."""
    env = os.environ if environ is None else environ
    tokens = []
    for name, role, variable in (
        ("read", Role.READ, settings.read_token_env),
        ("control", Role.CONTROL, settings.control_token_env),
    ):
        value = env.get(variable, "").strip()
        if value:
            tokens.append(Token(name, role, value))
    if settings.token_file is not None:
        tokens.extend(_read_token_file(Path(settings.token_file).expanduser()))
    if not any(t.role is Role.CONTROL for t in tokens):
        raise ConfigError(
            f"api: no control token: set {settings.control_token_env} or name a token file"
            " (api.token_file, lines NAME ROLE TOKEN, mode 0600)",
            field="api",
        )
    return TokenStore(tokens)


def _read_token_file(path: Path) -> list[Token]:
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"api: the token file {path} can be read by others (mode"
                f" {stat.S_IMODE(mode):o}); run: chmod 600 {path}",
                field="api.token_file",
            )
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ConfigError(
            f"api: cannot read the token file {path}: {exc.strerror}", field="api.token_file"
        ) from None
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 3 or words[1] not in ("read", "control"):
            # the line is not echoed: it may hold a token
            raise ConfigError(
                "expected NAME ROLE TOKEN with ROLE read or control",
                location=f"{path}:{number}:1",
            )
        out.append(Token(words[0], Role(words[1]), words[2]))
    return out


# -- where it listens ----------------------------------------------------------------------


def split_listen(listen: str) -> tuple[str, int]:
    """``"127.0.0.1:8788"`` -> ``("127.0.0.1", 8788)``; ``[::1]:8788`` too."""
    host, _, port = listen.rpartition(":")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name could resolve anywhere


def check_bind(settings: ApiSettings, listen: str | None = None) -> tuple[str, int]:
    """Host and port to bind; :class:`~engine.ConfigError` for an address that is not
    loopback while neither TLS nor a reverse proxy is stated."""
    host, port = split_listen(listen or settings.listen)
    if is_loopback(host):
        return host, port
    if settings.behind_proxy:
        return host, port
    if settings.certfile and settings.keyfile:
        return host, port
    raise ConfigError(
        f"api: refusing to listen on {host}:{port} (not loopback) in clear: set"
        " api.certfile and api.keyfile for TLS, or api.behind_proxy: true if a reverse proxy"
        " terminates TLS in front of it",
        field="api.listen",
    )


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)


def trusted_proxies(settings: ApiSettings) -> tuple[Network, ...]:
    """The peers whose ``X-Forwarded-For`` is believed: none unless ``behind_proxy``; then
    ``trusted_proxies``, or loopback (a proxy on this machine) when none is named."""
    if not settings.behind_proxy:
        return ()
    if not settings.trusted_proxies:
        return _LOOPBACK
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in settings.trusted_proxies)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, proxies: tuple[Network, ...]
) -> bool:
    return address is not None and any(address in network for network in proxies)


def client_address(
    peer: str | None, forwarded_for: Iterable[str], proxies: tuple[Network, ...]
) -> str:
    """Whom to count a request against: the connecting ``peer``, unless it is a trusted
    proxy; then the right-most ``X-Forwarded-For`` entry (of every such header, in order)
    that is not itself a trusted proxy: the address the last trusted proxy saw. Entries
    to its left were written by the client and prove nothing. A trusted proxy that states
    no usable address is counted as itself."""
    if peer is None:
        return "?"
    if not _trusted(_address(peer), proxies):
        return peer
    entries = [e.strip() for header in forwarded_for for e in header.split(",")]
    for entry in reversed(entries):
        address = _address(entry)
        if address is None:
            return peer  # unreadable: what the proxy wrote cannot be told apart
        if not _trusted(address, proxies):
            return str(address)
    return peer


def allowed_hosts(settings: ApiSettings, host: str) -> frozenset[str]:
    """Host header names accepted: loopback names, the bound address and the stated
    ``allowed_hosts`` (lower case, without port)."""
    names = {"localhost", "127.0.0.1", "::1", host.lower()}
    names.update(h.lower() for h in settings.allowed_hosts)
    names.discard("0.0.0.0")
    names.discard("::")
    return frozenset(names)


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    if not header:
        return False
    parts = urlsplit(f"//{header}")
    try:
        name = parts.hostname
    except ValueError:
        return False
    return name is not None and name.lower() in allowed


def cross_site(method: str, headers: Mapping[str, str], allowed: frozenset[str]) -> bool:
    """Whether a state-changing request comes from another site, as the browser says:
    ``Sec-Fetch-Site`` other than same-origin/none, or an ``Origin`` outside the allowed
    hosts. Requests without those headers (curl, scripts) are not browsers' and pass."""
    if method in ("GET", "HEAD"):
        return False
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    if origin is not None:
        return origin == "null" or not host_allowed(urlsplit(origin).netloc, allowed)
    return False


def token_in_query(query: str, tokens: TokenStore) -> bool:
    """Whether a URL query carries a token (by name, or any token's value)."""
    if not query:
        return False
    names = {name.lower() for name, _ in parse_qsl(query, keep_blank_values=True)}
    return bool(names & _QUERY_NAMES) or tokens.appears_in(query)


# -- failed attempts -----------------------------------------------------------------------


@dataclass
class _Record:
    failures: int = 0
    locked_until: float = 0.0


class FailureLimiter:
    """Per-client bad-token count and lockout, on the engine's clock. A lockout lasts
    :data:`FIRST_LOCKOUT` seconds after :data:`FREE_FAILURES` failures, doubling with
    each further one up to :data:`MAX_LOCKOUT`; a good token clears the count. At most
    ``max_clients`` clients are remembered (the oldest forgotten first)."""

    def __init__(self, clock: Clock, *, max_clients: int = 10_000) -> None:
        self._clock = clock
        self._max = max_clients
        self._clients: dict[str, _Record] = {}

    def locked_for(self, client: str) -> float:
        """Seconds ``client`` must still wait (0: may try)."""
        record = self._clients.get(client)
        if record is None:
            return 0.0
        return max(0.0, record.locked_until - self._clock.now())

    def failed(self, client: str) -> None:
        record = self._clients.pop(client, None) or _Record()
        record.failures += 1
        excess = record.failures - FREE_FAILURES
        if excess >= 0:
            wait = min(MAX_LOCKOUT, FIRST_LOCKOUT * 2.0**excess)
            record.locked_until = self._clock.now() + wait
        self._clients[client] = record  # most recent last
        while len(self._clients) > self._max:
            del self._clients[next(iter(self._clients))]

    def succeeded(self, client: str) -> None:
        self._clients.pop(client, None)
