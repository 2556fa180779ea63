"""The dashboard: shipped in the package, served by the API without any outside request,
holding no data itself (every figure needs the token the user pastes), refused to foreign
Host names, never framed, and reading only through the token-protected endpoints."""

from __future__ import annotations

import re
from importlib.resources import files

from sniper.harness import pick_item, quiet_sandbox, rules_text

from engine import VirtualClock

from .helpers import served

STATIC = files("engine.api") / "static"


def test_the_files_ask_nothing_of_other_sites() -> None:
    for name in ("index.html", "dashboard.css", "dashboard.js"):
        text = STATIC.joinpath(name).read_text("utf-8")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]", text, re.I), name
        assert "localStorage" not in text  # the token stays in the tab (session storage)
    script = STATIC.joinpath("dashboard.js").read_text("utf-8")
    assert "innerHTML" not in script  # text is inserted as text
    assert "?token" not in script
    assert "&token" not in script
    assert 'credentials: "omit"' in script


def test_every_shipped_file_states_its_licence() -> None:
    """Issue 18: any JavaScript or CSS ships inside the package with its licence (all of it
    is snipe's own, under the package's licence)."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    licence = project["project"]["license"]
    for name in ("index.html", "dashboard.css", "dashboard.js"):
        head = STATIC.joinpath(name).read_text("utf-8")[:300]
        assert f"SPDX-License-Identifier: {licence}" in head, name


async def test_the_page_is_served_with_a_strict_policy_and_no_data(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        page = await s.client.get("/dashboard/")
        assert page.status_code == 200
        assert "<title>snipe</title>" in page.text
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
        assert page.headers["x-frame-options"] == "DENY"
        assert "running" not in page.text  # no engine state without a token
        assert sandbox.api_key not in page.text
        for name in ("dashboard.js", "dashboard.css"):
            assert (await s.client.get(f"/dashboard/{name}")).status_code == 200
        assert (await s.client.get("/dashboard/../api/status")).status_code in (401, 404)
        assert (await s.client.get("/dashboard/secret.txt")).status_code == 404
        foreign = await s.client.get("/dashboard/", headers={"host": "evil.example"})
        assert foreign.status_code == 421
