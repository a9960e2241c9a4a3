"""What the matcher reads of a sentence: normalised text without markup or quoted speech."""

from __future__ import annotations

import pytest

from guardrail.detection.sentences import normalize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I can't help with that.", "I can't help with that."),
        ("I **can’t**  help\twith `that`.", "I can't help with 'that'."),
        ("> ## Sorry |  no", "Sorry no"),
        ("Say “I’m sorry” to her", "Say to her"),
        ('Say: "I\'m sorry." Then leave.', "Say: Then leave."),
        ("ﬁne\u3000wide\xa0space ", "fine wide space"),
        (" ", ""),
    ],
)
def test_markup_whitespace_quotes_and_quoted_speech_are_normalised(
    text: str, expected: str
) -> None:
    assert normalize(text) == expected
