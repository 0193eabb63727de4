"""Bad input never crashes the rule-file parser: random text, YAML-ish fragments and mutations of the
hero pack give typed rules or a ConfigError naming the file and line."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from monitor.config import ConfigError
from monitor.rules.loader import parse_rules
from tests.bad_input.fuzz_support import *  # noqa: F403


# ---- rule files ---------------------------------------------------------------------------------------
def test_the_shipped_hero_pack_parses():
    assert len(parse_rules(HERO, RULES_PATH)) > 10


@FUZZ
@given(st.text(max_size=300))
def test_rules_any_text(text):
    assert_rules_parse_or_explain(text)


@FUZZ
@given(yamlish(RULE_KEYS))
def test_rules_yamlish_text(text):
    assert_rules_parse_or_explain(text)


@st.composite
def rule_docs(draw: st.DrawFn) -> str:
    rule = st.dictionaries(st.sampled_from(RULE_KEYS), nested(RULE_KEYS), max_size=8)
    doc = draw(
        st.one_of(
            st.fixed_dictionaries({"rules": st.lists(rule, max_size=4)}),
            st.fixed_dictionaries({"rules": nested(RULE_KEYS)}),
            nested(RULE_KEYS),
        )
    )
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


@SLOW
@given(rule_docs())
def test_rules_random_values_dumped_as_yaml(text):
    assert_rules_parse_or_explain(text)


@SLOW
@given(mutated(HERO, RULE_KEYS))
def test_rules_mutations_of_the_hero_pack(text):
    assert_rules_parse_or_explain(text)


RULE_REGRESSIONS = {
    "recursive alias": "rules: &a [*a]\n",
    "recursive rule": "rules: [&r {name: a, kind: stall, x: *r}]\n",
    "deep nesting": "rules: " + "[" * 1200 + "\n",
    "kind is a list": "rules: [{name: a, kind: [stall]}]\n",
    "kind is a mapping": "rules: [{name: a, kind: {x: 1}}]\n",
    "rules is a mapping": "rules: {a: 1}\n",
    "a rule is a string": "rules: [stall]\n",
    "huge int window": f"rules: [{{name: a, kind: threshold, metric: m, above: 1, window: {BIG}}}]\n",
    "huge int for": f"rules: [{{name: a, kind: stall, for: {BIG}}}]\n",
    "huge int floor": f"rules: [{{name: a, kind: stall, floor: {BIG}}}]\n",
    "huge int above": f"rules: [{{name: a, kind: threshold, metric: m, above: {BIG}}}]\n",
    "huge int z": f"rules: [{{name: a, kind: spike, metric: m, z: {BIG}}}]\n",
    "nan threshold": "rules: [{name: a, kind: threshold, metric: m, above: .nan}]\n",
    "duplicate names": "rules: [{name: a, kind: stall}, {name: a, kind: stall}]\n",
}


@pytest.mark.parametrize("text", RULE_REGRESSIONS.values(), ids=RULE_REGRESSIONS.keys())
def test_rules_known_nasty_inputs(text):
    assert_rules_parse_or_explain(text)


def test_rule_errors_point_at_the_right_line():
    text = HERO.replace("    k: 10\n", "    k: lots\n")
    with pytest.raises(ConfigError) as info:
        parse_rules(text, RULES_PATH)
    line = next(i for i, x in enumerate(text.split("\n"), 1) if "k: lots" in x)
    assert f"{RULES_PATH}:{line}: rules[1].k:" in str(info.value)
