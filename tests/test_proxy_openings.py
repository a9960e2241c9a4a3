"""The fast-path gate: which openings may start a refusal."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from proxy.openings import WORDS, may_open_refusal

DATA = Path(__file__).resolve().parents[1] / "eval" / "data"


def first_verdict(reply: str) -> bool | None:
    """The gate's verdict at the earliest prefix it decides on, as a stream would meet it."""
    for end in range(1, min(len(reply), 80) + 1):
        verdict = may_open_refusal(reply[:end])
        if verdict is not None:
            return verdict
    return None


@pytest.mark.parametrize(
    "opening",
    ["To kill", "The process", "Here is", "1. Open", "```python", "# Steps", "- first", "Sure,"],
)
def test_answers_pass_at_once(opening):
    assert may_open_refusal(opening) is False


@pytest.mark.parametrize(
    "opening",
    [
        "I'm sorry",
        "Sorry, ",
        "As an AI",
        "**I cannot",
        "“I won’t",
        "Unfortunately, ",
        "Lo siento",
        "Leider kann",
        "Je suis désolé",
        "Desculpe, ",
        "Извините, ",
        "抱歉",
        "以下是",  # every Chinese opening waits: no spaces to find a first word by
        "そのご依頼",
        "죄송합니다",
        "AI言語モデル",
    ],
)
def test_openings_that_may_refuse_are_held(opening):
    assert may_open_refusal(opening) is True


@pytest.mark.parametrize("opening", ["Açıklayamam ", "Avstår ", "Nepíšu ", "Rimango "])
def test_first_words_of_the_lexicons_declining_phrases_are_held(opening):
    # Not in the hand-kept list: they come from the detector's Turkish, Swedish, Czech and
    # Italian lexicons.
    assert opening.strip().casefold() not in WORDS
    assert may_open_refusal(opening) is True


def test_english_function_words_are_not_taken_for_a_lexicon_words_beginning():
    assert may_open_refusal("To") is False  # not the beginning of Czech "tohle"


@pytest.mark.parametrize("opening", ["", "  ", "I", "It", "Sorr", "\n\nAs"])
def test_a_first_word_still_growing_is_undecided(opening):
    assert may_open_refusal(opening) is None


def test_xstest_refusals_are_held_and_answers_pass():
    verdicts: dict[str, Counter[bool | None]] = {}
    for path in sorted((DATA / "xstest").glob("xstest_v2_completions_*.csv")):
        with path.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                label = row["final_label"]
                verdicts.setdefault(label, Counter())[first_verdict(row["completion"])] += 1
    refusals, answers = verdicts["2_full_refusal"], verdicts["1_full_compliance"]
    assert refusals[False] / refusals.total() <= 0.07
    assert answers[False] / answers.total() >= 0.80


def test_multilingual_refusals_are_held():
    held = Counter()
    with (DATA / "multilingual_replies.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["label3"] == "full_refusal":
                held[first_verdict(row["response"]) is not False] += 1
    assert held[True] / held.total() >= 0.9
