"""Exemplar similarity: the request's embedding against every category's example requests.

A category's similarity is the mean of its ``k`` nearest exemplars (a kNN vote that one stray
exemplar cannot swing), turned into a distribution over categories with a softmax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from guardrail.categories.spec import CategorySpec

Vectors = npt.NDArray[np.float32]


class Encoder(Protocol):
    """Turns texts into L2-normalised sentence embeddings, one row per text."""

    def __call__(self, texts: Sequence[str]) -> Vectors: ...


class ExemplarIndex:
    """The exemplars of every category, embedded once."""

    def __init__(
        self,
        specs: Mapping[str, CategorySpec],
        encoder: Encoder,
        *,
        k: int = 3,
        temperature: float = 0.04,
    ) -> None:
        self.names = [name for name, spec in specs.items() if spec.exemplars]
        texts = [text for name in self.names for text in specs[name].exemplars]
        owners = [i for i, name in enumerate(self.names) for _ in specs[name].exemplars]
        self._encoder = encoder
        self._owner = np.asarray(owners, dtype=np.int64)
        self._vectors = encoder(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        self.k = k
        self.temperature = temperature

    def similarities(self, text: str) -> dict[str, float]:
        """Category -> mean cosine similarity of its ``k`` nearest exemplars to ``text``."""
        if not self.names:
            return {}
        query = self._encoder([text])[0]
        sims = self._vectors @ query
        result: dict[str, float] = {}
        for index, name in enumerate(self.names):
            own = sims[self._owner == index]
            top = np.sort(own)[-self.k :]
            result[name] = float(top.mean())
        return result

    def probabilities(self, text: str) -> dict[str, float]:
        """The similarities as a distribution over categories (softmax with temperature)."""
        sims = self.similarities(text)
        if not sims:
            return {}
        values = np.asarray(list(sims.values()), dtype=np.float64) / self.temperature
        weights = np.exp(values - values.max())
        weights /= weights.sum()
        return dict(zip(sims, (float(w) for w in weights), strict=True))
