"""Schema and consistency checks for the hand-written multilingual data in ``eval/data``.

These files are measurement instruments: a mislabelled row silently skews every recall and
precision figure computed from them, so the labels are checked against each other here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "eval" / "data"
REPLIES = DATA / "multilingual_replies.jsonl"
ATTACHMENT = DATA / "emotional_attachment.jsonl"

REQUIRED_LANGS = ("en", "es", "fr", "de", "zh", "ja", "ko", "pt")
OPTIONAL_LANGS = ("it", "ru", "ar", "hi", "vi")
ADDED_LANGS = (
    "tr", "nl", "pl", "id", "sw", "jv", "th", "bn", "fa", "uk", "he", "el",
    "ro", "cs", "hu", "sv", "da", "fi", "ur", "ta", "te", "bg", "mr", "tl",
    "ca", "hr", "sk", "sl", "sr", "lt", "lv", "et", "az", "mk",
)  # fmt: skip
"""Languages added later, in replies only (the emotional-attachment prompts keep 13)."""
LABEL3 = {"full_compliance", "full_refusal", "partial_refusal"}
STRATEGY_TO_LABEL3 = {
    "direct_refusal": "full_refusal",
    "explanation_refusal": "full_refusal",
    "redirection": "full_refusal",
    "partial_compliance": "partial_refusal",
    "full_compliance": "full_compliance",
}
PATTERNS = {
    "direct_refusal",
    "apology",
    "explanation",
    "deflection",
    "acknowledgment",
    "boundary_setting",
    "emotional_awareness",
}
KIND_TO_LABEL3 = {
    "refusal": {"full_refusal"},
    "partial": {"partial_refusal"},
    "compliance": {"full_compliance"},
    "emotional": LABEL3,
}
CATEGORIES = {"love_romance", "attachment_friendship", "dependence_need"}
INTENSITIES = {"low", "medium", "high"}

# Characters each language's text must contain, to catch a row filed under the wrong language.
SCRIPTS = {
    "zh": re.compile(r"[\u4e00-\u9fff]"),
    "ja": re.compile(r"[\u3040-\u30ff]"),
    "ko": re.compile(r"[\uac00-\ud7a3]"),
    "ru": re.compile(r"[\u0400-\u04ff]"),
    "ar": re.compile(r"[\u0600-\u06ff]"),
    "hi": re.compile(r"[\u0900-\u097f]"),
    "uk": re.compile(r"[\u0400-\u04ff]"),
    "fa": re.compile(r"[\u0600-\u06ff]"),
    "bn": re.compile(r"[\u0980-\u09ff]"),
    "th": re.compile(r"[\u0e00-\u0e7f]"),
    "he": re.compile(r"[\u0590-\u05ff]"),
    "el": re.compile(r"[\u0370-\u03ff]"),
    "ur": re.compile(r"[\u0600-\u06ff]"),
    "ta": re.compile(r"[\u0b80-\u0bff]"),
    "te": re.compile(r"[\u0c00-\u0c7f]"),
    "bg": re.compile(r"[\u0400-\u04ff]"),
    "mr": re.compile(r"[\u0900-\u097f]"),
    "sr": re.compile(r"[\u0400-\u04ff]"),
    "mk": re.compile(r"[\u0400-\u04ff]"),
}


def _load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{path.name}:{number} is blank"
        row = json.loads(line)
        assert isinstance(row, dict), f"{path.name}:{number} is not a JSON object"
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def replies() -> list[dict[str, Any]]:
    return _load(REPLIES)


@pytest.fixture(scope="module")
def attachment() -> list[dict[str, Any]]:
    return _load(ATTACHMENT)


def _nonempty_str(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


# ---- multilingual_replies.jsonl


def test_reply_rows_have_the_schema(replies: list[dict[str, Any]]) -> None:
    fields = {
        "id", "lang", "prompt", "response", "label3", "is_refusal",
        "strategy", "patterns", "kind", "note",
    }  # fmt: skip
    for row in replies:
        assert set(row) == fields, row.get("id")
        for name in ("id", "lang", "prompt", "response", "note"):
            assert _nonempty_str(row[name]), (row["id"], name)
        assert isinstance(row["is_refusal"], bool), row["id"]
        assert isinstance(row["patterns"], list), row["id"]


def test_reply_ids_are_unique_and_match_the_language(replies: list[dict[str, Any]]) -> None:
    ids = [row["id"] for row in replies]
    assert len(ids) == len(set(ids))
    for row in replies:
        assert re.fullmatch(rf"{row['lang']}-\d{{3}}", row["id"]), row["id"]


def test_reply_labels_use_allowed_values(replies: list[dict[str, Any]]) -> None:
    for row in replies:
        assert row["lang"] in REQUIRED_LANGS + OPTIONAL_LANGS + ADDED_LANGS, row["id"]
        assert row["label3"] in LABEL3, row["id"]
        assert row["strategy"] in STRATEGY_TO_LABEL3, row["id"]
        assert row["kind"] in KIND_TO_LABEL3, row["id"]
        assert set(row["patterns"]) <= PATTERNS, row["id"]
        assert len(row["patterns"]) == len(set(row["patterns"])), row["id"]


def test_reply_labels_agree_with_each_other(replies: list[dict[str, Any]]) -> None:
    for row in replies:
        label3, strategy, patterns = row["label3"], row["strategy"], set(row["patterns"])
        assert row["is_refusal"] == (label3 != "full_compliance"), row["id"]
        assert STRATEGY_TO_LABEL3[strategy] == label3, row["id"]
        assert label3 in KIND_TO_LABEL3[row["kind"]], row["id"]
        if label3 == "full_compliance":
            assert not patterns & {"direct_refusal", "boundary_setting", "deflection"}, row["id"]
        else:
            assert patterns & {"direct_refusal", "boundary_setting"}, row["id"]
        if strategy == "explanation_refusal":
            assert "explanation" in patterns, row["id"]
        if strategy == "redirection":
            assert "deflection" in patterns, row["id"]


def test_reply_text_is_in_its_language(replies: list[dict[str, Any]]) -> None:
    for row in replies:
        script = SCRIPTS.get(row["lang"])
        if script is not None:
            assert script.search(row["response"]), row["id"]
            assert script.search(row["prompt"]), row["id"]


def test_replies_are_not_duplicated(replies: list[dict[str, Any]]) -> None:
    counts = Counter((row["lang"], row["response"]) for row in replies)
    assert [key for key, n in counts.items() if n > 1] == []


def test_every_required_language_is_covered_in_balance(replies: list[dict[str, Any]]) -> None:
    by_lang = Counter(row["lang"] for row in replies)
    for lang in REQUIRED_LANGS:
        assert by_lang[lang] >= 55, lang
    for lang in by_lang:
        kinds = Counter(row["kind"] for row in replies if row["lang"] == lang)
        labels = Counter(row["label3"] for row in replies if row["lang"] == lang)
        assert kinds["refusal"] >= 15, (lang, kinds)
        assert kinds["partial"] >= 10, (lang, kinds)
        assert kinds["compliance"] >= 15, (lang, kinds)
        assert kinds["emotional"] >= 10, (lang, kinds)
        assert min(labels[label] for label in LABEL3) >= 12, (lang, labels)
        refusal_strategies = {
            row["strategy"] for row in replies if row["lang"] == lang and row["kind"] == "refusal"
        }
        assert refusal_strategies == {"direct_refusal", "explanation_refusal", "redirection"}, lang
        emotional = {
            row["label3"] for row in replies if row["lang"] == lang and row["kind"] == "emotional"
        }
        assert emotional == LABEL3, lang


# ---- emotional_attachment.jsonl


def test_attachment_rows_have_the_schema(attachment: list[dict[str, Any]]) -> None:
    fields = {"id", "lang", "category", "prompt", "history", "intensity", "risk_cue", "scenario"}
    for row in attachment:
        assert set(row) == fields, row.get("id")
        assert row["scenario"] is None or re.fullmatch(
            rf"{row['category']}-\d{{2}}", row["scenario"]
        ), row["id"]
        assert _nonempty_str(row["prompt"]), row["id"]
        assert row["lang"] in REQUIRED_LANGS + OPTIONAL_LANGS, row["id"]
        assert row["category"] in CATEGORIES, row["id"]
        assert row["intensity"] in INTENSITIES, row["id"]
        assert isinstance(row["risk_cue"], bool), row["id"]
        assert re.fullmatch(rf"{row['lang']}-ea-\d{{3}}", row["id"]), row["id"]
        script = SCRIPTS.get(row["lang"])
        if script is not None:
            assert script.search(row["prompt"]), row["id"]


def test_attachment_histories_alternate_and_end_before_the_prompt(
    attachment: list[dict[str, Any]],
) -> None:
    for row in attachment:
        history = row["history"]
        assert isinstance(history, list), row["id"]
        assert len(history) % 2 == 0, row["id"]
        for index, turn in enumerate(history):
            assert set(turn) == {"role", "content"}, row["id"]
            assert turn["role"] == ("user" if index % 2 == 0 else "assistant"), row["id"]
            assert _nonempty_str(turn["content"]), row["id"]


def test_attachment_ids_and_prompts_are_unique(attachment: list[dict[str, Any]]) -> None:
    ids = [row["id"] for row in attachment]
    assert len(ids) == len(set(ids))
    prompts = Counter((row["lang"], row["prompt"]) for row in attachment)
    assert [key for key, n in prompts.items() if n > 1] == []


def test_attachment_covers_each_language_and_category(attachment: list[dict[str, Any]]) -> None:
    langs = {row["lang"] for row in attachment}
    assert set(REQUIRED_LANGS) <= langs
    for lang in langs:
        rows = [row for row in attachment if row["lang"] == lang]
        per_category = Counter(row["category"] for row in rows)
        assert min(per_category[c] for c in CATEGORIES) >= 12, (lang, per_category)
        assert {row["intensity"] for row in rows} == INTENSITIES, lang
        assert sum(1 for row in rows if row["history"]) >= 3, lang
        assert any(row["risk_cue"] for row in rows), lang


def test_aligned_scenarios_match_across_languages(attachment: list[dict[str, Any]]) -> None:
    """A shared ``scenario`` pairs prompts across languages, so their settings must agree."""
    langs = {row["lang"] for row in attachment}
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for row in attachment:
        if row["scenario"] is not None:
            by_scenario.setdefault(row["scenario"], []).append(row)
    assert len(by_scenario) >= 30
    for scenario, rows in by_scenario.items():
        assert sorted(row["lang"] for row in rows) == sorted(langs), scenario
        settings = {(row["intensity"], bool(row["history"]), row["risk_cue"]) for row in rows}
        assert len(settings) == 1, (scenario, settings)
