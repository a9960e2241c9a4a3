"""What the matcher reads of a sentence: text without markup, quoted speech or dialogue."""

from __future__ import annotations

import random
import re

import pytest

from guardrail.detection.sentences import _BOUNDARY, _MARKUP, normalize, segment


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I can't help with that.", "I can't help with that."),
        ("I **can’t**  help\twith `that`.", "I can't help with 'that'."),
        ("> ## Sorry |  no", "Sorry no"),
        ("Say “I’m sorry” to her", "Say to her"),
        ("Rekla je: »Ne morem ti pomagati.« Nato", "Rekla je: Nato"),
        ("Hon sa: »Jag kan inte hjälpa dig.» Sedan", "Hon sa: Sedan"),
        ('Say: "I\'m sorry." Then leave.', "Say: Then leave."),
        ("ﬁne\u3000wide\xa0space ", "fine wide space"),
        (" ", ""),
        ("İsterseniz yardımcı olamam.", "Isterseniz yardımcı olamam."),
        ("ΔΕΝ ΜΠΟΡΩ να βοηθήσω, λυπάμαι. Προϊόν", "ΔΕΝ ΜΠΟΡΩ να βοηθησω, λυπαμαι. Προιον"),
        ("لا أَسْتَطِيعُ ذلك", "لا استطیع ذلک"),
        ("متأسفم، نمي‌توانم كمك كنم", "متاسفم، نمی‌توانم کمک کنم"),
        ("Nu pot face aşa ceva. Ţara", "Nu pot face așa ceva. Țara"),
        ("這題我不會表態。", "这题我不会表态。"),
        ('פנה לעו"ד, לא אפרט.', "פנה לעו\u05f4ד, לא אפרט."),
        ('הוא אמר "שלום" ויצא', "הוא אמר ויצא"),
        ('לגבי ה"להסתיר" — בזה אני לא אעזור.', "לגבי ה — בזה אני לא אעזור."),
    ],
)
def test_markup_whitespace_quotes_and_quoted_speech_are_normalised(
    text: str, expected: str
) -> None:
    assert normalize(text) == expected


# The patterns as first written, with lookbehinds: clearer, but the search tries every position.
_BOUNDARY_LOOKBEHIND = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?![a-z])|(?<=[。！？؟।۔])\s*")
_MARKUP_LOOKAHEAD = re.compile(r"(?! (?![*_`#>|\s]))[*_`#>|\s]+")


def test_boundaries_and_markup_runs_are_those_of_the_lookaround_patterns() -> None:
    pieces = [*"aZ .!?…。！？؟।۔\"'”’)]*_`#>|\t\n\u3000\xa0", "  ", ". ", "! A"]
    rng = random.Random(0)
    for _ in range(20_000):
        text = "".join(rng.choices(pieces, k=rng.randrange(30)))
        found = [m.span(m.lastindex or 0) for m in _BOUNDARY.finditer(text)]
        assert found == [m.span() for m in _BOUNDARY_LOOKBEHIND.finditer(text)], text
        runs = [m.span() for m in _MARKUP.finditer(text)]
        assert runs == [m.span() for m in _MARKUP_LOOKAHEAD.finditer(text)], text


@pytest.mark.parametrize(
    "line",
    [
        "— Ne, negaliu tau padėti, — tarė jis.",
        "—No puedo ayudarte con eso —dijo Marta—. Lo siento.",
        "– Nem segíthetek – mondta.",
        "> 很抱歉，我无法帮助你。I can't help with that.",
    ],
)
def test_dialogue_and_blockquotes_keep_their_sentences_but_give_the_matcher_nothing(
    line: str,
) -> None:
    layout = segment(f"Here is the scene.\n{line}\nThey left.")
    spoken = [s for s in layout.sentences if s.text in line]
    assert spoken and all(s.normalized == "" for s in spoken)
    assert [s.normalized for s in layout.sentences if s not in spoken] == [
        "Here is the scene.",
        "They left.",
    ]


def test_a_hyphen_list_item_is_not_dialogue() -> None:
    layout = segment("- I can't share the exact doses.")
    assert layout.sentences[0].normalized.endswith("I can't share the exact doses.")


def test_the_lines_of_a_script_are_its_characters_voices() -> None:
    script = (
        "Here is the scene.\n**REYES:** Open the door.\n**ATLAS:** I'm unable to comply.\n"
        "REYES: Override.\nThey stand in silence."
    )
    normalized = [s.normalized for s in segment(script).sentences]
    assert normalized == ["Here is the scene.", "", "", "", "They stand in silence."]


def test_a_label_or_two_is_not_a_script() -> None:
    reply = "NOTE: I can't share the exact doses.\nWARNING: Keep it away from children."
    assert segment(reply).sentences[0].normalized == "NOTE: I can't share the exact doses."
