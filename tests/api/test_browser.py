"""The dashboard in a real browser: headless Chromium (Debian's package, driven through
/usr/bin/chromedriver by selenium) against `snipe run --api` on `snipe sandbox`, both real
processes. Log in by pasting the token, see a purchase appear, pause (the sandbox's ground
truth gets no purchase meanwhile), resume, reload a broken rules file (the page shows the
error with file:line:column; buying goes on under the old rules), then stop and restart
the engine: the page says "reconnecting" and comes back by itself.

Screenshots go to ``out/screenshots/`` (gitignored), or ``$SNIPE_SCREENSHOTS``. Without
Chromium the test is skipped, except in CI (``CI=true``), where `.ci/run` installs it and
its absence is a failure."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .processes import (
    CONTROL,
    EXAMPLE,
    KEY,
    READ,
    Sped,
    run_process,
    sandbox_process,
    wait_for,
)

pytestmark = pytest.mark.slow  # two processes and a browser: half a minute or more

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SNIPE_SCREENSHOTS") or ROOT / "out" / "screenshots")


def _need_chromium() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if not missing:
        return
    why = f"{' and '.join(missing)} not installed (apt-get install chromium chromium-driver)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the browser test: {why}")
    pytest.skip(why)


@contextlib.contextmanager
def _browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1100,1250",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _uncapped(rules: str) -> str:
    """The example rules with caps far above what the test buys: a planted deal must not
    meet a cap that the market's own deals reached first."""
    rules = re.sub(r"per_day: \"[0-9.]+\"", 'per_day: "100000.00"', rules)
    rules = re.sub(r"max_count: \d+", "max_count: 1000", rules)
    return re.sub(r"max_spend: \"[0-9.]+\"", 'max_spend: "100000.00"', rules)


def test_the_dashboard_in_a_browser(tmp_path: Path) -> None:
    _need_chromium()
    from selenium.common.exceptions import StaleElementReferenceException as StaleElement
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    SHOTS.mkdir(parents=True, exist_ok=True)
    rules = tmp_path / "rules.yaml"
    good = _uncapped(EXAMPLE.read_text())
    rules.write_text(good)
    ledger = tmp_path / "ledger.sqlite"
    logged: list[str] = []
    sped = Sped()
    with (
        contextlib.ExitStack() as stack,
        sandbox_process(sped) as url,
        _browser() as browser,
    ):
        market = stack.enter_context(httpx.Client(base_url=url))
        run, api_url = stack.enter_context(
            run_process(rules, ledger, url, sped, logged, "127.0.0.1:0")
        )
        api = stack.enter_context(httpx.Client(base_url=api_url, timeout=10))

        def bought() -> int:
            return len(market.get("/_sandbox/ground-truth").json()["purchases"])

        def watched() -> int:
            # searches, and the live feed's events: while the feed is trusted the engine
            # searches only to confirm a feed listing
            status = api.get("/api/status", headers={"authorization": f"Bearer {READ}"}).json()
            return int(status["searches"]) + int((status["feed"] or {}).get("events", 0))

        def text(element_id: str) -> str:
            return str(browser.find_element(By.ID, element_id).text)

        def page_shows(element_id: str, wanted: str, timeout: float = 90) -> None:
            # the tables are replaced at each refresh: a node read may be gone already
            WebDriverWait(
                browser, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElement]
            ).until(
                lambda _: wanted in text(element_id),
                f"#{element_id} never showed {wanted!r}",
            )

        def shot(name: str) -> None:
            browser.save_screenshot(str(SHOTS / f"{name}.png"))

        # log in: the page holds nothing until a token is pasted
        browser.get(f"{api_url}/dashboard/")
        assert browser.find_element(By.ID, "login").is_displayed()
        assert not browser.find_element(By.ID, "board").is_displayed()
        shot("0-login")
        browser.find_element(By.ID, "token").send_keys(CONTROL)
        browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
        page_shows("link", "live")
        page_shows("feed", "feed: trusted")  # the sandbox serves the live feed

        def plant_a_deal() -> None:
            # at 60x a deal the example rules take comes every minute or two of real time
            deal = {"name": "AK-47 | Redline (Field-Tested)", "discount": 40}
            assert market.post("/_sandbox/listings", json=deal).status_code == 200

        # a purchase appears, live: in the table, the events and the chart's legend
        plant_a_deal()
        wait_for("a first purchase", lambda: bought() > 0)
        WebDriverWait(browser, 90, poll_frequency=0.1).until(
            lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#purchases tr")) > 1,
            "no purchase row on the page",
        )
        page_shows("mode", "running")
        page_shows("gate", "gate: open since")
        WebDriverWait(browser, 30, poll_frequency=0.1).until(
            lambda _: browser.find_elements(By.CSS_SELECTOR, "#chart path.spent"),
            "the chart was never drawn",
        )
        page_shows("chart-legend", "spent $")
        assert "spent $0.00" not in text("chart-legend")
        shot("1-bought")

        # pause: the page says so, and the sandbox gets no purchase meanwhile
        browser.find_element(By.CSS_SELECTOR, "[data-action=pause]").click()
        page_shows("mode", "paused")
        page_shows("why-not", "Paused: paused through the API by control")
        before = bought()
        seen = watched()
        wait_for("the market watched while paused", lambda: watched() >= seen + 5, 180)
        assert bought() == before
        shot("2-paused")

        browser.find_element(By.CSS_SELECTOR, "[data-action=resume]").click()
        page_shows("mode", "running")
        plant_a_deal()
        wait_for("a purchase after resuming", lambda: bought() > before)

        # a broken rules file: refused with its place, shown; the old rules go on buying
        rules.write_text(good.replace("version: 1", "version: 1\nbogus_key: 1"))
        line = good.splitlines().index("version: 1") + 2
        browser.find_element(By.CSS_SELECTOR, "[data-action=reload]").click()
        page_shows("answer", f"reload refused: {rules}:{line}:1: bogus_key")
        shot("3-reload-refused")
        # buying goes on: still allowed, still searching, under the old rules
        page_shows("mode", "running")
        assert not browser.find_element(By.ID, "why-not").is_displayed()
        seen = watched()
        wait_for("the market watched after the refused reload", lambda: watched() >= seen + 3, 180)
        status = api.get("/api/status", headers={"authorization": f"Bearer {READ}"}).json()
        assert status["buying_allowed"] is True
        assert status["rules_file"] == str(rules)

        # a phone
        browser.set_window_size(390, 1400)
        browser.refresh()  # the token stays in the tab's session storage
        page_shows("link", "live")
        page_shows("purchases", "BOUGHT")
        # each row a card with its cells labelled: the header row is not shown
        WebDriverWait(browser, 30, poll_frequency=0.1).until(
            lambda _: browser.execute_script(
                "const th = document.querySelector('#purchases th');"
                "return th !== null && getComputedStyle(th.parentElement).display === 'none'"
            ),
            "the purchases' header row is still shown on a phone",
        )
        assert browser.execute_script("return innerWidth") <= 560
        shot("4-phone")
        browser.set_window_size(1100, 1250)

        # the engine stops: the page says "reconnecting" and keeps what it showed
        port = api_url.rsplit(":", 1)[1]
        stopped = api.post("/api/stop", headers={"authorization": f"Bearer {CONTROL}"})
        assert stopped.status_code == 200
        run.wait(timeout=60)
        assert run.returncode == 0, "".join(logged)
        page_shows("link", "reconnecting", 30)
        assert "BOUGHT" in text("purchases") or "COMPLETED" in text("purchases")
        shot("5-reconnecting")

        # and it comes back by itself once the engine is up again on the same address
        again: list[str] = []
        rules.write_text(good)
        listen = f"127.0.0.1:{port}"
        with run_process(rules, ledger, url, sped, again, listen) as (second, _):
            page_shows("link", "live", 60)
            page_shows("mode", "running")
            shot("6-back")
            api.post("/api/stop", headers={"authorization": f"Bearer {CONTROL}"})
            second.wait(timeout=60)
    text_logged = "".join(logged + again)
    for secret in (KEY, CONTROL, READ):
        assert secret not in text_logged
