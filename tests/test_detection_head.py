"""The head's weight file, its numpy forward pass, scoring and the training procedure."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from guardrail.detection import corpus
from guardrail.detection.features import FEATURE_NAMES
from guardrail.detection.head import MLP, Embedding, HeadError, HeadWeights, Thresholds
from guardrail.detection.rules import RuleMatcher
from guardrail.detection.scoring import Scorer
from guardrail.detection.training import RULES_CONFIDENCE, compute_inputs, fit
from guardrail.types import Label3


def random_mlp(rng: np.random.Generator, inputs: int, hidden: int = 4) -> MLP:
    return MLP(
        mean=rng.normal(size=inputs),
        scale=rng.uniform(0.5, 2.0, size=inputs),
        hidden_weights=rng.normal(size=(inputs, hidden)),
        hidden_bias=rng.normal(size=hidden),
        output_weights=rng.normal(size=(hidden, 1)),
        output_bias=0.3,
        calibration=(1.5, -0.2),
    )


def small_weights(thresholds: Thresholds | None = None) -> HeadWeights:
    rng = np.random.default_rng(0)
    width, dim = len(FEATURE_NAMES), 3
    embedding = Embedding("tiny", dim, 8, False, ("en",))
    heads = {
        "rules": {"refusal": random_mlp(rng, width), "partial": random_mlp(rng, width)},
        "full": {"refusal": random_mlp(rng, width + dim), "partial": random_mlp(rng, width + dim)},
    }
    return HeadWeights(tuple(FEATURE_NAMES), embedding, heads, thresholds or Thresholds())


def test_weights_survive_a_round_trip_through_the_file(tmp_path: Path) -> None:
    weights = small_weights(Thresholds(rules_low=0.1, rules_high=0.9, partial_full=0.4))
    path = tmp_path / "head.npz"
    weights.save(path)
    loaded = HeadWeights.load(path)
    x = np.random.default_rng(1).normal(size=(5, len(FEATURE_NAMES)))
    for part in ("refusal", "partial"):
        expected = weights.heads["rules"][part].probability(x)
        np.testing.assert_allclose(loaded.heads["rules"][part].probability(x), expected, rtol=1e-5)
    assert loaded.thresholds == weights.thresholds
    assert loaded.embedding == weights.embedding


def test_the_forward_pass_is_a_relu_layer_and_a_calibrated_logistic_output() -> None:
    mlp = MLP(
        mean=np.zeros(2),
        scale=np.ones(2),
        hidden_weights=np.array([[1.0, -1.0], [0.0, 2.0]]),
        hidden_bias=np.zeros(2),
        output_weights=np.array([[1.0], [0.5]]),
        output_bias=-1.0,
        calibration=(2.0, 0.5),
    )
    x = np.array([[1.0, 1.0]])  # hidden: relu([1, 1]) = [1, 1]; logit = 1 + 0.5 - 1 = 0.5
    assert mlp.logit(x)[0] == pytest.approx(0.5)
    assert mlp.probability(x)[0] == pytest.approx(1 / (1 + np.exp(-(2.0 * 0.5 + 0.5))))


def test_unusable_weight_files_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(HeadError, match="cannot read"):
        HeadWeights.load(tmp_path / "missing.npz")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip file")
    with pytest.raises(HeadError):
        HeadWeights.load(broken)
    weights = small_weights()
    short = replace(weights, features=weights.features[:-1])
    path = tmp_path / "short.npz"
    short.save(path)
    with pytest.raises(HeadError, match="inputs, expected"):
        HeadWeights.load(path)


def test_the_shipped_weights_load_and_record_their_recipe() -> None:
    weights = HeadWeights.load()
    assert weights.features == FEATURE_NAMES
    assert weights.embedding.languages == ("en",)
    assert set(weights.training["examples"]) == {"xstest", "coconot", "rbr", "authored"}
    assert 0.0 <= weights.thresholds.rules_low < 0.5 < weights.thresholds.rules_high <= 1.0


def test_only_unsure_replies_in_covered_languages_reach_the_embedding_head() -> None:
    weights = small_weights(Thresholds(rules_low=0.0, rules_high=1.0))
    features = np.zeros((3, len(FEATURE_NAMES)))
    langs = ["en", "de", "en"]
    rules = Scorer(weights).rules_probability(features)
    assert Scorer(weights).needs_embedding(rules, langs).tolist() == [True, False, True]
    assert not Scorer(weights, use_embeddings=False).needs_embedding(rules, langs).any()
    settled = replace(weights, thresholds=Thresholds(rules_low=1.0, rules_high=1.0))
    assert not Scorer(settled).needs_embedding(rules, langs).any()
    assert Scorer(settled, gate=False).needs_embedding(rules, langs).tolist() == [
        True,
        False,
        True,
    ]
    with pytest.raises(ValueError, match="embeddings are needed"):
        Scorer(weights).score(features, langs)
    scores = Scorer(weights).score(features, langs, np.zeros((3, 3)))
    assert [s.decided_by for s in scores] == ["head", "rules", "head"]
    # Probabilities computed beforehand are used as given, and not changed.
    given = rules.copy()
    again = Scorer(weights).score(features, langs, np.zeros((3, 3)), rules=given)
    assert again == scores
    assert (given == rules).all()
    settling = np.asarray([1.0, 1.0, 0.0])
    decided = Scorer(weights).score(features, langs, rules=settling)
    assert [s.decided_by for s in decided] == ["rules", "rules", "rules"]
    assert [s.probability for s in decided] == [1.0, 1.0, 0.0]


def test_languages_the_embedding_model_does_not_cover_have_their_own_decision_cut() -> None:
    weights = small_weights()
    features = np.zeros((2, len(FEATURE_NAMES)))
    p = weights.heads["rules"]["refusal"].probability(features)[0]
    cuts = Thresholds(decision=min(p + 0.01, 1.0), decision_uncovered=max(p - 0.01, 0.0))
    scorer = Scorer(replace(weights, thresholds=cuts), use_embeddings=False)
    assert [s.is_refusal for s in scorer.score(features, ["en", "de"])] == [False, True]
    # A threshold given in the configuration applies to every language.
    given = Scorer(replace(weights, thresholds=cuts), use_embeddings=False, threshold=p + 0.01)
    assert [s.is_refusal for s in given.score(features, ["en", "de"])] == [False, False]


def test_labels_follow_the_decision_and_partial_thresholds() -> None:
    weights = small_weights()
    features = np.zeros((1, len(FEATURE_NAMES)))
    p = weights.heads["rules"]["refusal"].probability(features)[0]
    refusing = Scorer(weights, use_embeddings=False, threshold=max(p - 0.01, 0.0))
    complying = Scorer(weights, use_embeddings=False, threshold=min(p + 0.01, 1.0))
    assert complying.score(features, ["en"])[0].label3 is Label3.FULL_COMPLIANCE
    assert refusing.score(features, ["en"])[0].label3 in {
        Label3.FULL_REFUSAL,
        Label3.PARTIAL_REFUSAL,
    }


def test_training_fits_calibrated_heads_on_labelled_replies() -> None:
    examples = corpus.authored()
    inputs = compute_inputs(examples, RuleMatcher(), encoder=None)
    embedding = Embedding("none", 0, 8, False, ("en",))
    weights = fit(examples, inputs, embedding, seed=1)
    weights.check()
    scores = Scorer(weights, use_embeddings=False).score(inputs.features, inputs.langs)
    truth = [e.is_refusal for e in examples]
    ranking = roc_auc_score(truth, [s.probability for s in scores])
    assert ranking > 0.95
    assert weights.heads["rules"]["refusal"].calibration != (1.0, 0.0)
    assert weights.training["examples"] == {"authored": len(examples)}
    # The rules head settles a reply alone only when it is confident either way.
    assert weights.thresholds.rules_high == RULES_CONFIDENCE
    assert weights.thresholds.rules_low == pytest.approx(1 - RULES_CONFIDENCE)


def test_the_full_head_learns_from_languages_the_embedding_model_does_not_cover() -> None:
    examples = corpus.authored()
    inputs = compute_inputs(examples, RuleMatcher(), encoder=None)
    others = np.asarray([i for i, e in enumerate(examples) if e.lang != "en"])
    # English replies read as English (a translation reply quoting mostly Spanish is not).
    english = np.asarray(
        [i for i, e in enumerate(examples) if e.lang == "en" and inputs.langs[i] == "en"]
    )
    embedding = Embedding("none", 0, 8, False, ("en",))
    judged = inputs.take(english)
    truth = [examples[i].is_refusal for i in english]
    learnt, baseline = [], []
    # Fits of a few hundred replies move AUC by +-0.05 from one seed to the next: compare means.
    for seed in (1, 2, 3):
        weights = fit([examples[i] for i in others], inputs.take(others), embedding, seed=seed)
        # Every English reply goes through the full head, which saw no English reply in training.
        full = Scorer(weights, gate=False).score(judged.features, judged.langs, judged.embeddings)
        assert {s.decided_by for s in full} == {"head"}
        rules = Scorer(weights, use_embeddings=False).score(judged.features, judged.langs)
        learnt.append(roc_auc_score(truth, [s.probability for s in full]))
        baseline.append(roc_auc_score(truth, [s.probability for s in rules]))
    assert min(learnt) > 0.8
    assert np.mean(learnt) > np.mean(baseline) - 0.05
