"""Engine.IO 4 / Socket.IO 5 framing, sans-I/O: text frames in, typed packets out.

The listing feed (docs/wire.md, "The listing feed") speaks Socket.IO over a plain
websocket. Only the part a listening client needs is here: no long-polling, no binary
attachments, no acknowledgements sent. Every websocket text message is one Engine.IO
packet; its first character is the type:

- ``0{...}`` open (``sid``, ``pingInterval`` and ``pingTimeout`` in milliseconds),
- ``1`` close, ``2`` ping (answered ``3``), ``3`` pong, ``5`` upgrade, ``6`` noop,
- ``4`` a message, which here is a Socket.IO packet: ``40{...}`` the namespace joined,
  ``41`` left, ``42[name, payload]`` an event, ``44{...}`` the namespace refused.

:func:`parse` never raises: a frame it cannot read is an :class:`Odd` packet saying why,
so one bad frame is set aside and counted by the caller and the connection goes on.
An event's payload is kept as JSON text (:attr:`SioEvent.payload`) for the models to
validate in pydantic-core, without a Python ``json.loads`` per event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "CONNECT",
    "PONG",
    "EioClose",
    "EioIgnored",
    "EioOpen",
    "EioPing",
    "Odd",
    "Packet",
    "SioConnect",
    "SioConnectError",
    "SioDisconnect",
    "SioEvent",
    "encode_event",
    "event_parts",
    "parse",
    "pong",
]

CONNECT: Final = "40"
"""Join the default namespace."""
PONG: Final = "3"
"""The answer to a ping without data."""

_SHOWN = 80  # characters of an odd frame kept to show in a log line


@dataclass(frozen=True, slots=True)
class EioOpen:
    """``0{...}``: the server's handshake. Times in seconds."""

    sid: str
    ping_interval: float
    ping_timeout: float


@dataclass(frozen=True, slots=True)
class EioPing:
    """``2``: answer ``3`` followed by the same ``data`` (see :func:`pong`)."""

    data: str = ""


@dataclass(frozen=True, slots=True)
class EioClose:
    """``1``: the server closes the session."""


@dataclass(frozen=True, slots=True)
class EioIgnored:
    """``3`` pong, ``5`` upgrade, ``6`` noop: nothing to do (still a sign of life)."""

    kind: str


@dataclass(frozen=True, slots=True)
class SioConnect:
    """``40`` or ``40{"sid":...}``: the namespace is joined."""

    namespace: str
    sid: str | None


@dataclass(frozen=True, slots=True)
class SioConnectError:
    """``44{...}``: the server refused the namespace; ``message`` says why, as sent."""

    namespace: str
    message: str


@dataclass(frozen=True, slots=True)
class SioDisconnect:
    """``41``: the server left the namespace."""

    namespace: str


@dataclass(frozen=True, slots=True)
class SioEvent:
    """``42[name, payload]``: an event. ``payload`` is the JSON text of the first argument
    (``None`` when the event has none); more than one argument leaves the rest in it, which
    the model then refuses (the feed sends one)."""

    name: str
    payload: str | None
    namespace: str = "/"


@dataclass(frozen=True, slots=True)
class Odd:
    """A frame that could not be read. ``field`` is a bounded label for the counter
    (``(frame)``, ``(packet)``, ``(open)``...), ``reason`` says what was wrong and
    ``excerpt`` shows the frame's start."""

    field: str
    reason: str
    excerpt: str


Packet = (
    EioOpen
    | EioPing
    | EioClose
    | EioIgnored
    | SioConnect
    | SioConnectError
    | SioDisconnect
    | SioEvent
    | Odd
)

_CLOSE: Final = EioClose()
_PING: Final = EioPing()
_IGNORED: Final = {"3": EioIgnored("pong"), "5": EioIgnored("upgrade"), "6": EioIgnored("noop")}


def parse(frame: str) -> Packet:
    """The packet one websocket text message holds; :class:`Odd` when it cannot be read.
    (The feed client tries :func:`event_parts` first, for the compact events.)"""
    if not frame:
        return _odd("(frame)", "empty frame", frame)
    kind = frame[0]
    if kind == "4":
        return _parse_socketio(frame)
    if kind == "2":
        return _PING if len(frame) == 1 else EioPing(frame[1:])
    if kind == "0":
        return _parse_open(frame)
    if kind == "1":
        return _CLOSE
    ignored = _IGNORED.get(kind)
    if ignored is not None:
        return ignored
    return _odd("(packet)", f"unknown Engine.IO packet type {kind!r}", frame)


def event_parts(frame: str) -> tuple[str, str] | None:
    """``(name, payload)`` of a compact event on the default namespace (``42["new",{...}]``,
    the feed's every event), or ``None`` for any other frame, which :func:`parse` reads.

    Two finds and slices, a third of the general path's cost, and no packet object (the
    feed client's hot path calls this first). Spaces, an escape in the name, an
    acknowledgement id, another namespace or no payload take the general path."""
    if frame.startswith('42["'):
        close = frame.find('"', 4)
        if close > 4 and frame.endswith("]") and frame[close + 1 : close + 2] == ",":
            name = frame[4:close]
            if "\\" not in name:
                return name, frame[close + 2 : -1]
    return None


def pong(ping: EioPing) -> str:
    """The answer to ``ping``: ``3`` and the ping's data (a probe ``2probe`` gets ``3probe``)."""
    return PONG + ping.data


def encode_event(name: str, payload: Any) -> str:
    """``42[name, payload]``: an event for the default namespace."""
    return "42" + json.dumps([name, payload], separators=(",", ":"), ensure_ascii=False)


def _odd(field: str, reason: str, frame: str) -> Odd:
    return Odd(field, reason, frame[:_SHOWN])


def _parse_open(frame: str) -> Packet:
    try:
        data = json.loads(frame[1:])
    except ValueError:
        return _odd("(open)", "the open packet is not JSON", frame)
    if not isinstance(data, dict):
        return _odd("(open)", "the open packet is not an object", frame)
    sid = data.get("sid")
    interval = _milliseconds(data.get("pingInterval"))
    timeout = _milliseconds(data.get("pingTimeout"))
    if not isinstance(sid, str) or not sid:
        return _odd("(open)", "the open packet has no sid", frame)
    if interval is None or timeout is None:
        return _odd("(open)", "pingInterval or pingTimeout is not a positive number", frame)
    return EioOpen(sid, interval, timeout)


def _milliseconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None  # ``not > 0`` also refuses NaN
    if value == float("inf"):
        return None
    return value / 1000.0


def _parse_socketio(frame: str) -> Packet:
    if len(frame) < 2:
        return _odd("(packet)", "an Engine.IO message without a Socket.IO packet", frame)
    kind = frame[1]
    rest = frame[2:]
    namespace = "/"
    if rest.startswith("/"):  # a namespace other than the default: ``42/feed,[...]``
        comma = rest.find(",")
        namespace, rest = (rest, "") if comma < 0 else (rest[:comma], rest[comma + 1 :])
    if kind == "2":
        return _parse_event(frame, rest, namespace)
    if kind == "0":
        return _parse_connect(frame, rest, namespace)
    if kind == "1":
        return SioDisconnect(namespace)
    if kind == "4":
        return SioConnectError(namespace, _error_message(rest))
    return _odd("(packet)", f"unhandled Socket.IO packet type {kind!r}", frame)


def _parse_connect(frame: str, rest: str, namespace: str) -> Packet:
    if not rest:
        return SioConnect(namespace, None)
    try:
        data = json.loads(rest)
    except ValueError:
        return _odd("(connect)", "the namespace answer is not JSON", frame)
    sid = data.get("sid") if isinstance(data, dict) else None
    return SioConnect(namespace, sid if isinstance(sid, str) else None)


def _error_message(rest: str) -> str:
    try:
        data = json.loads(rest) if rest else None
    except ValueError:
        return rest[:_SHOWN]
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])[:_SHOWN]
    return rest[:_SHOWN]


def _parse_event(frame: str, rest: str, namespace: str) -> Packet:
    # An acknowledgement id may stand before the array (``421[...]``): the feed asks none
    # and this client sends none back, so it is skipped.
    start = 0
    while start < len(rest) and rest[start].isdigit():
        start += 1
    body = rest[start:]
    if not body.startswith('["'):
        return _parse_event_slowly(frame, body, namespace)  # spaces, or not an array
    # The fast path: a name without escapes, then the payload's text as it stands.
    close = body.find('"', 2)
    if body.endswith("]") and close > 0 and "\\" not in body[2:close]:
        name = body[2:close]
        after = body[close + 1 : -1]
        if not after.strip():
            return SioEvent(name, None, namespace)
        if after.lstrip().startswith(","):
            return SioEvent(name, after.lstrip()[1:], namespace)
    return _parse_event_slowly(frame, body, namespace)


def _parse_event_slowly(frame: str, body: str, namespace: str) -> Packet:
    try:
        data = json.loads(body)
    except ValueError:
        return _odd("(event)", "an event is not JSON", frame)
    if not (isinstance(data, list) and data and isinstance(data[0], str)):
        return _odd("(event)", "an event is not an array starting with its name", frame)
    if len(data) == 1:
        return SioEvent(data[0], None, namespace)
    payload = json.dumps(data[1] if len(data) == 2 else data[1:], ensure_ascii=False)
    return SioEvent(data[0], payload, namespace)
