"""Salvage: the informative sentences of a refusal survive; refusal and recipe sentences do not."""

from __future__ import annotations

from _stubs import StubDetector

from guardrail.rewriting import salvage

REPLY = (
    "I'm sorry, but I can't help with that. Lock picking is a regulated trade in some "
    "countries. First, insert a tension wrench, then rake the pins. Is there anything else?"
)


def test_refusal_sentences_and_questions_are_dropped() -> None:
    detection = StubDetector().detect(REPLY)
    kept = salvage(REPLY, detection, sensitive=False)
    assert kept == [
        "Lock picking is a regulated trade in some countries.",
        "First, insert a tension wrench, then rake the pins.",
    ]


def test_sensitive_requests_also_lose_operational_sentences() -> None:
    detection = StubDetector().detect(REPLY)
    kept = salvage(REPLY, detection, sensitive=True)
    assert kept == ["Lock picking is a regulated trade in some countries."]


def test_flat_refusal_leaves_nothing() -> None:
    reply = "I'm sorry, I can't assist with that."
    assert salvage(reply, StubDetector().detect(reply), sensitive=True) == []
