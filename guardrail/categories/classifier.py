"""Request categorisation: exemplar similarity and keyword rules, combined per category.

Scores are independent confidences in [0, 1] (a request can be both about weapons and about
violence), ranked best first. ``benign`` is high only when the exemplars point there and no
keyword rule of another category fired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from guardrail.categories.exemplars import Encoder, ExemplarIndex
from guardrail.categories.keywords import KeywordRules
from guardrail.categories.spec import CategorySpec
from guardrail.types import CategoryScore, Message, content_text

BENIGN = "benign"
CONTEXT_WEIGHT = 0.5
"""How much keyword hits in earlier user turns count, relative to the latest turn."""
SHORT_TURN_WORDS = 8
"""A latest turn shorter than this is embedded together with the previous user turn."""


def keyword_confidence(hits: int) -> float:
    """One rule hit is suggestive, several are near-certain."""
    return 0.0 if hits <= 0 else min(0.95, 0.6 + 0.15 * (hits - 1))


def embedding_trust(text: str) -> float:
    """The embedding model is English-only: trust it less the less of the text is Latin script."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    latin = sum(1 for ch in letters if ch.isascii() or "\u00c0" <= ch <= "\u024f")
    return 0.3 + 0.7 * (latin / len(letters))


@dataclass(frozen=True, slots=True)
class CategoryEvidence:
    """The ranked scores and what produced them (for ``guardrail explain``)."""

    scores: tuple[CategoryScore, ...]
    embedding: Mapping[str, float]
    keywords: Mapping[str, Sequence[str]]
    text: str


class CategoryClassifier:
    """Classifies a conversation's latest request; ``encoder=None`` uses keyword rules only."""

    def __init__(
        self,
        specs: Mapping[str, CategorySpec],
        encoder: Encoder | None = None,
        *,
        cache_dir: Path | None = None,
    ) -> None:
        self.names = tuple(specs)
        self._rules = KeywordRules(specs)
        self._index = (
            ExemplarIndex(specs, encoder, cache_dir=cache_dir) if encoder is not None else None
        )

    def classify(self, messages: Sequence[Message]) -> tuple[CategoryScore, ...]:
        return self.explain(messages).scores

    def explain(self, messages: Sequence[Message]) -> CategoryEvidence:
        return self.explain_many([messages])[0]

    def explain_many(self, conversations: Sequence[Sequence[Message]]) -> list[CategoryEvidence]:
        """Classify several conversations with one batched embedding call."""
        prepared = [self._keywords(messages) for messages in conversations]
        queries = [query for query, _, _ in prepared]
        embedded: list[dict[str, float]] = [{} for _ in queries]
        if self._index is not None:
            wanted = [i for i, query in enumerate(queries) if query.strip()]
            for i, probabilities in zip(
                wanted, self._index.probabilities([queries[i] for i in wanted]), strict=True
            ):
                embedded[i] = probabilities
        return [
            self._combine(query, hits, keyword_scores, embedding)
            for (query, hits, keyword_scores), embedding in zip(prepared, embedded, strict=True)
        ]

    def query(self, messages: Sequence[Message]) -> str:
        """The text that is embedded for ``messages``: the latest user turn, preceded by the one
        before it when the latest is short (a follow-up like "and how?")."""
        latest, earlier = _user_turns(messages)
        if earlier and len(latest.split()) < SHORT_TURN_WORDS:
            return f"{earlier[-1]}\n{latest}"
        return latest

    def _keywords(
        self, messages: Sequence[Message]
    ) -> tuple[str, dict[str, list[str]], dict[str, float]]:
        latest, earlier = _user_turns(messages)
        hits = self._rules.hits(latest)
        scores = {name: keyword_confidence(len(rules)) for name, rules in hits.items()}
        for turn in earlier:
            for name, rules in self._rules.hits(turn).items():
                context = CONTEXT_WEIGHT * keyword_confidence(len(rules))
                scores[name] = max(scores.get(name, 0.0), context)
        return self.query(messages), hits, scores

    def _combine(
        self,
        query: str,
        hits: Mapping[str, Sequence[str]],
        keyword_scores: Mapping[str, float],
        embedding: Mapping[str, float],
    ) -> CategoryEvidence:
        trust = embedding_trust(query)
        strongest_keyword = max(
            (score for name, score in keyword_scores.items() if name != BENIGN), default=0.0
        )
        scores: list[CategoryScore] = []
        for name in self.names:
            emb = embedding.get(name, 0.0) * trust if embedding else 0.0
            if name == BENIGN:
                base = emb if embedding else 0.5
                score = base * (1.0 - strongest_keyword)
            else:
                score = 1.0 - (1.0 - emb) * (1.0 - keyword_scores.get(name, 0.0))
            if score >= 0.01:
                scores.append(CategoryScore(name, round(score, 4)))
        scores.sort(key=lambda c: -c.score)
        return CategoryEvidence(tuple(scores), embedding, hits, query)


def _user_turns(messages: Sequence[Message]) -> tuple[str, list[str]]:
    """The latest user turn's text and the earlier ones'."""
    turns = [content_text(m.get("content")) for m in messages if m.get("role") == "user"] or [""]
    return turns[-1], turns[:-1]
