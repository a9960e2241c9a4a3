"""The fast BERT encoder against sentence-transformers, and its caching and sharing."""

from __future__ import annotations

import numpy as np
import pytest

from guardrail.detection.encoder import (
    BUNDLED_MODEL,
    BertEncoder,
    CachedEncoder,
    EncoderError,
    load_encoder,
    resolve_model,
)

TEXTS = [
    "I'm sorry, but I can't help with that request because it could cause harm.",
    "Sure! To stop a Python process, run kill -9 with its PID.",
    "Lo siento, no puedo.",
    "word " * 300,
]


def test_the_fp32_forward_pass_matches_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(resolve_model(BUNDLED_MODEL), device="cpu")
    reference.max_seq_length = 64
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    ours = load_encoder(BUNDLED_MODEL, max_tokens=64, quantize=False)(TEXTS)
    assert ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose((ours * expected).sum(axis=1), 1.0, atol=1e-4)


def test_quantized_embeddings_stay_close_and_ignore_their_batch_neighbours() -> None:
    exact = load_encoder(BUNDLED_MODEL, max_tokens=32, quantize=False)(TEXTS)
    encoder = load_encoder(BUNDLED_MODEL, max_tokens=32, quantize=True)
    together = encoder(TEXTS)
    alone = np.vstack(
        [load_encoder(BUNDLED_MODEL, max_tokens=32, quantize=True)([t]) for t in TEXTS]
    )
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert ((together * exact).sum(axis=1) > 0.9).all()
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_encoders_with_different_limits_share_one_loaded_model() -> None:
    short = load_encoder(BUNDLED_MODEL, max_tokens=16, quantize=True)
    long = load_encoder(BUNDLED_MODEL, max_tokens=64, quantize=True)
    assert isinstance(short, CachedEncoder) and isinstance(long, CachedEncoder)
    assert isinstance(short.inner, BertEncoder) and isinstance(long.inner, BertEncoder)
    assert short.inner._model is long.inner._model
    first, second = short([TEXTS[3]]), long([TEXTS[3]])
    assert float((first * second).sum()) < 0.9999  # the long text is truncated differently


def test_repeated_texts_are_served_from_the_cache() -> None:
    calls: list[int] = []

    class Counting:
        name, dimension = "counting", 2

        def __call__(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return np.ones((len(texts), 2), dtype=np.float32)

    cached = CachedEncoder(Counting(), size=2)
    cached(["a", "b", "a"])
    cached(["a", "b"])
    cached(["c"])
    cached(["a"])
    assert calls == [2, 1, 1]
    assert cached([]).shape == (0, 2)


def test_a_model_that_cannot_be_found_is_a_clear_error() -> None:
    with pytest.raises(EncoderError, match="no-such/model"):
        load_encoder("no-such/model", max_tokens=16, quantize=True)
