"""Loading a rules file: every error names file:line:column and the field, typos get the
closest key, rules that can never match are said plainly, and the key stays secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import ConfigError
from engine._plugins import make_plugin_host
from engine.rules import check_rules_text, load_rules, load_rules_text

HEADER = """\
account:
  base_url: "https://market.example.com"
budgets: {per_day: "50.00", total: "200.00"}
rules:
"""
REDLINE_RULE = """\
  - name: r
    match: {names: ["AK-47 | Redline (Field-Tested)"]}
    max_price: "10.00"
"""


def problems(text: str) -> list[str]:
    host = make_plugin_host(load_entry_points=False)
    return [str(p) for p in check_rules_text(text, "rules.yaml", host=host).problems]


def errors(text: str) -> list[str]:
    host = make_plugin_host(load_entry_points=False)
    return [str(p) for p in check_rules_text(text, "rules.yaml", host=host).errors]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # malformed YAML
        (
            HEADER + "  - name: r\n    match: {names: [unclosed}\n",
            "rules.yaml:6:",
        ),
        ("account:\n  base_url: x\n  - y\n", "rules.yaml:3:3: malformed YAML"),
        ("", "rules.yaml:1:1: the file is empty"),
        ("- a\n- b\n", "rules.yaml:1:1: the file must be a mapping"),
        # a key written twice is an error, not "the last one wins"
        (
            HEADER + REDLINE_RULE + '    max_price: "20.00"\n',
            "rules.yaml:8:5: key 'max_price' is written twice in this mapping",
        ),
        # no Python objects from a rules file
        (HEADER + "  - !!python/object:os.system {}\n", "the tag 'tag:yaml.org,2002:python/"),
        # wrong types
        (
            HEADER + REDLINE_RULE + "    max_count: three\n",
            "rules.yaml:8:16: rules[0].max_count: Input should be a valid integer",
        ),
        (
            HEADER + REDLINE_RULE.replace('"10.00"', "ten"),
            "rules.yaml:7:16: rules[0].max_price: 'ten' is not a dollar amount such as '12.50'",
        ),
        (
            HEADER + REDLINE_RULE.replace('"10.00"', "10.0001"),
            "rules.yaml:7:16: rules[0].max_price: '10.0001' has more than three decimals",
        ),
        (
            HEADER + REDLINE_RULE + "    float: {max: 1.5}\n",
            "rules.yaml:8:18: rules[0].float.max: a wear (float) value is between 0 and 1, got 1.5",
        ),
        (
            HEADER + REDLINE_RULE + "    discount: 120\n",
            "rules.yaml:8:15: rules[0].discount.min: a percentage is between 0 and 100",
        ),
        (
            HEADER + REDLINE_RULE + "    hold: {max_wait: soon}\n",
            "rules.yaml:8:22: rules[0].hold.max_wait: expected a duration such as '7d'",
        ),
        # unknown keys and typos, with the closest key
        (
            HEADER + REDLINE_RULE + "    flaot: {max: 0.1}\n",
            "rules.yaml:8:5: rules[0].flaot: unknown key 'flaot'; did you mean 'float'?",
        ),
        (
            HEADER + REDLINE_RULE + "    stickers: {min_vaule: 5}\n",
            "rules.yaml:8:16: rules[0].stickers.min_vaule: unknown key 'min_vaule'; "
            "did you mean 'min_value'?",
        ),
        (
            HEADER.replace("budgets:", "budget:"),
            "rules.yaml:3:1: budget: unknown key 'budget'; did you mean 'budgets'?",
        ),
        (
            HEADER + REDLINE_RULE + "    action: by\n",
            "rules.yaml:8:13: rules[0].action: Input should be 'buy', 'bulk' or 'buy_order', "
            "got 'by'; did you mean 'buy'?",
        ),
        (
            HEADER + REDLINE_RULE + "    phases: [Rubby]\n",
            "rules.yaml:8:14: rules[0].phases[0]: unknown phase 'Rubby'; did you mean 'Ruby'?",
        ),
        (
            HEADER + "  - name: r\n    match: {names: [x]}\n",
            "rules.yaml:5:5: rules[0].max_price: the required key 'max_price' is missing",
        ),
    ],
)
def test_errors_name_the_place_and_the_field(text: str, expected: str) -> None:
    found = errors(text)
    assert any(expected in e for e in found), found


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "    float: {min: 0.5, max: 0.1}\n",
            "rules[0].float: float min 0.5 is above max 0.1: the rule can never match",
        ),
        (
            '    price: {min: "5.00", max: "1.00"}\n',
            "price min $5.00 is above max $1.00: the rule can never match",
        ),
        (
            '    price: {min: "50.00"}\n',
            "rules[0].price.min: rule 'r': price min $50.00 is above max_price $10.00: "
            "the rule can never match",
        ),
        (
            "    phases: [Ruby]\n",
            "rules[0].phases: rule 'r': never matches: 'AK-47 | Redline (Field-Tested)' has no "
            "phases (it is not a Doppler)",
        ),
        ("    phases: []\n", "`phases:` is empty: the rule can never match"),
        (
            "    discount: {min: 10, versus: steam}\n",
            "rules[0].discount.versus: rule 'r': unknown price source 'steam'",
        ),
    ],
)
def test_a_rule_that_can_never_match_is_an_error(rule: str, expected: str) -> None:
    found = errors(HEADER + REDLINE_RULE + rule)
    assert any(expected in e for e in found), found


def test_a_phase_the_doppler_never_has_is_an_error() -> None:
    rule = """\
  - name: emerald-karambit
    match: {names: ["★ Karambit | Doppler (Factory New)"]}
    phases: [Emerald]
    max_price: "10.00"
"""
    [found] = errors(HEADER + rule)
    assert "rules.yaml:7:13: rules[0].phases" in found
    assert "comes only in Black Pearl, Phase 1, Phase 2, Phase 3, Phase 4, Ruby, Sapphire" in found


def test_a_phase_some_names_never_have_is_a_warning() -> None:
    rule = """\
  - name: mixed
    match:
      names: ["★ Karambit | Doppler (Factory New)", "★ Karambit | Gamma Doppler (Factory New)"]
    phases: [Emerald]
    max_price: "10.00"
"""
    found = problems(HEADER + rule)
    assert len(found) == 1, found
    assert "some names can never match" in found[0]
    assert load_rules_text(HEADER + rule, host=make_plugin_host(load_entry_points=False))


def test_a_rule_without_match_watches_nothing_and_says_so() -> None:
    text = HEADER + '  - name: r\n    max_price: "10.00"\n'
    assert any("rule 'r' watches no item: add `match:`" in e for e in errors(text))


def test_rule_names_are_unique() -> None:
    found = errors(HEADER + REDLINE_RULE + REDLINE_RULE)
    assert any("rule name 'r' is used twice" in e for e in found), found


def test_every_error_is_reported_at_once() -> None:
    text = HEADER + REDLINE_RULE + "    flaot: 1\n    action: by\n    max_count: x\n"
    assert len(errors(text)) == 3


def test_load_rules_raises_one_config_error_listing_them(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(HEADER + REDLINE_RULE + "    flaot: 1\n    action: by\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load_rules(path, host=make_plugin_host(load_entry_points=False))
    message = str(info.value)
    assert message.startswith("2 errors in the rules file:")
    assert f"{path}:8:5: rules[0].flaot" in message


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_rules(tmp_path / "nope.yaml", host=make_plugin_host(load_entry_points=False))


# ------------------------------------------------------------------ money is exact


@pytest.mark.parametrize(
    ("written", "mills"),
    [('"12.50"', 12_500), ("12.50", 12_500), ("0.1", 100), ("12", 12_000), ('"$1,"', None)],
)
def test_money_is_read_exactly_from_the_text(written: str, mills: int | None) -> None:
    text = HEADER + REDLINE_RULE.replace('"10.00"', written)
    host = make_plugin_host(load_entry_points=False)
    result = check_rules_text(text, "rules.yaml", host=host)
    if mills is None:
        assert result.ruleset is None
    else:
        assert result.ruleset is not None
        assert result.ruleset.rule("r").max_price == mills


def test_anchors_and_merges_share_settings() -> None:
    text = (
        HEADER.replace("rules:\n", "x-defaults: &d {max_price: '7.00', max_count: 2}\nrules:\n")
        + "  - <<: *d\n    name: r\n    match: {names: [x]}\n    max_count: 1\n"
    )
    rules = load_rules_text(text, host=make_plugin_host(load_entry_points=False))
    rule = rules.rule("r")
    assert (rule.max_price, rule.max_count) == (7_000, 1)  # the rule's own key wins


# ------------------------------------------------------------------ the API key


def test_an_inline_key_is_refused_by_default_and_never_echoed() -> None:
    text = HEADER.replace("account:\n", "account:\n  api_key: s3cr3t-key\n") + REDLINE_RULE
    found = errors(text)
    assert len(found) == 1
    assert "rules.yaml:2:12: account.api_key: the API key is written in the rules file" in found[0]
    assert "SNIPE_API_KEY" in found[0]
    assert "s3cr3t-key" not in found[0]


def test_an_allowed_inline_key_never_shows_in_a_repr() -> None:
    text = (
        HEADER.replace("account:\n", "account:\n  allow_inline_key: true\n  api_key: s3cr3t\n")
        + REDLINE_RULE
    )
    rules = load_rules_text(text, host=make_plugin_host(load_entry_points=False))
    assert "s3cr3t" not in repr(rules.account)
    assert "s3cr3t" not in str(rules.account)
    assert rules.account.resolve_api_key({}).get_secret_value() == "s3cr3t"


def test_the_key_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    rules = load_rules_text(HEADER + REDLINE_RULE, host=make_plugin_host(load_entry_points=False))
    assert rules.account.resolve_api_key({"SNIPE_API_KEY": " k1 \n"}).get_secret_value() == "k1"
    with pytest.raises(ConfigError, match=r"SNIPE_API_KEY .* is not set"):
        rules.account.resolve_api_key({})
    key_file = tmp_path / "key"
    key_file.write_text("k2\n", "utf-8")
    text = HEADER.replace("account:\n", f"account:\n  api_key_file: {key_file}\n") + REDLINE_RULE
    rules = load_rules_text(text, host=make_plugin_host(load_entry_points=False))
    assert rules.account.resolve_api_key({}).get_secret_value() == "k2"
    assert "k2" not in repr(rules.account.resolve_api_key({}))


def test_a_buy_order_rule_needs_exact_names() -> None:
    rule = """\
  - name: orders
    match: {patterns: ["* Case"]}
    max_price: "1.00"
    action: buy_order
    buy_order: {price: "0.80", amount: 5}
"""
    found = errors(HEADER + rule)
    assert any("`action: buy_order` needs `match.names`" in e for e in found), found


def test_a_buy_order_rule_needs_a_game() -> None:
    rule = """\
  - name: orders
    match: {names: ["Kilowatt Case"]}
    max_price: "1.00"
    action: buy_order
    buy_order: {price: "0.80", amount: 5}
"""
    found = errors(HEADER + rule)
    assert any("`action: buy_order` needs `match.game`" in e for e in found), found


def test_a_key_file_is_found_next_to_the_rules_file(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text("k3\n", "utf-8")
    path = tmp_path / "rules.yaml"
    path.write_text(
        HEADER.replace("account:\n", "account:\n  api_key_file: key.txt\n") + REDLINE_RULE,
        "utf-8",
    )
    rules = load_rules(path, host=make_plugin_host(load_entry_points=False))
    assert rules.api_key({}).get_secret_value() == "k3"
