"""What happens to snipe's open buy orders when it stops (issue 18): ``snipe run
--remove-orders`` withdraws them and buys nothing; at a clean stop ``orders.on_stop``
removes them (the default) or keeps them, and the stop line says which."""

from __future__ import annotations

import functools
from pathlib import Path

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine.cli import _run as run_cli
from engine.cli import main
from engine.cli._run import orders_at_stop
from engine.client import MarketClient
from engine.ledger import Ledger
from engine.sandbox import Sandbox
from engine.sniper._session import SessionOptions

from .harness import pick_item, quiet_sandbox, rig
from .test_buy_orders import order_rules


def _usd(mills: int) -> str:
    return f"{mills / 1000:.3f}"


@pytest.mark.parametrize(
    ("setting", "offers_left", "says"),
    [
        ("", 0, "removed 1 buy order"),
        ("orders: {on_stop: remove}\n", 0, "removed 1 buy order"),
        ("orders: {on_stop: keep}\n", 1, "1 buy order"),
    ],
)
async def test_a_clean_stop_follows_orders_on_stop_and_says_so(
    clock: VirtualClock, setting: str, offers_left: int, says: str
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    rules = order_rules(item.name, price=_usd(item.reference // 3), amount=2) + setting
    async with rig(clock, sandbox, rules) as r:
        async with clock.autojump():
            await r.engine.run(duration=30)
            assert len((await r.client.buy_orders()).offers) == 1
            lines = await orders_at_stop(r.engine)
        offers = (await r.client.buy_orders()).offers
    assert len(offers) == offers_left
    (line,) = lines
    assert says in line
    assert item.name in line
    if offers_left:
        assert "left open on the service (orders.on_stop: keep)" in line


def test_remove_orders_withdraws_them_says_which_and_buys_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = VirtualClock()
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    ledger_path = tmp_path / "ledger.sqlite"
    rules = tmp_path / "rules.yaml"
    rules.write_text(order_rules(item.name, price=_usd(item.reference // 3), amount=2))
    anyio.run(_place_an_order, clock, sandbox, rules.read_text(), ledger_path)
    assert _offers(sandbox) == [item.name]
    bought_before = _bought(sandbox)

    monkeypatch.setenv("SNIPE_API_KEY", sandbox.api_key)
    transport = httpx.ASGITransport(app=sandbox.app)
    monkeypatch.setattr(
        run_cli, "SessionOptions", functools.partial(SessionOptions, transport=transport)
    )
    code = main(["run", str(rules), "--ledger", str(ledger_path), "--remove-orders", "--for", "60"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert _offers(sandbox) == []
    assert f"removed 1 buy order ({item.name} x2" in err
    assert _bought(sandbox) == bought_before


async def _place_an_order(clock: VirtualClock, sandbox: Sandbox, rules: str, path: Path) -> None:
    async with (
        await Ledger.open(path, clock=clock) as ledger,
        rig(clock, sandbox, rules, ledger=ledger) as r,
    ):
        await r.engine.orders.sync()


def _offers(sandbox: Sandbox) -> list[str]:
    async def read() -> list[str]:
        transport = httpx.ASGITransport(app=sandbox.app)
        async with MarketClient(
            sandbox.api_key, base_url="http://sandbox", transport=transport
        ) as client:
            return [o.name for o in (await client.buy_orders()).offers]

    return anyio.run(read)


def _bought(sandbox: Sandbox) -> object:
    return sandbox.ground_truth()["purchases"]
