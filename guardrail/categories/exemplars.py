"""Exemplar similarity: the request's embedding against every category's example requests.

A category's similarity is the mean of its ``k`` nearest exemplars (a kNN vote that one stray
exemplar cannot swing), turned into a distribution over categories with a softmax.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from guardrail.categories.spec import CategorySpec

Vectors = npt.NDArray[np.float32]
logger = logging.getLogger("guardrail.categories")


class Encoder(Protocol):
    """Turns texts into L2-normalised sentence embeddings, one row per text."""

    def __call__(self, texts: Sequence[str]) -> Vectors: ...


CATEGORY_MAX_TOKENS = 128
"""Requests are embedded whole (up to this many tokens), unlike reply openings."""


@lru_cache(maxsize=1)
def default_encoder() -> Encoder:
    """The bundled sentence-embedding model, through the detector's fast loader, once."""
    from guardrail.detection.encoder import BUNDLED_MODEL, load_encoder

    return load_encoder(BUNDLED_MODEL, max_tokens=CATEGORY_MAX_TOKENS, quantize=True)


class ExemplarIndex:
    """The exemplars of every category, embedded once."""

    def __init__(
        self,
        specs: Mapping[str, CategorySpec],
        encoder: Encoder,
        *,
        k: int = 3,
        temperature: float = 0.04,
        cache_dir: Path | None = None,
    ) -> None:
        """``cache_dir``: keep the exemplar embeddings on disk, so a restart (or ``guardrail
        explain``) does not embed hundreds of exemplars again."""
        self.names = [name for name, spec in specs.items() if spec.exemplars]
        texts = [text for name in self.names for text in specs[name].exemplars]
        owners = [i for i, name in enumerate(self.names) for _ in specs[name].exemplars]
        self._encoder = encoder
        self._owner = np.asarray(owners, dtype=np.int64)
        self._vectors = _embed_exemplars(encoder, texts, cache_dir)
        self.k = k
        self.temperature = temperature

    def similarities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Per text: category -> mean cosine similarity of its ``k`` nearest exemplars."""
        if not self.names or not texts:
            return [{} for _ in texts]
        sims = self._vectors @ self._encoder(texts).T
        per_category = []
        for index in range(len(self.names)):
            own = np.sort(sims[self._owner == index], axis=0)[-self.k :]
            per_category.append(own.mean(axis=0))
        table = np.vstack(per_category)
        return [
            {name: float(table[i, column]) for i, name in enumerate(self.names)}
            for column in range(len(texts))
        ]

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """The similarities as a distribution over categories (softmax with temperature)."""
        result: list[dict[str, float]] = []
        for sims in self.similarities(texts):
            if not sims:
                result.append({})
                continue
            values = np.asarray(list(sims.values()), dtype=np.float64) / self.temperature
            weights = np.exp(values - values.max())
            weights /= weights.sum()
            result.append(dict(zip(sims, (float(w) for w in weights), strict=True)))
        return result


def _embed_exemplars(encoder: Encoder, texts: list[str], cache_dir: Path | None) -> Vectors:
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    if cache_dir is None:
        return encoder(texts)
    name = str(getattr(encoder, "name", type(encoder).__name__))
    digest = hashlib.sha256("\0".join([name, *texts]).encode()).hexdigest()[:24]
    path = cache_dir / f"exemplars-{digest}.npy"
    try:
        vectors = np.load(path)
        if vectors.shape[0] == len(texts):
            return np.asarray(vectors, dtype=np.float32)
    except (OSError, ValueError):
        pass
    vectors = encoder(texts)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".npy", delete=False) as handle:
            np.save(handle, vectors)
        os.replace(handle.name, path)
    except OSError as error:
        logger.debug("cannot cache exemplar embeddings in %s: %s", cache_dir, error)
    return vectors


class MemoEncoder:
    """Remembers embeddings by text, so rebuilding an index after a policy reload only embeds
    the exemplars that changed, and a repeated request is embedded once.

    :meth:`get` and :meth:`remember` let a shared cache (Redis, across workers) fill it.
    """

    def __init__(self, encoder: Encoder, *, max_items: int = 20_000) -> None:
        self.name = str(getattr(encoder, "name", type(encoder).__name__))
        self._encoder = encoder
        self._max_items = max_items
        self._memo: dict[str, Vectors] = {}

    def __call__(self, texts: Sequence[str]) -> Vectors:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            self.remember(missing, self._encoder(missing))
        return np.vstack([self._memo[t] for t in texts]) if texts else self._encoder(texts)

    def get(self, text: str) -> Vectors | None:
        """The remembered vector for ``text``, without encoding it."""
        return self._memo.get(text)

    def remember(self, texts: Sequence[str], vectors: npt.ArrayLike) -> None:
        rows = np.asarray(vectors)
        if len(self._memo) + len(texts) > self._max_items:
            self._memo.clear()
        for text, vector in zip(texts, rows, strict=True):
            self._memo[text] = vector
