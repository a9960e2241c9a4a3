"""The memoising encoder the pipeline shares between the category index and its caches."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from guardrail.categories import MemoEncoder


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def test_each_text_is_encoded_once() -> None:
    inner = Recording()
    memo = MemoEncoder(inner)
    memo(["a", "bb", "a"])
    vectors = memo(["bb", "ccc"])
    assert inner.calls == [["a", "bb"], ["ccc"]]
    np.testing.assert_array_equal(vectors, [[2.0, 1.0], [3.0, 1.0]])
    assert memo.name == "recording"


def test_remembered_vectors_are_used_without_encoding() -> None:
    inner = Recording()
    memo = MemoEncoder(inner)
    assert memo.get("shared") is None
    memo.remember(["shared"], np.asarray([[9.0, 9.0]], dtype=np.float32))
    np.testing.assert_array_equal(memo(["shared"]), [[9.0, 9.0]])
    assert inner.calls == []


def test_a_full_memo_starts_over_rather_than_growing() -> None:
    memo = MemoEncoder(Recording(), max_items=2)
    memo(["a", "b"])
    memo(["c"])
    assert memo.get("a") is None and memo.get("c") is not None
