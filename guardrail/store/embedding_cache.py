"""Embedding vectors cached by model and text, so repeated sentences are encoded once."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from guardrail.store.base import Store
from guardrail.store.keys import embedding_key

Vector = npt.NDArray[np.float32]
logger = logging.getLogger("guardrail")


class EmbeddingCache:
    """Float32 vectors in a :class:`Store`, keyed by a hash of the model name and the text.

    Like the rewrite cache it only saves work, so store failures are misses, not errors.
    """

    def __init__(self, store: Store, model: str) -> None:
        self.store = store
        self.model = model

    async def get_many(self, texts: Sequence[str]) -> list[Vector | None]:
        """One vector or ``None`` per text; a store that fails reads as all misses."""
        keys = [embedding_key(self.model, text) for text in texts]
        try:
            values = await self.store.get_embeddings(keys)
        except Exception:
            logger.warning("embedding cache read failed; encoding instead", exc_info=True)
            return [None] * len(texts)
        return [
            np.frombuffer(value, dtype=np.float32).copy() if value is not None else None
            for value in values
        ]

    async def put_many(self, texts: Sequence[str], vectors: npt.ArrayLike) -> None:
        rows = np.asarray(vectors, dtype=np.float32)
        if rows.ndim != 2 or len(rows) != len(texts):
            raise ValueError(
                f"expected one vector per text ({len(texts)}), got an array of shape {rows.shape}"
            )
        items = {
            embedding_key(self.model, text): row.tobytes()
            for text, row in zip(texts, rows, strict=True)
        }
        try:
            await self.store.set_embeddings(items)
        except Exception:
            logger.warning("embedding cache write failed", exc_info=True)
