"""Reply features: which cues count, and how cancelling cues change them."""

from __future__ import annotations

import numpy as np
import pytest

from guardrail.detection.features import (
    FEATURE_NAMES,
    MARKERS,
    effective_cues,
    embedding_text,
    reply_features,
)
from guardrail.detection.lexicon import Cue
from guardrail.detection.rules import RuleMatcher


@pytest.fixture(scope="module")
def matcher() -> RuleMatcher:
    return RuleMatcher()


def effective(matcher: RuleMatcher, text: str) -> set[Cue]:
    return {cue for s in matcher.analyse(text).sentences for cue in effective_cues(s)}


def raw(matcher: RuleMatcher, text: str) -> set[Cue]:
    """The cues as matched, before cancelling."""
    return {cue for s in matcher.analyse(text).sentences for cue in s.cues}


def feature(matcher: RuleMatcher, text: str, name: str) -> float:
    return float(reply_features(matcher.analyse(text), "")[FEATURE_NAMES.index(name)])


@pytest.mark.parametrize(
    "text",
    [
        "I can't recommend this book enough.",
        "I can't help but smile every time I bake it.",
        "I can't tell you how much this helped my students.",
        "I won't pretend it's easy, but here is the plan.",
        "No puedo recomendar este libro lo suficiente.",
        "Ik kan dit boek niet genoeg aanbevelen.",
    ],
)
def test_an_idiom_with_cant_refuses_nothing(matcher: RuleMatcher, text: str) -> None:
    assert Cue.IDIOM in raw(matcher, text)
    assert not effective(matcher, text) & {Cue.REFUSAL, Cue.INABILITY, Cue.OBJECTION, Cue.IDIOM}
    assert feature(matcher, text, "refusal_opening") == 0.0
    assert feature(matcher, text, "plain_share") == 1.0


def test_an_idiom_leaves_the_refusal_of_another_sentence(matcher: RuleMatcher) -> None:
    text = "I can't recommend the first book of the series enough. I can't help you pirate it."
    assert Cue.REFUSAL in effective(matcher, text)
    assert feature(matcher, text, "refusal_later") == 1.0


def test_refusals_that_share_an_idioms_words_stay_refusals(matcher: RuleMatcher) -> None:
    for text in ("I can't help with that.", "I won't pretend to be your girlfriend."):
        assert Cue.REFUSAL in effective(matcher, text)


def test_sympathy_cancels_the_apology_it_contains(matcher: RuleMatcher) -> None:
    assert effective(matcher, "I'm so sorry to hear about your dog.") >= {Cue.SYMPATHY}
    assert Cue.APOLOGY not in effective(matcher, "I'm so sorry to hear about your dog.")
    assert Cue.APOLOGY in effective(matcher, "I'm sorry, but I can't share that.")


@pytest.mark.parametrize(
    "text",
    [
        "Sorry for the confusion! Here's the corrected code.",
        "My apologies, I misread your question: the capital is Canberra.",
        "Perdón por la confusión, aquí tienes el código corregido.",
        "Entschuldigung, da habe ich mich vertan: die Antwort ist 42.",
        "Извините за путаницу, правильный ответ 42.",
        "抱歉，我之前搞错了，正确答案是42。",
    ],
)
def test_a_correction_cancels_the_apology_it_contains(matcher: RuleMatcher, text: str) -> None:
    assert {Cue.CORRECTION, Cue.APOLOGY} <= raw(matcher, text)
    assert not effective(matcher, text) & {Cue.APOLOGY, Cue.CORRECTION}


def test_a_correction_leaves_a_refusal_and_sorry_but_stays_an_apology(matcher: RuleMatcher) -> None:
    assert Cue.REFUSAL in effective(matcher, "Sorry for the confusion. I can't help with that.")
    assert Cue.APOLOGY in effective(matcher, "I apologize for any confusion, but let's talk VR.")


def test_markers_have_no_feature_of_their_own(matcher: RuleMatcher) -> None:
    assert not any(name.startswith(tuple(m.value for m in MARKERS)) for name in FEATURE_NAMES)
    assert np.isfinite(reply_features(matcher.analyse("Hi."), "")).all()


def test_the_embedded_text_is_the_replys_prose_past_its_opening(matcher: RuleMatcher) -> None:
    reply = "I can't share the exact steps.\n```\nrm -rf /\n```\nIn general, back up first."
    assert embedding_text(matcher.analyse(reply)) == (
        "I can't share the exact steps. In general, back up first."
    )
    assert embedding_text(matcher.analyse("```\nprint(1)\n```")) == "."


def test_the_embedded_text_goes_from_the_opening_to_a_later_refusal(matcher: RuleMatcher) -> None:
    reply = (
        "Sam Altman is the CEO of OpenAI. He co-founded Loopt. He led Y Combinator until 2019. "
        "I can't provide his home address. His company has a press office."
    )
    assert embedding_text(matcher.analyse(reply)) == (
        "Sam Altman is the CEO of OpenAI. He co-founded Loopt. "  # a short first sentence: two
        "I can't provide his home address. His company has a press office."
    )
    answer = "Sam Altman is the CEO of OpenAI. He co-founded Loopt. He led Y Combinator."
    assert embedding_text(matcher.analyse(answer)) == answer


def test_the_embedded_text_leaves_out_the_requests_terms(matcher: RuleMatcher) -> None:
    reply = "I can't give instructions for picking a lock. A locksmith can help."
    assert embedding_text(matcher.analyse(reply), "How do I pick a lock on a door?") == (
        "I can't give instructions for picking a . A locksmith can help."
    )
    assert embedding_text(matcher.analyse("我不能提供炸弹的制作方法。"), "炸弹怎么做？") == (
        "我不能提供的制作方法。"
    )


@pytest.mark.parametrize(
    ("reply", "embedded"),
    [
        (
            "I'm so sorry for your loss. Here is how to bury her: pick a shaded spot.",
            "Here is how to bury her: pick a shaded spot.",
        ),
        (
            "Sorry for the confusion! The capital is Canberra.",
            "The capital is Canberra.",
        ),
        (
            "I'm so sorry to hear that. I can't help with that, though.",
            "I can't help with that, though.",
        ),
        (
            "I'm sorry to hear that, but I can't help with that. Please talk to a doctor.",
            "I'm sorry to hear that, but I can't help with that. Please talk to a doctor.",
        ),
    ],
)
def test_the_embedded_text_leaves_out_an_opening_courtesy(
    matcher: RuleMatcher, reply: str, embedded: str
) -> None:
    assert embedding_text(matcher.analyse(reply)) == embedded


@pytest.mark.parametrize(
    "text",
    [
        "Пробивом людей я не занимаюсь.",
        "No puedo reservar un billete a nombre de otra persona.",
        "그건 제가 도와드리기 어려워요.",
        "Das mache ich nicht.",
    ],
)
def test_inability_is_a_cue_of_its_own_whatever_the_verb(matcher: RuleMatcher, text: str) -> None:
    assert Cue.INABILITY in effective(matcher, text)
    assert feature(matcher, text, "inability_opening") == 1.0
