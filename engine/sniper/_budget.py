"""Budgets: what the rules may spend, as the ledger checks it and as the rules see it.

Caps are enforced twice, on purpose. The rules see a :class:`BudgetState` when they decide
(so a decision can say "daily budget would be exceeded"), and the ledger checks the same
caps again in the transaction that writes the intent (so two purchases decided at the same
moment can never both pass a cap). Both count purchases in flight and of unknown outcome,
and what live buy orders may still buy (their *exposure*, kept in the ledger: the ledger's
cap queries add it, so a cap here is the plain limit).
"""

from __future__ import annotations

from operator import attrgetter

from .._money import format_usd
from ..ledger import Cap, Ledger, utc_day_start
from ..rules import BudgetState, Decision, RuleSet, RuleSpend

__all__ = ["budget_state", "budget_words", "caps_for_rule"]


def caps_for_rule(ruleset: RuleSet, rule_name: str, now: float) -> tuple[Cap, ...]:
    """Every cap a purchase (or a buy order) by ``rule_name`` at ``now`` must keep."""
    day = utc_day_start(now)
    caps = [
        Cap(ruleset.budgets.per_day, since=day, name="daily budget"),
        Cap(ruleset.budgets.total, name="total budget"),
    ]
    rule = next(
        (r for r in (*ruleset.rules, *ruleset.buy_order_rules) if r.name == rule_name), None
    )
    if rule is not None:
        if rule.max_spend is not None:
            caps.append(Cap(rule.max_spend, rule=rule.name, name=f"rule {rule.name!r} max_spend"))
        if rule.max_count is not None:
            caps.append(
                Cap(
                    rule.max_count,
                    kind="count",
                    rule=rule.name,
                    name=f"rule {rule.name!r} max_count",
                )
            )
    return tuple(caps)


async def budget_state(ledger: Ledger, now: float) -> BudgetState:
    """What is committed now (spent plus in flight, plus what live buy orders may still
    spend, as the ledger holds it), overall, today, and per rule; read from the ledger's
    per-day buckets, so its cost does not grow with the history."""
    held = await ledger.order_exposure()
    total = await ledger.committed_by_rule()
    today = await ledger.committed_by_rule(since=utc_day_start(now))
    per_rule = {
        rule: RuleSpend(spent=c.amount + held.of(rule), count=c.count) for rule, c in total.items()
    }
    for rule, amount in (held.per_rule or {}).items():
        per_rule.setdefault(rule, RuleSpend(spent=amount))
    return BudgetState(
        spent_today=sum(c.amount for c in today.values()) + held.total,
        spent_total=sum(c.amount for c in total.values()) + held.total,
        per_rule=per_rule,
        order_exposure=held.total,
    )


def budget_words(committed: int, exposure: int) -> str:
    """The one way a log line writes a budget figure: what the caps count, and whether
    buy-order exposure is part of it (``committed``: purchases spent and in flight)."""
    if not exposure:
        return f"committed {format_usd(committed)} (no buy-order exposure)"
    return (
        f"committed {format_usd(committed + exposure)} (purchases {format_usd(committed)}"
        f" + buy-order exposure {format_usd(exposure)})"
    )


def within_balance(decisions: list[Decision], balance: int | None) -> list[Decision]:
    """``decisions`` with the accepted ones past the wallet's ``balance`` (``None``:
    unknown, nothing turned down) turned down, in order: what one batch may buy."""
    # a backtest decides on millions of pairs: most batches accept none (C-level test)
    if balance is None or not any(map(attrgetter("accepted"), decisions)):
        return decisions
    left = balance
    out = []
    for d in decisions:
        if d.accepted and d.price > left:
            why = f"balance {format_usd(left)} is below the price {format_usd(d.price)}"
            d = Decision(d.listing, d.rule, False, (why,), d.price, d.action, d.priority, False)
        elif d.accepted:
            left -= d.price
        out.append(d)
    return out
