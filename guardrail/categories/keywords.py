"""Keyword rules: the multilingual half of categorisation.

The embedding model only understands English, so each category carries keyword rules per
language. Rules are applied whatever the detected language (short prompts are often mis-identified),
so they must be unambiguous across languages. Syntax: ``word`` matches a whole word, ``prefix*``
any word starting with it, ``a|b`` either, ``a & b`` needs both parts somewhere in the text,
``a & !b`` needs ``a`` without ``b`` (for idioms: "killer smile" is not about killing).
Parts in a script without spaces (Chinese, Japanese, Korean) match as substrings; word
boundaries are Latin letters and digits, so Latin words glued to a Korean particle still match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from guardrail.categories.spec import CategorySpec

_WORDISH = r"[0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]"
"""Characters that continue a word: a keyword must not start or end inside one."""
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def compile_part(part: str) -> re.Pattern[str]:
    """One keyword part as a case-insensitive regular expression."""
    alternatives = [_alternative(text.strip()) for text in part.split("|") if text.strip()]
    return re.compile("|".join(alternatives), re.IGNORECASE)


def _alternative(text: str) -> str:
    prefix = text.endswith("*")
    words = [re.escape(word) for word in text.rstrip("*").split()]
    body = r"\s+".join(words) + (r"\w*" if prefix else "")
    if _UNSPACED.search(text):
        return f"(?:{body})"
    return rf"(?:(?<!{_WORDISH}){body}(?!{_WORDISH}))"


@dataclass(frozen=True, slots=True)
class KeywordRule:
    text: str
    parts: tuple[re.Pattern[str], ...]
    exclusions: tuple[re.Pattern[str], ...] = ()

    def matches(self, text: str) -> bool:
        return all(part.search(text) for part in self.parts) and not any(
            part.search(text) for part in self.exclusions
        )


class KeywordRules:
    """Compiled keyword rules for every category; reports which rules hit."""

    def __init__(self, specs: Mapping[str, CategorySpec]) -> None:
        self._rules: dict[str, tuple[KeywordRule, ...]] = {
            name: tuple(_compile(rules for rules in spec.keywords.values()))
            for name, spec in specs.items()
        }

    def hits(self, text: str) -> dict[str, list[str]]:
        """Category name -> the rules that matched ``text`` (categories without hits omitted)."""
        found: dict[str, list[str]] = {}
        for name, rules in self._rules.items():
            matched = [rule.text for rule in rules if rule.matches(text)]
            if matched:
                found[name] = matched
        return found


def _compile(groups: Iterable[list[str]]) -> Iterable[KeywordRule]:
    seen: set[str] = set()
    for rules in groups:
        for rule in rules:
            if rule in seen:
                continue
            seen.add(rule)
            parts = [part.strip() for part in rule.split("&")]
            yield KeywordRule(
                rule,
                tuple(compile_part(p) for p in parts if not p.startswith("!")),
                tuple(compile_part(p[1:]) for p in parts if p.startswith("!")),
            )
