"""What the chat commands answer: pure functions of the engine's read model (an
:class:`~engine.sniper.EngineView`), the portfolio, the day's summary or a control's
outcome. No I/O here, so every text is tested synchronously, table-driven.

Money is USD x 1000 and shown with :func:`~engine._money.format_usd`. No answer carries a
secret: the view and the portfolio hold none.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from .._money import format_usd
from ..notify import DailySummary, summary_notice
from ..portfolio import Portfolio
from ..sniper import EngineView, controls

__all__ = [
    "COMMANDS",
    "Command",
    "daily_answer",
    "help_answer",
    "parse_command",
    "pause_answer",
    "profit_answer",
    "reload_answer",
    "resume_answer",
    "status_answer",
    "unknown_answer",
]

COMMANDS: dict[str, str] = {
    "status": "what snipe is doing: running, paused or HALTED, money against the caps",
    "profit": "what is known today: holdings valued at the reference prices, realised sales",
    "daily": "today so far (UTC): purchases, spend, refunds",
    "pause": "stop buying (the buy orders are withdrawn) until /resume",
    "resume": "buy again after /pause (a HALT needs a restart)",
    "reload": "read the rules file again; an invalid file is refused, the old rules keep running",
    "help": "this list",
}
"""The commands, in the order /help lists them."""


@dataclass(frozen=True)
class Command:
    name: str
    """One of :data:`COMMANDS`, or ``"unknown"``."""
    args: str
    said: str
    """What was written (for the answer to an unknown command)."""


def parse_command(text: str | None) -> Command | None:
    """The command a message gives (``/status``, ``/status@SnipeBot``, ``/Pause now``),
    ``None`` for a message that is not a command. ``/start`` is ``help``."""
    if not text or not text.startswith("/"):
        return None
    head, _, args = text.strip().partition(" ")
    name = head[1:].partition("@")[0].lower()
    if name == "start":
        name = "help"
    if name not in COMMANDS:
        return Command("unknown", args.strip(), head[:40])
    return Command(name, args.strip()[:200], head[:40])


def help_answer() -> str:
    return "snipe commands:\n" + "\n".join(f"/{n} - {what}" for n, what in COMMANDS.items())


def unknown_answer(command: Command) -> str:
    return f"unknown command {command.said}\n\n{help_answer()}"


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _state(view: EngineView) -> str:
    if view.halted:
        return f"HALTED: {view.halt_reason}"
    if view.paused is not None:
        return f"paused: {view.paused}"
    if view.waiting is not None:
        return f"{view.mode.value}: waiting ({view.waiting})"
    return view.mode.value


def status_answer(view: EngineView) -> str:
    """/status: the state, money against the caps, purchases and what needs a look."""
    dry = view.dry_run
    lines = [f"snipe {'dry run ' if dry else ''}{_state(view)}"]
    if dry:
        lines.append(f"would spend {format_usd(view.spent_total)} (nothing is bought)")
    else:
        lines.append(
            f"used {format_usd(view.used_total)} of {format_usd(view.cap_total)} total, "
            f"{format_usd(view.used_today)} of {format_usd(view.cap_per_day)} today; "
            f"{format_usd(view.left_today)} left today"
        )
        if view.order_exposure:
            lines.append(
                f"buy orders: {view.orders_live} live, {format_usd(view.order_exposure)} exposed"
            )
    lines.append(
        f"this run: {view.bought} {'would-be purchases' if dry else 'bought'}, "
        f"{view.candidates} candidates, {view.searches} searches, "
        f"{view.watched} names watched"
    )
    if view.unresolved or view.overdue:
        lines.append(
            f"unresolved purchases {view.unresolved} (being resolved), overdue {view.overdue}"
        )
    if view.recent:
        last = view.recent[-1]
        lines.append(
            f"last: {last.name} {format_usd(last.price)} ({last.outcome.value}, {last.rule})"
        )
    if view.errors:
        lines.append(f"latest error: {view.errors[-1]}")
    lines.append(f"rules: {view.rules_file} | as of {_when(view.now)}")
    return "\n".join(lines)


def profit_answer(view: EngineView, portfolio: Portfolio) -> str:
    """/profit: what is known now. Holdings are valued at reference prices (an estimate,
    after the configured sale fee); only sales that were recorded count as realised."""
    t = portfolio.totals
    lines = [f"snipe profit as of {_when(portfolio.now)}"]
    if not t.holdings and not t.sold:
        lines.append("nothing held and nothing sold yet")
    else:
        lines.append(f"held {t.holdings} for {format_usd(t.cost)}")
        if t.valued:
            sign = "+" if t.margin >= 0 else ""
            lines.append(
                f"valued {t.valued} at {format_usd(t.value)} against {format_usd(t.valued_cost)}"
                f" paid: {sign}{format_usd(t.margin)} (not realised)"
            )
        if t.unvalued:
            lines.append(
                f"{t.unvalued} without a reference price (cost {format_usd(t.unvalued_cost)})"
            )
        if t.illiquid:
            lines.append(f"{t.illiquid} thinly traded (value {format_usd(t.illiquid_value)})")
        if t.sold:
            lines.append(f"realised {format_usd(t.realised)} on {t.sold} sales")
    if view.dry_run:
        lines.append(f"dry run: would have spent {format_usd(view.spent_today)} today")
    else:
        lines.append(f"spent today {format_usd(view.spent_today)}")
    lines.append(portfolio.fee_text)
    lines.extend(portfolio.notes[:3])
    return "\n".join(lines)


def daily_answer(summary: DailySummary, now: float) -> str:
    """/daily: the day so far, in the words of the midnight summary."""
    notice = summary_notice(summary, now)
    return f"{notice.title} (so far, {_when(now)})\n{notice.text}"


def pause_answer(orders_removed: int, *, dry_run: bool) -> str:
    text = "buying paused: nothing is bought until /resume"
    if orders_removed:
        text += f"; {orders_removed} buy order(s) withdrawn"
    return text + (" (dry run)" if dry_run else "")


def resume_answer(outcome: controls.ResumeOutcome, halt_reason: str | None) -> str:
    if outcome == "resumed":
        return "buying resumed"
    if outcome == "halted":
        return f"still HALTED ({halt_reason}): a HALT needs a person and a restart"
    return "buying was not paused"


def reload_answer(result: controls.Reloaded) -> str:
    if result.error is not None:
        return f"reload refused, the running rules are kept:\n{result.error}"
    names = ", ".join(result.rules) or "none"
    text = f"rules reloaded ({len(result.rules)}): {names}"
    if result.notes:
        text += "\n" + "\n".join(result.notes)
    return text
