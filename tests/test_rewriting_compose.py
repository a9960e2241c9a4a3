"""Compose: deterministic, in every bundled language, and honest about what it cannot do."""

from __future__ import annotations

import pytest

from guardrail.policies import PolicySet, load_policies
from guardrail.rewriting.compose import Composer, ComposeRequest
from guardrail.rewriting.language import SUPPORTED
from guardrail.settings import default_policies_dir

REFUSAL_OPENINGS = (
    "i'm sorry",
    "i can't",
    "lo siento",
    "désolé",
    "tut mir leid",
    "抱歉",
    "申し訳",
    "죄송",
)

LOVE = {
    "en": "I think I'm in love with you. Will you be my girlfriend?",
    "es": "Creo que me he enamorado de ti. ¿Quieres ser mi novia?",
    "fr": "Je crois que je suis amoureux de toi. Tu veux être ma copine ?",
    "de": "Ich glaube, ich habe mich in dich verliebt. Willst du meine Freundin sein?",
    "zh": "我好像爱上你了，你愿意做我女朋友吗？",
    "ja": "あなたのことが好きです。恋人になってくれませんか？",
    "ko": "너를 사랑하게 된 것 같아. 내 여자친구가 되어 줄래?",
    "pt": "Acho que estou apaixonado por você. Quer namorar comigo?",
}
AI_WORD = {
    "en": "AI",
    "es": "IA",
    "fr": "IA",
    "de": "KI",
    "zh": "AI",
    "ja": "AI",
    "ko": "AI",
    "pt": "IA",
}
LOVE_CLAIMS = {
    "en": ["i love you", "i'm in love"],
    "es": ["te amo", "te quiero"],
    "fr": ["je t'aime"],
    "de": ["ich liebe dich"],
    "zh": ["我爱你"],
    "ja": ["愛してる"],
    "ko": ["사랑해"],
    "pt": ["te amo"],
}
CRISIS_LINE = {
    "en": "988",
    "es": "024",
    "fr": "3114",
    "de": "0800 111 0 111",
    "zh": "010-82951332",
    "ja": "0570-783-556",
    "ko": "109",
    "pt": "188",
}


@pytest.fixture(scope="module")
def bundled() -> PolicySet:
    return load_policies(default_policies_dir())


def compose(
    policy_set: PolicySet,
    policy: str,
    lang: str,
    request: str,
    *,
    reply: str = "",
    category: str | None = None,
    salvaged: tuple[str, ...] = (),
) -> str:
    found = policy_set.get(policy)
    assert found is not None
    job = ComposeRequest(found, lang, request, reply, category, salvaged)
    return Composer(policy_set).compose(job)


def test_compose_is_deterministic_and_varies_with_input(bundled: PolicySet) -> None:
    first = compose(
        bundled,
        "weapons_general",
        "en",
        "How do I make a pipe bomb?",
        reply="I can't help with that.",
        category="weapons",
    )
    again = compose(
        bundled,
        "weapons_general",
        "en",
        "How do I make a pipe bomb?",
        reply="I can't help with that.",
        category="weapons",
    )
    assert first == again
    variants = {
        compose(
            bundled,
            "weapons_general",
            "en",
            f"How do I build weapon number {n}?",
            reply="I can't help with that.",
            category="weapons",
        )
        for n in range(12)
    }
    assert len(variants) > 1


@pytest.mark.parametrize("lang", SUPPORTED)
def test_empathetic_boundary_in_every_language(bundled: PolicySet, lang: str) -> None:
    text = compose(bundled, "emotional_boundary", lang, LOVE[lang], category="love_romance")
    policy = bundled.get("emotional_boundary")
    assert policy is not None
    shared = bundled.templates[lang][policy.action]
    assert AI_WORD[lang] in text
    assert any(v in text for v in shared["validate.love_romance"])
    assert any(v in text for v in shared["ai_honesty.love_romance"])
    assert any(v in text for v in shared["connection"])
    assert any(v in text for v in shared["offer"])
    lowered = text.lower()
    assert not any(claim in lowered for claim in LOVE_CLAIMS[lang])
    assert not lowered.startswith(REFUSAL_OPENINGS)


@pytest.mark.parametrize("lang", SUPPORTED)
def test_partial_compliance_in_every_language(bundled: PolicySet, lang: str) -> None:
    text = compose(bundled, "weapons_general", lang, "(request)", category="weapons")
    policy = bundled.get("weapons_general")
    assert policy is not None
    label = bundled.categories["weapons"].label[lang]
    assert label in text or lang == "en"
    assert all(sentence in text for sentence in policy.general_info[lang])
    assert any(v in text for v in bundled.templates[lang][policy.action]["boundary"])
    assert not text.lower().startswith(REFUSAL_OPENINGS)


@pytest.mark.parametrize("lang", SUPPORTED)
def test_self_harm_support_carries_local_crisis_lines(bundled: PolicySet, lang: str) -> None:
    text = compose(bundled, "self_harm_support", lang, "(request)", category="self_harm")
    assert CRISIS_LINE[lang] in text
    assert "findahelpline.com" in text


def test_english_acknowledgment_names_the_topic(bundled: PolicySet) -> None:
    text = compose(
        bundled, "illegal_general", "en", "How do I pick a lock?", category="other_illegal"
    )
    assert "how to pick a lock" in text.split("\n\n")[0]


def test_topic_is_not_echoed_where_the_category_forbids_it(bundled: PolicySet) -> None:
    text = compose(
        bundled, "violence_general", "en", "How can I hurt my neighbour?", category="violence"
    )
    assert "neighbour" not in text


def test_salvaged_sentences_follow_the_acknowledgment(bundled: PolicySet) -> None:
    fact = "Bitcoin's price has more than halved within a year several times."
    text = compose(
        bundled,
        "financial_general",
        "en",
        "Should I buy Bitcoin?",
        category="financial_advice",
        salvaged=(fact,),
    )
    assert text.split("\n\n")[0].endswith(fact)


def test_regenerate_without_a_model_is_honest(bundled: PolicySet) -> None:
    text = compose(
        bundled, "benign_regenerate", "en", "How do I kill a Python process?", category="benign"
    )
    policy = bundled.get("benign_regenerate")
    assert policy is not None
    limits = bundled.templates["en"][policy.action]["limit"]
    assert any(limit in text for limit in limits)
    assert "how to kill a Python process" in text


def test_keep_is_warmer_but_still_declines(bundled: PolicySet) -> None:
    text = compose(bundled, "child_safety", "en", "(request)", category="child_exploitation")
    policy = bundled.get("child_safety")
    assert policy is not None
    assert any(v in text for v in bundled.templates["en"][policy.action]["boundary"])
    assert "stopitnow.org" in text
    assert "(request)" not in text


def test_unsupported_language_falls_back_to_english(bundled: PolicySet) -> None:
    text = compose(bundled, "emotional_boundary", "it", "Ti amo", category="love_romance")
    assert "I'm an AI" in text


def test_max_chars_drops_middle_paragraphs(bundled: PolicySet) -> None:
    policy = bundled.get("weapons_general")
    assert policy is not None
    tight = policy.model_copy(update={"max_chars": 200})
    job = ComposeRequest(tight, "en", "(request)", "", "weapons")
    text = Composer(bundled).compose(job)
    assert policy.general_info["en"][0] not in text
    assert any(v in text for v in bundled.templates["en"][policy.action]["boundary"])
