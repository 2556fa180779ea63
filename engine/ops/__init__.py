"""Running snipe for weeks: notifications, metrics, ``/healthz`` and the status file,
started next to the engine by ``snipe run``."""

from ._operations import ListenError, Operations, OpsSettings, daily_summary, operations

__all__ = ["ListenError", "Operations", "OpsSettings", "daily_summary", "operations"]
