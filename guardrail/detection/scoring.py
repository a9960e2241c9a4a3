"""From reply features (and, when needed, an embedding) to a refusal probability and label.

Cheapest first: the rules head scores every reply; only when it is unsure and the reply is in a
language the embedding model understands does the full head run, on the embedding of the reply's
start.
The detector and the accuracy report both score through this class, so the report measures the
code path the proxy runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from guardrail.detection.head import HeadWeights
from guardrail.types import Label3

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Score:
    probability: float
    """Calibrated probability that the reply refuses anything (fully or partly)."""
    partial: float
    """Probability that, if it refuses, the refusal is partial."""
    is_refusal: bool
    label3: Label3
    decided_by: str
    """``rules`` (rules head alone) or ``head`` (with the embedding)."""


class Scorer:
    def __init__(
        self,
        weights: HeadWeights,
        *,
        use_embeddings: bool = True,
        threshold: float | None = None,
        gate: bool = True,
    ) -> None:
        self.weights = weights
        self.use_embeddings = use_embeddings
        self.threshold = weights.thresholds.decision if threshold is None else threshold
        self.uncovered_threshold = (
            weights.thresholds.decision_uncovered if threshold is None else threshold
        )
        """Replies in languages the embedding model does not cover are cut here (unless a
        threshold is given, which applies to every reply)."""
        self.gate = gate
        """``False`` sends every covered reply to the full head (to measure what gating costs)."""

    def rules_probability(self, features: Matrix) -> Matrix:
        """The rules head's refusal probability for each row."""
        return self.weights.heads["rules"]["refusal"].probability(np.atleast_2d(features))

    def needs_embedding(self, rules: Matrix, langs: list[str]) -> npt.NDArray[np.bool_]:
        """Which replies the full head should see: covered language, rules head unsure.

        ``rules``: the rules head's refusal probabilities (:meth:`rules_probability`)."""
        return self._needs_embedding(rules, self._covered(langs))

    def _needs_embedding(
        self, rules: Matrix, covered: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        if not self.use_embeddings:
            return np.zeros(len(covered), dtype=bool)
        if not self.gate:
            return covered
        low, high = self.weights.thresholds.rules_low, self.weights.thresholds.rules_high
        return covered & (rules > low) & (rules < high)

    def _covered(self, langs: list[str]) -> npt.NDArray[np.bool_]:
        return np.asarray([self.weights.embedding.covers(lang) for lang in langs], dtype=bool)

    def score(
        self,
        features: Matrix,
        langs: list[str],
        embeddings: Matrix | None = None,
        *,
        rules: Matrix | None = None,
    ) -> list[Score]:
        """Scores for a batch; ``embeddings`` rows are read only where :meth:`needs_embedding`.

        ``rules``: the rules head's probabilities, when the caller computed them already."""
        features = np.atleast_2d(features)
        heads = self.weights.heads
        thresholds = self.weights.thresholds
        refusal = self.rules_probability(features) if rules is None else rules.copy()
        partial = heads["rules"]["partial"].probability(features)
        partial_cut = np.full(len(refusal), thresholds.partial_rules)
        covered = self._covered(langs)
        deep = self._needs_embedding(refusal, covered)
        if deep.any():
            if embeddings is None:
                raise ValueError("embeddings are needed for replies the rules head is unsure of")
            joined = np.hstack([features[deep], np.atleast_2d(embeddings)[deep]])
            refusal[deep] = heads["full"]["refusal"].probability(joined)
            partial[deep] = heads["full"]["partial"].probability(joined)
            partial_cut[deep] = thresholds.partial_full
        decision = np.where(covered, self.threshold, self.uncovered_threshold)
        scores = []
        for p, q, cut, used, at in zip(refusal, partial, partial_cut, deep, decision, strict=True):
            refuses = bool(p >= at)
            if not refuses:
                label = Label3.FULL_COMPLIANCE
            elif q >= cut:
                label = Label3.PARTIAL_REFUSAL
            else:
                label = Label3.FULL_REFUSAL
            scores.append(Score(float(p), float(q), refuses, label, "head" if used else "rules"))
        return scores
