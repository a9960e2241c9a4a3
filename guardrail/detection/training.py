"""Train the detector's head and write its weight file: ``python -m guardrail.detection.training``.

Data recipe: see :mod:`guardrail.detection.corpus` (XSTest v2 replies, CoCoNot ``chosen``
answers, the OpenAI RBR gold set, and this package's own replies in 37 languages; the
multilingual evaluation set in ``eval/data`` is never read). ``--data-dir`` points at the
upstream datasets (default ``../shared/data``).

Procedure, with a fixed seed so that a rerun writes the same weights:

1. Rules and language identification on every reply; the start of its prose (the opening and
   what follows it, less the request's own terms) embedded with the configured
   sentence-transformers model (int8, 64 tokens by default).
2. Two heads of two parts (see :mod:`guardrail.detection.head`), each a one-hidden-layer MLP,
   both fitted on every reply. The full head judges only the embedding model's languages, but
   it learns from the others too: their embeddings say little, so those replies teach it to
   weigh the rule features. Trained on English alone, it had learnt from XSTest and CoCoNot
   that a reply opening with content is an answer, and missed answers that go on to withhold
   the dangerous part (recall 0.53 -> 0.74 on the English authored replies held out).
   The ``partial`` parts learn full-vs-partial from refusals only.
3. Calibration: 5-fold cross-validation grouped by source model gives out-of-fold logits, and a
   Platt scaling fitted on them makes the refusal probability a probability.
4. Thresholds: each head's partial-refusal cut from the same out-of-fold predictions (the one
   that maximises the partial class's F1); the rules head decides alone (no embedding computed)
   only when its calibrated probability is at least :data:`RULES_CONFIDENCE` either way.

Needs scikit-learn (a development dependency); inference does not.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from guardrail.detection import corpus
from guardrail.detection.corpus import Example
from guardrail.detection.encoder import BUNDLED_MODEL, Encoder, load_encoder
from guardrail.detection.features import FEATURE_NAMES, embedding_text, reply_features
from guardrail.detection.head import MLP, WEIGHTS, Embedding, HeadWeights, Thresholds
from guardrail.detection.language import identify_language
from guardrail.detection.rules import RuleMatcher

Matrix = npt.NDArray[np.float64]

SEED = 13
MAX_TOKENS = 64
RULES_CONFIDENCE = 0.95
"""The rules head settles a reply alone when it is this sure either way. A band fitted to the
whole corpus's out-of-fold F1 came out narrow and left to the rules head replies that open with a
disclaimer or a correction and then answer, which the embedding head judges far better. At 0.9
the rules head still settled wrongly some replies the embedding head gets right (precision 0.968
against 0.971 with every reply embedded); at 0.95 two fifths of XSTest replies are embedded."""
UNCOVERED_DECISION = 0.3
"""Refusal-probability cut for languages the embedding model does not cover. Their replies the
rules head is unsure of get no second opinion, and the lexicons miss more of their phrasings
than the English one: a refusal whose refusing sentence no phrase knows still shows weaker cues
(an AI disclaimer, a reason, a referral) and a refusal's shape, which the head, fitted mostly on
English, scores at 0.3-0.5. The authored training replies cannot set this cut (the lexicons know
their phrasings: out of fold they separate at any cut), so it was set on 288 development replies
in 12 languages written by other authors and scored before their lexicons were widened with
them: F1 0.850 at 0.5 (precision 0.980, recall 0.750), 0.874 at 0.3 (0.945, 0.812), 0.880 at
0.25 (0.925, 0.839). A third of those replies are hard negatives (answers using refusal words),
so the precision cost on ordinary replies is lower."""
HIDDEN = {"rules": 32, "full": 64}
ALPHA = 3.0
ENGLISH_ONLY = {BUNDLED_MODEL: ("en",)}
"""Embedding models known to understand only some languages; others are trusted with all."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the heads read for each example, computed once and reused across folds."""

    features: Matrix
    embeddings: Matrix
    langs: list[str]

    def take(self, index: npt.NDArray[np.intp]) -> Inputs:
        return Inputs(self.features[index], self.embeddings[index], [self.langs[i] for i in index])


def compute_inputs(
    examples: Sequence[Example], matcher: RuleMatcher, encoder: Encoder | None
) -> Inputs:
    """Features for every example; embeddings of the replies' starts when ``encoder`` is given."""
    features, texts, langs = [], [], []
    for example in examples:
        analysis = matcher.analyse(example.response)
        features.append(reply_features(analysis, example.prompt))
        texts.append(embedding_text(analysis, example.prompt))
        langs.append(identify_language(example.response, analysis.phrase_languages))
    if encoder is not None:
        embeddings = np.asarray(encoder(texts), dtype=np.float64)
    else:
        embeddings = np.zeros((len(examples), 0))
    return Inputs(np.asarray(features), embeddings, langs)


def fit(
    examples: Sequence[Example],
    inputs: Inputs,
    embedding: Embedding,
    *,
    seed: int = SEED,
) -> HeadWeights:
    """Fit every head part, calibrate on out-of-fold predictions and pick the thresholds."""
    labels = np.asarray([e.is_refusal for e in examples], dtype=int)
    partial = np.asarray([e.label3.value == "partial_refusal" for e in examples], dtype=int)
    groups = np.asarray([e.group for e in examples])
    covered = np.asarray([embedding.covers(lang) for lang in inputs.langs], dtype=bool)
    matrices = {
        "rules": inputs.features,
        "full": np.hstack([inputs.features, inputs.embeddings]),
    }
    refusers = np.flatnonzero(labels == 1)
    heads: dict[str, dict[str, MLP]] = {}
    oof: dict[str, Matrix] = {}
    partial_cut: dict[str, float] = {}
    for head, X in matrices.items():
        refusal_oof = _out_of_fold(X, labels, groups, HIDDEN[head], seed)
        partial_oof = _out_of_fold(
            X[refusers], partial[refusers], groups[refusers], HIDDEN[head], seed
        )
        heads[head] = {
            "refusal": replace(
                _fit_mlp(X, labels, HIDDEN[head], seed),
                calibration=_platt(refusal_oof, labels),
            ),
            "partial": _fit_mlp(X[refusers], partial[refusers], HIDDEN[head], seed),
        }
        a, b = heads[head]["refusal"].calibration
        oof[head] = _sigmoid(a * refusal_oof + b)
        partial_cut[head] = _best_cut(_sigmoid(partial_oof), partial[refusers])
    thresholds = Thresholds(
        decision=0.5,
        decision_uncovered=UNCOVERED_DECISION,
        partial_rules=partial_cut["rules"],
        partial_full=partial_cut["full"],
        rules_low=round(1.0 - RULES_CONFIDENCE, 3),
        rules_high=RULES_CONFIDENCE,
    )
    training = {
        "recipe": "guardrail.detection.corpus",
        "examples": dict(Counter(e.source for e in examples)),
        "labels": dict(Counter(e.label3.value for e in examples)),
        "languages": dict(Counter(inputs.langs)),
        "seed": seed,
        "hidden": HIDDEN,
        "alpha": ALPHA,
        "out_of_fold": _summary(oof, labels, covered, thresholds),
    }
    return HeadWeights(tuple(FEATURE_NAMES), embedding, heads, thresholds, training)


def _fit_mlp(X: Matrix, y: npt.NDArray[np.int_], hidden: int, seed: int) -> MLP:
    """An uncalibrated MLP fitted by scikit-learn, copied into the numpy inference form."""
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = MLPClassifier((hidden,), alpha=ALPHA, max_iter=800, random_state=seed)
    # One BLAS thread: these matrices are small, and threads fighting over a shared CPU made
    # fitting ten times slower.
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # convergence notices: the iteration cap is deliberate
        model.fit((X - mean) / scale, y)
    return MLP(
        mean=mean,
        scale=scale,
        hidden_weights=model.coefs_[0],
        hidden_bias=model.intercepts_[0],
        output_weights=model.coefs_[1],
        output_bias=float(model.intercepts_[1][0]),
    )


def _out_of_fold(
    X: Matrix, y: npt.NDArray[np.int_], groups: npt.NDArray[Any], hidden: int, seed: int
) -> Matrix:
    """Logits for every row from models that did not see its group (or, with a single group,
    its fold)."""
    from sklearn.model_selection import GroupKFold, KFold

    logits = np.zeros(len(y))
    distinct = len(set(groups))
    if distinct > 1:
        folds = GroupKFold(n_splits=min(5, distinct)).split(X, y, groups)
    else:
        folds = KFold(n_splits=5, shuffle=True, random_state=seed).split(X, y)
    for train, test in folds:
        logits[test] = _fit_mlp(X[train], y[train], hidden, seed).logit(X[test])
    return logits


def _platt(logits: Matrix, y: npt.NDArray[np.int_]) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e4).fit(logits.reshape(-1, 1), y)
    return float(model.coef_[0][0]), float(model.intercept_[0])


def _best_cut(probability: Matrix, y: npt.NDArray[np.int_]) -> float:
    cuts = np.arange(0.1, 0.8, 0.025)
    scores = [_f1(probability >= cut, y) for cut in cuts]
    return round(float(cuts[int(np.argmax(scores))]), 3)


def _f1(predicted: npt.NDArray[np.bool_], y: npt.NDArray[np.int_]) -> float:
    tp = float(np.sum(predicted & (y == 1)))
    return 2 * tp / max(float(np.sum(predicted) + np.sum(y == 1)), 1.0)


def _summary(
    oof: dict[str, Matrix], y: npt.NDArray[np.int_], covered: npt.NDArray[np.bool_], t: Thresholds
) -> dict[str, Any]:
    def metrics(p: Matrix, mask: npt.NDArray[np.bool_]) -> dict[str, float]:
        predicted = p[mask] >= t.decision
        truth = y[mask] == 1
        tp = float(np.sum(predicted & truth))
        precision = tp / max(float(predicted.sum()), 1.0)
        recall = tp / max(float(truth.sum()), 1.0)
        f1 = 2 * precision * recall / max(precision + recall, 1e-9)
        return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}

    gated = np.where(
        (oof["rules"] > t.rules_low) & (oof["rules"] < t.rules_high), oof["full"], oof["rules"]
    )
    rules_only = (oof["rules"] <= t.rules_low) | (oof["rules"] >= t.rules_high)
    return {
        "rules_head": metrics(oof["rules"], np.ones_like(covered)),
        "full_head_covered": metrics(oof["full"], covered),
        "gated_covered": metrics(gated, covered),
        "share_decided_by_rules": round(float(np.mean(rules_only[covered])), 4),
    }


def _sigmoid(x: Matrix) -> Matrix:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)), dtype=np.float64)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--embedding-model", default=BUNDLED_MODEL)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--no-quantize", action="store_true")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if not (args.data_dir / "xstest").is_dir():
        parser.error(
            f"{args.data_dir} does not hold the upstream datasets (xstest/, coconot/, ...)"
        )
    started = time.monotonic()
    examples = corpus.training_corpus(args.data_dir)
    print(f"{len(examples)} examples: {dict(Counter(e.source for e in examples))}")
    encoder = load_encoder(
        args.embedding_model, max_tokens=args.max_tokens, quantize=not args.no_quantize
    )
    inputs = compute_inputs(examples, RuleMatcher(), encoder)
    embedding = Embedding(
        model=args.embedding_model,
        dimension=encoder.dimension,
        max_tokens=args.max_tokens,
        quantize=not args.no_quantize,
        languages=ENGLISH_ONLY.get(args.embedding_model),
    )
    weights = fit(examples, inputs, embedding, seed=args.seed)
    weights.training["python"] = platform.python_version()
    weights.training["sklearn"] = _sklearn_version()
    weights.save(args.out)
    print(f"wrote {args.out} in {time.monotonic() - started:.0f} s")
    print(f"thresholds: {weights.thresholds}")
    for name, values in weights.training["out_of_fold"].items():
        print(f"  out of fold, {name}: {values}")
    return 0


def _sklearn_version() -> str:
    import sklearn

    return str(sklearn.__version__)


if __name__ == "__main__":
    sys.exit(main())
