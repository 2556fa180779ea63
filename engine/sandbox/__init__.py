"""The sandbox marketplace: a local service that behaves like the real one.

It implements the server side of the interface (every endpoint of sections 4.1 to 4.7 and
the named extras snipe uses) on a living, seeded market with its own clock, enforces every
documented rule and limit, fails on purpose when a scenario says so, and reports what
really happened (``Sandbox.ground_truth()``, ``GET /_sandbox/ground-truth``)::

    sandbox = Sandbox(SandboxConfig(seed=7), clock=VirtualClock())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=sandbox.app), base_url="http://sandbox"
    ) as http:
        r = await http.get("/v1/user", params={"api": sandbox.api_key})

``snipe sandbox`` serves it on 127.0.0.1 (see :func:`serve`).
"""

from ._app import SandboxApp
from ._catalogue import CatalogueItem, build_catalogue, doppler_phases
from ._faults import Fault, FaultPlan, FeedFault, FeedFaultPlan, Scenario, load_scenario
from ._feed import FeedConfig, listing_payload, removed_payload
from ._limits import LimitConfig, Window
from ._market import Listing, Market, MarketConfig
from ._sandbox import Sandbox, SandboxConfig
from ._server import serve, served
from ._snapshot import Snapshot, gzip_chunks
from ._trading import TradingConfig

__all__ = [
    "CatalogueItem",
    "Fault",
    "FaultPlan",
    "FeedConfig",
    "FeedFault",
    "FeedFaultPlan",
    "LimitConfig",
    "Listing",
    "Market",
    "MarketConfig",
    "Sandbox",
    "SandboxApp",
    "SandboxConfig",
    "Scenario",
    "Snapshot",
    "TradingConfig",
    "Window",
    "build_catalogue",
    "doppler_phases",
    "gzip_chunks",
    "listing_payload",
    "load_scenario",
    "removed_payload",
    "serve",
    "served",
]
