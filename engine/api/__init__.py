"""The control-plane HTTP API ``snipe run --api`` serves: read the engine's state, pause,
resume, reload the rules, remove buy orders, stop; token-protected and loopback-only by
default (see ``_security.py``)."""

from ._app import Api, api_app, view_json
from ._events import ApiEvent, EventBus
from ._security import (
    FailureLimiter,
    Role,
    Token,
    TokenStore,
    check_bind,
    load_tokens,
)
from ._server import ApiOptions, api_options, serve_app

__all__ = [
    "Api",
    "ApiEvent",
    "ApiOptions",
    "EventBus",
    "FailureLimiter",
    "Role",
    "Token",
    "TokenStore",
    "api_app",
    "api_options",
    "check_bind",
    "load_tokens",
    "serve_app",
    "view_json",
]
