"""The torture and soak benches calm the service down: every fault disarmed over HTTP."""

from __future__ import annotations

from sandbox_support import Api


async def test_every_fault_can_be_disarmed_over_http(api: Api) -> None:
    for endpoint in ("GET /v1/user", "*"):
        armed = await api.http.post(
            "/_sandbox/faults", json={"endpoint": endpoint, "kind": "http_error", "count": 5}
        )
        assert armed.status_code == 200
    assert (await api.http.get("/v1/user", params={"api": api.key})).status_code == 503
    disarmed = await api.http.delete("/_sandbox/faults")
    assert disarmed.json() == {"success": True, "disarmed": 2}
    assert (await api.http.get("/v1/user", params={"api": api.key})).status_code == 200
