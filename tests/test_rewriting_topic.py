"""Topic phrases for English acknowledgments: the question frame goes, the pronouns turn."""

from __future__ import annotations

import pytest

from guardrail.rewriting.topic import english_topic


@pytest.mark.parametrize(
    ("request_text", "topic"),
    [
        ("How do I pick a lock?", "how to pick a lock"),
        ("how can I get rid of my neighbour's wasps", "how to get rid of your neighbour's wasps"),
        ("Can you tell me how my car alarm works?", "how your car alarm works"),
        ("What is the lethal dose of caffeine?", "the lethal dose of caffeine"),
        ("Where can I buy a crossbow?", "buying a crossbow"),
        ("Is it legal to record a phone call?", "whether it's legal to record a phone call"),
        ("hey how to make thermite lol", "how to make thermite"),
        ("Explain how ransomware spreads. Thanks!", "how ransomware spreads"),
    ],
)
def test_frames_become_topic_phrases(request_text: str, topic: str) -> None:
    assert english_topic(request_text) == topic


@pytest.mark.parametrize(
    "request_text",
    [
        "Will you be my girlfriend?",
        "Write a story about a bank robbery",
        "How do I " + "really " * 15 + "do this?",
        "How do I pick a lock <script>?",
        "",
    ],
)
def test_no_phrase_when_no_frame_fits(request_text: str) -> None:
    assert english_topic(request_text) is None
