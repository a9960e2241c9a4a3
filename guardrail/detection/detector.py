"""The refusal detector: rules, then (only when needed) embeddings and the trained head."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from guardrail.detection.encoder import BUNDLED_MODEL, Encoder, load_encoder
from guardrail.detection.features import embedding_text, reply_features
from guardrail.detection.head import WEIGHTS, HeadWeights
from guardrail.detection.language import UNDETERMINED, identify_language
from guardrail.detection.rules import Analysis, RuleMatcher
from guardrail.detection.scoring import Score, Scorer
from guardrail.detection.strategy import choose_strategy, evidence
from guardrail.types import Detection, Label3, Message, Strategy, last_user_text


class DetectorError(ValueError):
    """The detector's configuration does not fit its weight file."""


class DetectorConfig(BaseModel):
    """How the detector is built. The defaults use what ships with the package."""

    model_config = ConfigDict(frozen=True)

    embedding_model: str = BUNDLED_MODEL
    """A sentence-transformers name or path; it must be the model the head was trained with
    (``python -m guardrail.detection.training --embedding-model NAME --out FILE``)."""
    use_embeddings: bool = True
    """``False``: rules and the rules head only, no embedding model loaded."""
    head_weights: Path = WEIGHTS
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """Refusal-probability cut; ``None`` uses the weight file's (0.5)."""


class Detector:
    """Decides whether a reply refuses, how, with which patterns, in which language.

    Thread-safe. The spaCy matchers are built on construction (about a second); the embedding
    model loads on the first reply that needs it, or is passed in to share one with other parts.
    """

    def __init__(self, config: DetectorConfig | None = None, *, encoder: Encoder | None = None):
        self.config = config or DetectorConfig()
        self.weights = HeadWeights.load(self.config.head_weights)
        trained_with = self.weights.embedding.model
        if self.config.use_embeddings and self.config.embedding_model != trained_with:
            raise DetectorError(
                f"the head in {self.config.head_weights} was trained with embeddings from "
                f"{trained_with!r}, not {self.config.embedding_model!r}; train one for that model "
                "(python -m guardrail.detection.training --embedding-model ... --out FILE) and "
                "set head_weights to it"
            )
        self.matcher = RuleMatcher()
        self.scorer = Scorer(
            self.weights, use_embeddings=self.config.use_embeddings, threshold=self.config.threshold
        )
        self._encoder = encoder
        self._lock = threading.Lock()

    @property
    def encoder(self) -> Encoder:
        """The embedding model, loaded on first use."""
        with self._lock:
            if self._encoder is None:
                spec = self.weights.embedding
                self._encoder = load_encoder(
                    spec.model, max_tokens=spec.max_tokens, quantize=spec.quantize
                )
            return self._encoder

    def detect(
        self,
        response: str | None,
        *,
        prompt: str = "",
        messages: Sequence[Message] = (),
        refusal: str | None = None,
    ) -> Detection:
        """Judge one reply. ``refusal`` is the OpenAI ``message.refusal`` field when set.

        A reply with no text at all (``None``, empty or whitespace) answers nothing and is
        reported as a full refusal decided by ``empty``; callers must not pass tool-call turns.
        """
        if refusal is not None and refusal.strip():
            return self._refusal_field(refusal)
        if response is None or not response.strip():
            return _empty()
        return self.detect_batch([(prompt or last_user_text(messages), response)])[0]

    def detect_batch(self, items: Sequence[tuple[str, str]]) -> list[Detection]:
        """Judge many ``(prompt, response)`` pairs, embedding the uncertain ones in one batch."""
        results: list[Detection | None] = [None] * len(items)
        analyses: list[Analysis] = []
        langs: list[str] = []
        rows: list[int] = []
        for index, (_, response) in enumerate(items):
            if not response or not response.strip():
                results[index] = _empty()
                continue
            analysis = self.matcher.analyse(response)
            analyses.append(analysis)
            langs.append(identify_language(response, analysis.phrase_languages))
            rows.append(index)
        if rows:
            features = np.stack(
                [reply_features(a, items[i][0]) for a, i in zip(analyses, rows, strict=True)]
            )
            rules = self.scorer.rules_probability(features)
            deep = self.scorer.needs_embedding(rules, langs)
            embeddings = None
            if deep.any():
                embeddings = np.zeros((len(rows), self.weights.embedding.dimension))
                texts = [
                    embedding_text(analyses[i], items[rows[i]][0]) for i in np.flatnonzero(deep)
                ]
                embeddings[deep] = self.encoder(texts)
            scores = self.scorer.score(features, langs, embeddings, rules=rules)
            for index, analysis, lang, score in zip(rows, analyses, langs, scores, strict=True):
                results[index] = _detection(analysis, score, lang)
        return [r for r in results if r is not None]

    def _refusal_field(self, refusal: str) -> Detection:
        """The upstream said outright that it refused; the text still shows how."""
        analysis = self.matcher.analyse(refusal)
        return Detection(
            is_refusal=True,
            score=1.0,
            strategy=choose_strategy(Label3.FULL_REFUSAL, analysis),
            label3=Label3.FULL_REFUSAL,
            patterns=evidence(analysis),
            lang=identify_language(refusal, analysis.phrase_languages),
            decided_by="refusal_field",
        )


def _detection(analysis: Analysis, score: Score, lang: str) -> Detection:
    return Detection(
        is_refusal=score.is_refusal,
        score=score.probability,
        strategy=choose_strategy(score.label3, analysis),
        label3=score.label3,
        patterns=evidence(analysis),
        lang=lang,
        decided_by=score.decided_by,
    )


def _empty() -> Detection:
    return Detection(
        is_refusal=True,
        score=1.0,
        strategy=Strategy.DIRECT_REFUSAL,
        label3=Label3.FULL_REFUSAL,
        lang=UNDETERMINED,
        decided_by="empty",
    )
