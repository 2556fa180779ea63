"""Prometheus metrics and a health probe for a running engine (``snipe run
--metrics-port``), served from the engine's own event loop."""

from ._http import Response, open_listener, serve_http, serve_listener
from ._metrics import CONTENT_TYPE, DETECTION_BUCKETS, EngineMetrics, LatencyTracker

__all__ = [
    "CONTENT_TYPE",
    "DETECTION_BUCKETS",
    "EngineMetrics",
    "LatencyTracker",
    "Response",
    "open_listener",
    "serve_http",
    "serve_listener",
]
