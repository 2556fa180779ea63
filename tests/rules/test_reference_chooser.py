"""A rule's reference, chosen once for a listing in a context: the chooser keeps its latest
answer (a feed event's test, then its skip count, ask it one after the other), and never
gives it for another listing or context, even one equal in value."""

from __future__ import annotations

import pytest

from engine.models import Listing
from engine.rules import EvalContext, Quote, evaluate
from engine.testing import NOW, make_context, make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"
RULES = {
    "one source": "discount: {min: 10, versus: market.p25}",
    "one guarded": "discount: {min: 10, versus: market.p25, min_observations: 5}",
    "lowest of two": "discount: {min: 10, versus: [market.p25, platform_price]}",
    "agreeing": "discount: {min: 10, versus: [market.p25, platform_price], agree: 80}",
}


def ruleset(discount: str):  # type: ignore[no-untyped-def]
    return rules_for(
        "rules:\n"
        "  - name: r\n"
        f"    match: {{names: ['{NAME}'], game: csgo}}\n"
        f"    {discount}\n"
        "    max_price: '100.00'\n"
    )


def context(p25: int | None, observations: int = 10) -> EvalContext:
    table = {} if p25 is None else {(NAME, None): Quote(p25, observations, NOW)}
    return make_context(references={"market.p25": table})


def verdicts(rules, listing: Listing, contexts: list[EvalContext]) -> list[tuple[bool, str]]:  # type: ignore[no-untyped-def]
    out = []
    for ctx in contexts:
        (decision,) = evaluate(rules, [listing], ctx)
        out.append((decision.accepted, decision.reasons[0]))
    return out


@pytest.mark.parametrize("discount", RULES.values(), ids=RULES.keys())
def test_each_listing_and_context_gets_its_own_reference(discount: str) -> None:
    rules = ruleset(discount)
    listing = make_listing(name=NAME, price=10_000, platform_price=20_000)
    twin = make_listing(name=NAME, price=10_000, platform_price=20_000)
    dearer = make_listing(name=NAME, price=19_000, platform_price=20_000)
    # the same listing object in contexts one after the other, each asked twice in a row
    contexts = [context(15_000), context(15_000), context(10_000), context(None), context(3)]
    alone = [verdicts(rules, listing, [ctx])[0] for ctx in contexts]
    asked_twice = [v for ctx in contexts for v in verdicts(rules, listing, [ctx, ctx])]
    assert asked_twice == [v for v in alone for _ in range(2)]
    assert len({accepted for accepted, _ in alone}) == 2  # the table decides both ways
    # another listing (equal, or dearer) in the very same context
    ctx = contexts[0]
    assert verdicts(rules, listing, [ctx]) == verdicts(rules, twin, [ctx])
    assert verdicts(rules, dearer, [ctx]) != verdicts(rules, listing, [ctx])
