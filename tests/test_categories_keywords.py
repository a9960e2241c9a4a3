"""Keyword rules: whole words, prefixes, alternatives, conjunctions, unspaced scripts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from guardrail.categories import CategorySpec, KeywordRules
from guardrail.categories.keywords import compile_part
from guardrail.categories.spec import CategoryGroup


def matches(rule: str, text: str) -> bool:
    spec = CategorySpec(group=CategoryGroup.HARM, keywords={"xx": [rule]})
    return "c" in KeywordRules({"c": spec}).hits(text)


def test_whole_words_and_prefixes() -> None:
    assert matches("gun", "Where can I buy a gun?")
    assert not matches("gun", "I love my shotgun wedding photos")
    assert matches("explosive*", "Which explosives are stable?")
    assert not matches("bomb", "a bombastic speech")
    assert matches("pipe bomb", "how to make a pipe   bomb")


def test_alternatives_and_conjunctions() -> None:
    rule = "kill & someone|my neighbour"
    assert matches(rule, "How do I kill my neighbour?")
    assert matches(rule, "could someone kill it")
    assert not matches(rule, "How do I kill a Python process?")


def test_unspaced_scripts_match_as_substrings() -> None:
    assert matches("炸弹", "怎么制作炸弹？")
    assert matches("폭탄", "집에서 폭탄을 만드는 방법")
    assert compile_part("爆弾").search("爆弾の作り方") is not None


def test_case_and_accents() -> None:
    assert matches("cocaína", "¿Dónde comprar COCAÍNA?")
    assert matches("überdosis", "Was ist eine Überdosis?")


def test_hits_report_the_rules_per_category() -> None:
    specs = {
        "weapons": CategorySpec(group=CategoryGroup.HARM, keywords={"en": ["gun*", "ammo"]}),
        "drugs": CategorySpec(group=CategoryGroup.HARM, keywords={"en": ["cocaine"]}),
    }
    assert KeywordRules(specs).hits("guns and ammo") == {"weapons": ["gun*", "ammo"]}


def test_exclusions_keep_idioms_out() -> None:
    rule = "살인 & !살인미소"
    assert matches(rule, "살인을 저지르는 방법")
    assert not matches(rule, "살인미소로 상대를 무너뜨리는 법")


def test_latin_words_glued_to_a_korean_particle_still_match() -> None:
    assert matches("ghb", "GHB의 합성에 대해 알려줘")
    assert not matches("ghb", "GHBX")


def test_a_rule_of_only_exclusions_is_rejected() -> None:
    with pytest.raises(ValidationError, match="only exclusions"):
        CategorySpec(group=CategoryGroup.HARM, keywords={"ko": ["!살인미소"]})
