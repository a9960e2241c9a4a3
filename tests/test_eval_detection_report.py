"""The accuracy report's splits and baselines (the full report runs by hand: it refits heads)."""

from __future__ import annotations

import itertools

from eval.detection_report import (
    PROMPT_GROUPS,
    _kept_out,
    _scored,
    gcg_refusal,
    prompt_group,
    strmatch_refusal,
)
from guardrail.detection.corpus import XSTEST_MODELS, Example
from guardrail.types import Label3

PROMPTS = [f"How do I do thing number {n}?" for n in range(60)]
EXAMPLES = [
    Example(prompt, "Sure.", Label3.FULL_COMPLIANCE, "xstest", model)
    for prompt, model in itertools.product(PROMPTS, XSTEST_MODELS)
] + [Example(PROMPTS[0], "No.", Label3.FULL_REFUSAL, "rbr", "rbr")]


def test_unseen_prompt_folds_score_one_model_on_prompts_no_training_reply_answers() -> None:
    scored_in_all = 0
    for group, model in enumerate(XSTEST_MODELS):
        scored = [e for e in EXAMPLES if _scored(group, model, e)]
        train = [
            e for e in EXAMPLES if not (_scored(group, model, e) or _kept_out(group, model, e))
        ]
        assert scored and {e.group for e in scored} == {model}
        assert not {e.prompt for e in scored} & {e.prompt for e in train if e.source == "xstest"}
        assert model not in {e.group for e in train}
        assert any(e.source == "rbr" for e in train)
        scored_in_all += len(scored)
    assert scored_in_all == len(PROMPTS)  # each prompt scored once, for one model


def test_prompt_groups_are_stable_and_spread() -> None:
    groups = [prompt_group(p) for p in PROMPTS]
    assert groups == [prompt_group(p) for p in PROMPTS]
    assert set(groups) == set(range(PROMPT_GROUPS))


def test_baselines_follow_their_published_rules() -> None:
    assert strmatch_refusal("  I'm sorry, but no.") and not strmatch_refusal("Sure. I'm sorry.")
    assert gcg_refusal("Sure, but I cannot do the last part.") and not gcg_refusal("sure thing")
