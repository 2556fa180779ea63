"""One generated function per set of rules watching a name: a feed event's checks, run once.

A feed event of a watched name is judged by the name's rules (:func:`make_plan`'s tests,
short-circuiting), and when none passes (nearly every event) its skip reasons are counted
by each rule's ``kinds``, which runs every predicate again. For a rule whose criteria are
all :attr:`~engine.rules.Compiled.exact` (the built-ins, and any criterion without a test
or kinds of its own), ``kinds`` gives ``None`` exactly when the rule's checks pass, so
``kinds`` alone answers both: :func:`make_judge` generates, per set of such rules, the
function that runs each rule's ``kinds`` once and gives every rule's kinds when all of
them turn the listing down, or ``None`` when some rule's checks pass (the listing then
goes through the engine's full decision, which judges it afresh). A set with a rule that
is not exact has no judge: its events keep the plan, then the kinds.

Same verdicts by construction: a rule's ``kinds`` is generated from the same predicates
as its ``check`` (:mod:`engine.rules._kinds`), its core sites test the conditions the
plan tests, and an exact criterion's kinds agree with its test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..models import Listing
from ._contract import EvalContext, NameView

__all__ = ["Judge", "make_judge"]

Found = list[int | str]
"""What a rule's ``kinds`` gives a listing it turns down (see :data:`engine.rules.Kinds`)."""

Judge = Callable[[Listing, NameView, EvalContext], tuple[Found, ...] | None]
"""``judge(listing, view, ctx)``: per rule of the set, in order, what its ``kinds`` gives
``listing``, when every rule turns it down; ``None`` when some rule's checks pass."""


def make_judge(rules: Sequence[Any]) -> Judge | None:
    """The judge of ``rules`` (compiled rules, a name's, in the set's order), or ``None``
    when a rule is not :attr:`~engine.rules.CompiledRule.exact` or has no ``kinds``.

    Generated as source, as :func:`engine.rules._plan.make_plan` is (only generated
    identifiers enter it): it runs once per feed event of a watched name.
    """
    if not rules or not all(r.exact and r.kinds is not None for r in rules):
        return None
    namespace: dict[str, Any] = {}
    lines = ["def judge(listing, view, ctx):"]
    for i, rule in enumerate(rules):
        namespace[f"kinds_{i}"] = rule.kinds
        lines += [
            f"    found_{i} = kinds_{i}(listing, view, ctx)",
            f"    if found_{i} is None:",
            "        return None",
        ]
    lines.append(f"    return ({''.join(f'found_{i}, ' for i in range(len(rules)))})")
    exec("\n".join(lines) + "\n", namespace)
    judge: Judge = namespace["judge"]
    return judge
