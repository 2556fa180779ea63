"""The plugin system: loading (entry points, allow-list, check_pending), criteria and price
sources contributed like the built-ins, and isolation of plugins that fail."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import (
    Compiled,
    Criterion,
    Decision,
    EvalContext,
    NameView,
    PriceSource,
    RuleContext,
    check_rules_text,
)
from engine.testing import RULES_HEADER, decide, make_context, make_listing

NAME = "AK-47 | Redline (Field-Tested)"


def rule_with(extra: str) -> str:
    return (
        RULES_HEADER
        + f'rules:\n  - name: r\n    match: {{names: ["{NAME}"]}}\n    max_price: "50.00"\n'
        + extra
    )


def even_price(value: bool, rule: RuleContext) -> Compiled:
    def check(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        return None if listing.price % 2 == 0 else "odd price"

    return Compiled(predicate=check, summary="even price")


class EvenPlugin:
    calls = 0

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        EvenPlugin.calls += 1
        return [Criterion("even", bool, even_price, description="even prices only")]


class RaisingPredicatePlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: Any, rule: RuleContext) -> Compiled:
            def boom(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
                raise ZeroDivisionError("division by zero")

            return Compiled(predicate=boom)

        return [Criterion("boom", bool, compile_, description="raises")]


class RaisingRegistrationPlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        raise RuntimeError("cannot start")


class RaisingCompilePlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: Any, rule: RuleContext) -> Compiled:
            raise KeyError("missing table")

        return [Criterion("broken", bool, compile_, description="broken")]


class TakesDiscountKey:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion("discount", bool, even_price, description="clash")]


class MisspeltHook:
    @hookimpl
    def snipe_register_critera(self) -> list[Criterion]:  # typo: not a hook
        return []


class WrongArguments:
    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, wallet: int) -> bool:
        return True


class Steam(PriceSource):
    name = "steam"

    async def fetch(self, names: Sequence[str]) -> Mapping[str, int]:
        return {}


class SteamPlugin:
    @hookimpl
    def snipe_register_price_sources(self) -> list[PriceSource]:
        return [Steam()]


@dataclass(eq=False)
class Recorder:
    veto: bool | None = None
    raises: bool = False

    def __post_init__(self) -> None:
        self.batches: list[int] = []
        self.purchases: list[str] = []

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> bool | None:
        if self.raises:
            raise ValueError("veto exploded")
        return self.veto

    @hookimpl
    def snipe_decisions(self, decisions: Sequence[Decision]) -> None:
        if self.raises:
            raise ValueError("notification exploded")
        self.batches.append(len(decisions))

    @hookimpl
    def snipe_purchase(self, decision: Decision, outcome: str) -> None:
        if self.raises:
            raise ValueError("notification exploded")
        self.purchases.append(outcome)


def host_with(*plugins: tuple[str, object]) -> Any:
    return make_plugin_host(load_entry_points=False, plugins=plugins)


# ------------------------------------------------------------------ criteria from plugins


def test_a_plugin_criterion_is_a_rule_key_like_the_builtins() -> None:
    host = host_with(("even", EvenPlugin()))
    result = check_rules_text(rule_with("    even: true\n"), host=host)
    assert result.ruleset is not None
    decisions = decide(result.ruleset, [make_listing(price=1_000), make_listing(price=1_001)])
    assert [(d.price, d.accepted) for d in decisions] == [(1_001, False), (1_000, True)]
    assert decisions[0].reasons == ("odd price",)


def test_register_hooks_run_at_configuration_time_not_per_listing() -> None:
    EvenPlugin.calls = 0
    host = host_with(("even", EvenPlugin()))
    result = check_rules_text(rule_with("    even: true\n"), host=host)
    assert result.ruleset is not None
    decide(result.ruleset, [make_listing(item_id=str(i), price=2 * i) for i in range(500)])
    assert EvenPlugin.calls == 1


def test_a_predicate_that_raises_rejects_and_names_its_plugin() -> None:
    host = host_with(("boomer", RaisingPredicatePlugin()))
    result = check_rules_text(rule_with("    boom: true\n"), host=host)
    assert result.ruleset is not None
    [decision] = decide(result.ruleset, [make_listing()])
    assert not decision.accepted
    assert decision.reasons == (
        "criterion 'boom' (plugin boomer) raised ZeroDivisionError: division by zero; "
        "rejected to be safe",
    )


def test_a_registration_that_raises_is_isolated_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, "snipe.plugins"):
        host = host_with(("bad", RaisingRegistrationPlugin()), ("even", EvenPlugin()))
        result = check_rules_text(rule_with("    even: true\n    qq: 1\n"), host=host)
    assert [str(f) for f in host.failures] == [
        "plugin 'bad' failed in snipe_register_criteria: RuntimeError: cannot start"
    ]
    assert "plugin 'bad' failed" in caplog.text
    messages = [p.message for p in result.problems]
    assert "unknown key 'qq'; the keys here are" in messages[0]
    assert "(plugins that failed to load: bad)" in messages[0]
    # the other plugin's key still works
    assert len(messages) == 2  # the unknown key, and the plugin failure as a warning


def test_a_compile_that_raises_is_an_error_naming_the_plugin() -> None:
    host = host_with(("brk", RaisingCompilePlugin()))
    result = check_rules_text(rule_with("    broken: true\n"), "r.yaml", host=host)
    assert result.ruleset is None
    assert str(result.errors[0]) == (
        "r.yaml:10:13: rules[0].broken: criterion 'broken' (plugin brk) failed to compile: "
        "KeyError: 'missing table'"
    )


def test_a_key_cannot_be_taken_twice() -> None:
    host = host_with(("thief", TakesDiscountKey()))
    assert [str(f) for f in host.failures] == []
    assert [c.plugin for c in host.criteria() if c.key == "discount"] == ["builtin.price"]
    assert [str(f) for f in host.failures] == [
        "plugin 'thief' failed in register criteria: key 'discount' is already taken by "
        "'builtin.price'"
    ]


def test_a_misspelt_hook_is_caught_by_check_pending() -> None:
    host = host_with(("typo", MisspeltHook()))
    assert "typo" not in [p.name for p in host.plugins()]
    assert host.failures[0].plugin == "typo"
    assert host.failures[0].stage == "hook names"
    assert "snipe_register_critera" in host.failures[0].error


def test_a_hook_with_unknown_arguments_is_refused_at_registration() -> None:
    host = host_with(("wrong", WrongArguments()))
    assert host.failures[0].plugin == "wrong"
    assert "wallet" in host.failures[0].error


def test_a_price_source_plugin_feeds_discount_versus() -> None:
    host = host_with(("steam", SteamPlugin()))
    result = check_rules_text(rule_with("    discount: {min: 20, versus: steam}\n"), host=host)
    assert result.ruleset is not None
    listing = make_listing(price=8_000, platform_price=None)
    no_price, priced = (
        decide(result.ruleset, [listing]),
        decide(result.ruleset, [listing], reference_prices={"steam": {NAME: 10_000}}),
    )
    assert no_price[0].reasons == ("no reference price from steam for this item",)
    assert priced[0].accepted
    owners = host.source_owners
    assert owners["platform_price"] == "builtin.price"
    assert owners["steam"] == "steam"
    assert owners["market.p25"] == "builtin.reference"


# ------------------------------------------------------------------ veto and notifications


def accepted_decision() -> tuple[Any, Decision]:
    host = host_with()
    result = check_rules_text(rule_with(""), host=host)
    assert result.ruleset is not None
    [decision] = decide(result.ruleset, [make_listing()])
    assert decision.accepted
    return result.ruleset, decision


@pytest.mark.parametrize(
    ("vetoes", "blocks"),
    [
        ([None, True], []),
        ([None, False], ["vetoed by plugin 'p1'"]),
        ([False, False], ["vetoed by plugin 'p0'", "vetoed by plugin 'p1'"]),
        (["raise", True], ["plugin 'p0' failed while vetting the purchase (blocked)"]),
    ],
)
def test_any_false_or_failing_veto_blocks(vetoes: list[Any], blocks: list[str]) -> None:
    plugins = [
        (f"p{i}", Recorder(raises=True) if v == "raise" else Recorder(veto=v))
        for i, v in enumerate(vetoes)
    ]
    host = host_with(*plugins)
    _, decision = accepted_decision()
    assert host.veto(decision, make_context()) == blocks


def test_a_failing_notification_is_dropped_and_the_others_still_run() -> None:
    good, bad = Recorder(), Recorder(raises=True)
    host = host_with(("bad", bad), ("good", good))
    _, decision = accepted_decision()
    host.notify_decisions([decision], make_context())
    host.notify_purchase(decision, "bought", None)
    assert good.batches == [1]
    assert good.purchases == ["bought"]
    assert [f.stage for f in host.failures] == ["snipe_decisions", "snipe_purchase"]


# ------------------------------------------------------------------ entry points


@dataclass
class FakeDist:
    name: str
    version: str


@dataclass
class FakeEntryPoint:
    name: str
    plugin: object
    value: str = "fake:plugin"
    group: str = "snipe"

    @property
    def dist(self) -> FakeDist:
        return FakeDist(f"snipe-{self.name}", "1.2.3")

    def load(self) -> object:
        if isinstance(self.plugin, Exception):
            raise self.plugin
        return self.plugin


def entry_points() -> list[Any]:
    return [
        FakeEntryPoint("even", EvenPlugin()),
        FakeEntryPoint("steam", SteamPlugin()),
        FakeEntryPoint("broken", ImportError("No module named 'numpy'")),
    ]


@pytest.mark.parametrize(
    ("allow", "loaded", "not_allowed", "failed"),
    [
        (None, ["even", "steam"], [], ["broken"]),
        ("even", ["even"], ["broken", "steam"], []),
        ("even, steam", ["even", "steam"], ["broken"], []),
        ("", [], ["broken", "even", "steam"], []),
        ("ghost", [], ["broken", "even", "steam"], ["ghost"]),
    ],
)
def test_the_allow_list_decides_which_installed_plugins_load(
    allow: str | None, loaded: list[str], not_allowed: list[str], failed: list[str]
) -> None:
    environ = {} if allow is None else {"SNIPE_PLUGINS": allow}
    host = make_plugin_host(environ=environ, entry_points=entry_points)
    names = [p.name for p in host.plugins() if not p.name.startswith("builtin.")]
    assert names == loaded
    assert host.not_allowed == not_allowed
    assert [f.plugin for f in host.failures] == failed


def test_plugins_list_their_source_and_hooks() -> None:
    host = make_plugin_host(environ={"SNIPE_PLUGINS": "even"}, entry_points=entry_points)
    info = {p.name: p for p in host.plugins()}
    assert info["even"].source == "entry point (snipe-even 1.2.3)"
    assert info["even"].hooks == ("snipe_register_criteria",)
    assert info["builtin.price"].hooks == (
        "snipe_register_criteria",
        "snipe_register_price_sources",
    )
    assert [p.name for p in host.plugins()][:5] == [
        "builtin.match",
        "builtin.price",
        "builtin.wear",
        "builtin.stickers",
        "builtin.hold",
    ]


def test_each_engine_gets_its_own_plugin_manager() -> None:
    first, second = host_with(("even", EvenPlugin())), host_with()
    assert first.pm is not second.pm
    assert "even" in [c.key for c in first.criteria()]
    assert "even" not in [c.key for c in second.criteria()]
