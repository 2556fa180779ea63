"""Every hook a snipe plugin can implement, in one place.

A plugin is a module or object with functions marked ``@hookimpl`` (import it from here)
and named like the specifications below. Install it with an entry point in the group
``snipe``::

    [project.entry-points.snipe]
    paintseed = "snipe_paintseed"

The engine loads installed plugins at start (only those named in ``SNIPE_PLUGINS`` when
that variable is set), runs ``check_pending()`` so a misspelt hook name is an error, and
lists them with ``snipe plugins``.

When hooks run: the ``register`` hooks run once, when a rules file is loaded. The
others run once per evaluation batch or once per purchase, never once per listing per
criterion: the per-listing work is done by the plain closures criteria compile to.

Isolation: the engine calls each plugin's implementation separately. One that raises is
named in the log and isolated: a registration that raises contributes nothing (and the
load reports it), a veto that raises counts as a block, a notification that raises is
dropped. A plugin can never crash the engine, and can never cause a purchase by failing.

No hook here is ``firstresult``: every implementation is called and every answer counts.
Hook wrappers are not supported.

Backtests: a plugin must decide at time t with what was known at t. One that reads
recorded history (a price source of past prices) finds the recording being replayed with
``engine.backtest.replayed_recording()`` and must read nothing later than the clock
(``EvalContext.now``); ``snipe lookahead`` replays recordings cut at several times and
names the plugins whose decisions change when only the future changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ._events import DailySummary
    from ._notifiers import NotifierKind
    from .ledger import Purchase
    from .rules import Criterion, Decision, EvalContext, PriceSource

__all__ = [
    "PROJECT",
    "hookimpl",
    "hookspec",
    "snipe_daily_summary",
    "snipe_decisions",
    "snipe_halted",
    "snipe_purchase",
    "snipe_refund",
    "snipe_register_criteria",
    "snipe_register_notifiers",
    "snipe_register_price_sources",
    "snipe_veto_purchase",
]

PROJECT = "snipe"
"""The pluggy project name, which is also the entry-point group."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Mark a plugin function as the implementation of the hook of the same name."""


@hookspec
def snipe_register_criteria() -> Sequence[Criterion]:
    """Contribute rule keys.

    Called once per rules file load, before validation. Return the
    :class:`~engine.rules.Criterion` objects this plugin adds (a YAML key, the type that
    validates its value, and ``compile`` turning the value into predicates). The built-in
    ``match``, ``price``, ``discount``, ``float``, ``phases``, ``stickers`` and ``hold``
    keys are registered through this same hook. A key already taken (by the core or by an
    earlier plugin) is refused and the refusal names both plugins.

    The engine knows a criterion only by what its :class:`~engine.rules.Compiled`
    declares, never by its key: the names and patterns it watches, the ``games`` it
    restricts the rule to, the ``references`` (price sources) its predicate reads, which
    the engine then fetches and supplies, and ``trade_locked``, whether (and up to which
    wait) it accepts trade-locked listings, which the engine then asks the service for and
    buys with ``allow_trade_locked``. The built-in criteria declare the same way.

    Beside its predicate, a ``Compiled`` may give two optional fast forms of it: ``test``
    (pass or fail, run while deciding) and ``kinds`` (:data:`~engine.rules.ReasonKind`:
    which kind of reason, without its text, run while counting the skip reasons a status
    or a backtest report shows). Without them the engine calls the predicate and counts
    its text: the same decisions and counts, only slower.

    Not ``firstresult``: every plugin's list is collected.
    """
    raise NotImplementedError


@hookspec
def snipe_register_price_sources() -> Sequence[PriceSource]:
    """Contribute reference price sources (named by ``discount.versus`` in a rule).

    Called once per rules file load. Return :class:`~engine.rules.PriceSource` objects.
    A criterion that reads a source names it in :attr:`~engine.rules.Compiled.references`
    (``discount`` names its ``versus``). The ``fetch`` of a source a rule names is awaited
    by the engine's references step every ``PriceSource.every`` seconds (default 60), off
    the buying path: a decision never waits for it, and reads the answer last held
    (``reference`` per listing), whose age the ``max_age`` guard sees. Sources no rule names
    are never fetched. The built-in ``platform_price`` source and the ``market.*`` and
    ``service.*`` sources (plugin ``builtin.reference``, fed by the engine's
    :class:`~engine.reference.ReferenceHub`) are registered this way; ``file.NAME`` sources
    come from the rules file's ``prices.lists``.

    A rule's guards (``discount.min_observations``, ``discount.max_age``) read
    :meth:`~engine.rules.PriceSource.quote`: override it to report how many observations
    a reference rests on and when its data is from (a :class:`~engine.rules.Quote`);
    the default reports neither, so a guard refuses such a reference.

    Not ``firstresult``: every plugin's list is collected; a name taken twice is refused.
    """
    raise NotImplementedError


@hookspec
def snipe_veto_purchase(decision: Decision, context: EvalContext) -> bool | None:
    """Last word before a purchase.

    Called once for every accepted decision, right before the purchase is written to the
    ledger and sent. Return ``False`` to block it, ``True`` or ``None`` to let it go. Any
    ``False`` blocks; an implementation that raises blocks too. Keep it fast and free of
    blocking I/O (it runs on the buying path).

    Not ``firstresult``: every implementation is asked.
    """
    raise NotImplementedError


@hookspec
def snipe_decisions(decisions: Sequence[Decision], context: EvalContext) -> None:
    """Notification: the decisions of one evaluation batch, accepted and rejected.

    Called once per batch, after evaluation, before any purchase of the batch. The return
    value is ignored; an implementation that raises is logged and dropped.
    """
    raise NotImplementedError


@hookspec
def snipe_purchase(decision: Decision, outcome: str, detail: str | None) -> None:
    """Notification: a purchase attempt ended.

    ``outcome`` is ``"bought"``, ``"refused"``, ``"vetoed"`` or ``"unknown"`` (the answer
    was lost; the engine resolves it by ``project_id``); ``detail`` is the service's
    message or the veto's reason. Called once per attempt; the return value is ignored;
    an implementation that raises is logged and dropped.
    """
    raise NotImplementedError


@hookspec
def snipe_register_notifiers() -> Sequence[NotifierKind]:
    """Contribute notification channels (keys of the rules file's ``notify:`` section).

    Called once per rules file load, before validation. Return
    :class:`~engine.notify.NotifierKind` objects: a key, the model validating its value
    (a :class:`~engine.notify.ChannelConfig` subclass), and ``build`` turning the value into
    a channel when the engine starts. The built-in ``discord``, ``telegram`` and ``webhook``
    notifiers are registered through this same hook. A key already taken is refused.

    Not ``firstresult``: every plugin's list is collected.
    """
    raise NotImplementedError


@hookspec
def snipe_refund(purchase: Purchase, reason: str | None) -> None:
    """Notification: the service refunded a purchase.

    Called once per refund, as soon as reconciling moves the purchase to REFUNDED
    (``purchase`` is the ledger's record after the move; ``reason`` the service's, if any),
    for purchases and buy-order fills alike. The engine calls it itself (its reconciler
    and order manager), with or without ``snipe run`` around it. The return value is
    ignored; an implementation that raises is logged and dropped.
    """
    raise NotImplementedError


@hookspec
def snipe_halted(reason: str) -> None:
    """Notification: the engine went HALTED (buying stopped until a person looks).

    Called at most once per run, with the reason, by the engine itself at the moment it
    goes HALTED (so on the path that halted: keep it fast, queue any I/O). ``snipe run``
    also calls it when a run ends in an error without a HALT (``"refused to trade: ..."``
    when the start-up gate refused, ``"stopped: ..."`` otherwise), since then too a person
    must look. The return value is ignored; an implementation that raises is logged and
    dropped.
    """
    raise NotImplementedError


@hookspec
def snipe_daily_summary(summary: DailySummary) -> None:
    """Notification: one UTC day ended (:class:`~engine.notify.DailySummary`).

    Called by the engine itself (its status task) at each UTC midnight it is running at,
    about the day that just ended, as the ledger has it. The return value is ignored; an
    implementation that raises is logged and dropped.
    """
    raise NotImplementedError
