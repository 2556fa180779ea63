"""A third-party criterion gets what it declares, through the public contract only: the
engine supplies the reference it names and buys the trade-locked listing it accepts."""

from __future__ import annotations

from engine import VirtualClock
from engine.hookspecs import hookimpl
from engine.ledger import PurchaseState
from engine.models import Listing
from engine.rules import (
    Compiled,
    Criterion,
    Duration,
    EvalContext,
    NameView,
    RuleContext,
    StrictModel,
)

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

DAY = 86_400.0


class Vouch(StrictModel):
    versus: str
    max_lock: Duration


class VouchPlugin:
    """Buys at 40% under the reference it names, trade-locked listings included."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion("vouch", Vouch, self.compile, "40% under a named reference")]

    def compile(self, value: Vouch, rule: RuleContext) -> Compiled:
        source = rule.price_sources[value.versus]
        seen = self.seen

        def vouched(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
            if listing.unlock_at is not None and listing.unlock_at - ctx.now > value.max_lock:
                return "locked too long"
            quote = source.quote(listing, view, ctx)
            if quote is None:
                return f"no reference from {value.versus}"
            seen.add(quote.price)
            return None if listing.price * 10 <= quote.price * 6 else "not 40% under"

        return Compiled(
            predicate=vouched,
            summary=f"40% under {value.versus}",
            references=(value.versus,),
            trade_locked=float(value.max_lock),
        )


async def test_a_plugin_criterion_gets_its_reference_and_its_trade_locked_listing(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    text = (
        rules_text(item.name).replace(
            "    discount: 20\n", "    vouch: {versus: service.platform_price, max_lock: 3d}\n"
        )
        + "prices: {service: {every: 10m}}\n"
    )
    deal = plant(sandbox, item, price=item.reference // 2, unlock_in=DAY)
    plugin = VouchPlugin()
    async with rig(clock, sandbox, text, plugins=[("vouch", plugin)]) as r:
        assert "discount" not in r.ruleset.rules[0].criteria  # no built-in key involved
        async with clock.autojump():
            await r.engine.run(duration=1500)
        purchases = await r.ledger.purchases()
    assert plugin.seen == {item.reference}  # the service's platform_price, supplied
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    [purchase] = purchases
    assert purchase.allow_trade_locked
    assert purchase.state is PurchaseState.RESERVED
