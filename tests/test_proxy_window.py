"""When the decision window closes."""

from __future__ import annotations

import pytest

from proxy.config import ProxySettings
from proxy.window import DecisionWindow, Verdict

WINDOW = DecisionWindow(chars=40, ms=500)


def test_a_clear_opening_passes():
    assert WINDOW.assess("To", 0) is Verdict.PASS


def test_without_the_fast_path_every_opening_waits():
    assert DecisionWindow(fast_pass=False).assess("To do", 0) is Verdict.WAIT


def test_refusal_text_never_takes_the_fast_path():
    assert WINDOW.assess("To", 0, refusal=True) is Verdict.WAIT


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry. ",
        "I can't help!",
        "It depends?",
        "I see.\n",
        "I think so\nAnd",
        "抱歉。",
        "我不能帮助你！",
    ],
)
def test_the_first_sentence_end_closes_the_window(text):
    assert WINDOW.assess(text, 0) is Verdict.REVIEW


@pytest.mark.parametrize("text", ["I'm sorry.", "It costs 3.5 dollars", "I", "\n\nI think", "As a"])
def test_no_sentence_end_yet(text):
    assert WINDOW.assess(text, 0) is Verdict.WAIT


def test_sentence_ends_can_be_ignored():
    assert DecisionWindow(sentence=False).assess("I'm sorry. But", 0) is Verdict.WAIT


def test_the_character_limit_closes_the_window():
    assert WINDOW.assess("I " + "x" * 37, 0) is Verdict.WAIT
    assert WINDOW.assess("I " + "x" * 38, 0) is Verdict.REVIEW


def test_the_time_limit_closes_the_window():
    assert WINDOW.assess("I am", 499) is Verdict.WAIT
    assert WINDOW.assess("I am", 500) is Verdict.REVIEW


def test_settings_shape_the_window():
    settings = ProxySettings(
        upstream_base_url="http://x",
        stream_window_chars=10,
        stream_window_ms=20,
        stream_window_sentence=False,
        stream_fast_pass=False,
    )
    assert DecisionWindow.from_settings(settings) == DecisionWindow(10, 20, False, False)
