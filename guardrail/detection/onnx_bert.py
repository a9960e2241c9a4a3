"""A BERT sentence-embedding model run on ONNX Runtime, built from its safetensors weights.

The graph is assembled in memory from the model folder (no export step, no file written), with
the word-embedding lookup left outside it, in half precision. Linear layers are quantized to
int8 per output channel in the graph itself (``DynamicQuantizeLinear`` + ``MatMulInteger``,
standard ONNX ops), which is what ONNX Runtime's own dynamic quantization produces, without its
temporary files or the extra second it takes. Nothing here imports torch: spaCy, the encoder and
the head together stay far below what torch alone keeps resident.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

MASKED = -1e9
"""Attention bias of padding positions."""


class WeightsError(RuntimeError):
    """The model folder lacks a weight the BERT graph needs."""


class SafetensorsFile:
    """Tensors of a ``.safetensors`` file, read on demand."""

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

    def _entry(self, name: str) -> tuple[int, int, Any, tuple[int, ...]]:
        try:
            entry = self._header[name]
        except KeyError as exc:
            raise WeightsError(f"model weights lack {name!r}") from exc
        start, end = entry["data_offsets"]
        return self._base + start, end - start, self.DTYPES[entry["dtype"]], tuple(entry["shape"])

    def mapped(self, name: str) -> npt.NDArray[Any]:
        """Memory-mapped rather than read: converting it pages it through once."""
        offset, _, dtype, shape = self._entry(name)
        return np.memmap(self._path, dtype=dtype, mode="r", offset=offset, shape=shape)

    def read(self, name: str) -> npt.NDArray[np.float32]:
        """Copied into memory as float32."""
        offset, size, dtype, shape = self._entry(name)
        with self._path.open("rb") as handle:
            handle.seek(offset)
            data = np.frombuffer(handle.read(size), dtype=dtype).reshape(shape)
        return data.astype(np.float32)


class BertModel:
    """Token ids in, one pooled (optionally normalised) vector per text out."""

    def __init__(self, path: Path, *, quantize: bool) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.dimension = int(config["hidden_size"])
        self._pad = int(config.get("pad_token_id", 0))
        self._cls_pooling = pooling(path) == "cls"
        self._normalize = has_module(path, "Normalize")
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        weights = SafetensorsFile(path / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights.names else ""
        # Half precision: replies in many languages touch most of the table, so mapping it from
        # disk saved nothing; this halves it, and the rounding is far below int8's.
        self._words = weights.mapped(f"{prefix}embeddings.word_embeddings.weight").astype(
            np.float16
        )
        self._positions = weights.read(f"{prefix}embeddings.position_embeddings.weight")
        self._token_type = weights.read(f"{prefix}embeddings.token_type_embeddings.weight")[0]
        graph = _GraphBuilder(weights, prefix, config, quantize=quantize).build()
        options = onnxruntime.SessionOptions()
        # One text runs at a time and the matrices are small: a second thread costs more in
        # hand-offs than it saves, and would compete with the server's event loop.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            graph,
            options,
            providers=["CPUExecutionProvider"],
            # The fused residual-plus-norm kernel made a 64-token text take 9.0 ms instead of
            # 6.8 ms on one core: the plain Add and LayerNormalization kernels are faster.
            disabled_optimizers=["SkipLayerNormFusion"],
        )

    def embed(self, texts: Sequence[str], max_tokens: int, max_chars: int) -> Vectors:
        """One batch: tokenize, truncate (keeping the closing separator), pad, run, pool."""
        encodings = self._tokenizer.encode_batch([text[:max_chars] for text in texts])
        rows = [
            e.ids if len(e.ids) <= max_tokens else [*e.ids[: max_tokens - 1], e.ids[-1]]
            for e in encodings
        ]
        width = max(len(row) for row in rows)
        ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.float32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        embedded = self._words[ids] + self._positions[:width] + self._token_type
        bias = ((1.0 - mask) * MASKED)[:, None, None, :]
        (hidden,) = self._session.run(
            None, {"embedded": embedded.astype(np.float32), "bias": bias.astype(np.float32)}
        )
        if self._cls_pooling:
            pooled = hidden[:, 0]
        else:
            pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1), 1e-9)[:, None]
        if self._normalize:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled, dtype=np.float32)


class _GraphBuilder:
    """The encoder stack of a BERT model as an ONNX graph: embedded tokens in, hidden states out."""

    OPSET = 17  # LayerNormalization
    IR_VERSION = 9  # what ONNX Runtime releases of the last two years all load

    def __init__(
        self, weights: SafetensorsFile, prefix: str, config: dict[str, Any], *, quantize: bool
    ) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._helper, self._tensor_proto, self._to_tensor = helper, TensorProto, numpy_helper
        self._weights = weights
        self._prefix = prefix
        self._quantize = quantize
        self._hidden = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._nodes: list[Any] = []
        self._initializers: dict[str, Any] = {}
        self._count = 0

    def build(self) -> bytes:
        """The serialized model, ready for ``InferenceSession``."""
        helper, proto = self._helper, self._tensor_proto
        head = self._hidden // self._heads
        split = self._constant("split_heads", np.array([0, 0, 3, self._heads, head], np.int64))
        merge = self._constant("merge_heads", np.array([0, 0, self._hidden], np.int64))
        scale = self._constant("scale", np.array(1.0 / math.sqrt(head), np.float32))
        x = self._layer_norm("embedded", "embeddings.LayerNorm")
        for n in range(self._layers):
            layer = f"encoder.layer.{n}."
            qkv = self._linear(
                x, *(f"{layer}attention.self.{p}" for p in ("query", "key", "value"))
            )
            qkv = self._node("Transpose", self._node("Reshape", qkv, split), perm=[2, 0, 3, 1, 4])
            query, key, value = (
                self._node("Gather", qkv, self._constant(f"part{i}", np.array(i, np.int64)), axis=0)
                for i in range(3)
            )
            scores = self._node("MatMul", query, self._node("Transpose", key, perm=[0, 1, 3, 2]))
            scores = self._node("Add", self._node("Mul", scores, scale), "bias")
            attended = self._node("MatMul", self._node("Softmax", scores, axis=-1), value)
            attended = self._node(
                "Reshape", self._node("Transpose", attended, perm=[0, 2, 1, 3]), merge
            )
            attended = self._linear(attended, f"{layer}attention.output.dense")
            x = self._layer_norm(
                self._node("Add", x, attended), f"{layer}attention.output.LayerNorm"
            )
            inner = self._gelu(self._linear(x, f"{layer}intermediate.dense"))
            out = self._linear(inner, f"{layer}output.dense")
            x = self._layer_norm(self._node("Add", x, out), f"{layer}output.LayerNorm")
        self._nodes.append(helper.make_node("Identity", [x], ["hidden"]))
        graph = helper.make_graph(
            self._nodes,
            "bert",
            [
                helper.make_tensor_value_info(
                    "embedded", proto.FLOAT, ["batch", "tokens", self._hidden]
                ),
                helper.make_tensor_value_info("bias", proto.FLOAT, ["batch", 1, 1, "tokens"]),
            ],
            [helper.make_tensor_value_info("hidden", proto.FLOAT, ["batch", "tokens", None])],
            list(self._initializers.values()),
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", self.OPSET)],
            ir_version=self.IR_VERSION,
        )
        return bytes(model.SerializeToString())

    def _node(self, op: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{op.lower()}_{self._count}"
        self._nodes.append(self._helper.make_node(op, list(inputs), [output], **attributes))
        return output

    def _constant(self, name: str, value: npt.NDArray[Any]) -> str:
        """A named initializer; the small ones every layer uses are added once."""
        if name not in self._initializers:
            self._initializers[name] = self._to_tensor.from_array(value, name)
        return name

    def _weight(self, name: str) -> npt.NDArray[np.float32]:
        return self._weights.read(self._prefix + name)

    def _layer_norm(self, x: str, name: str) -> str:
        gamma = self._constant(f"{name}.weight", self._weight(f"{name}.weight"))
        beta = self._constant(f"{name}.bias", self._weight(f"{name}.bias"))
        return self._node("LayerNormalization", x, gamma, beta, axis=-1, epsilon=self._eps)

    def _gelu(self, x: str) -> str:
        """The exact (erf) GELU BERT uses, from standard ops in the form ONNX Runtime fuses."""
        root = self._constant("sqrt2", np.array(math.sqrt(2.0), np.float32))
        one = self._constant("one", np.array(1.0, np.float32))
        half = self._constant("half", np.array(0.5, np.float32))
        erf = self._node("Erf", self._node("Div", x, root))
        return self._node("Mul", self._node("Mul", x, half), self._node("Add", erf, one))

    def _linear(self, x: str, *names: str) -> str:
        """``x @ W.T + b`` for the named layers, side by side (one matrix for q, k and v)."""
        weight = np.concatenate([self._weight(f"{name}.weight") for name in names]).T
        bias = self._constant(
            f"{names[0]}.bias", np.concatenate([self._weight(f"{name}.bias") for name in names])
        )
        if not self._quantize:
            product = self._node("MatMul", x, self._constant(f"{names[0]}.weight", weight))
            return self._node("Add", product, bias)
        # Symmetric int8 per output column; activations are quantized per call to uint8.
        scales = np.maximum(np.abs(weight).max(axis=0), 1e-8) / 127.0
        quantized = np.clip(np.round(weight / scales), -127, 127).astype(np.int8)
        columns = weight.shape[1]
        zero = self._constant(f"{names[0]}.zero", np.zeros(columns, np.int8))
        q_weight = self._constant(f"{names[0]}.weight", quantized)
        q_scales = self._constant(f"{names[0]}.scale", scales.astype(np.float32))
        self._count += 1
        q_x, x_scale, x_zero = (f"{x}_q{self._count}", f"{x}_s{self._count}", f"{x}_z{self._count}")
        self._nodes.append(
            self._helper.make_node("DynamicQuantizeLinear", [x], [q_x, x_scale, x_zero])
        )
        product = self._node("MatMulInteger", q_x, q_weight, x_zero, zero)
        product = self._node("Cast", product, to=self._tensor_proto.FLOAT)
        product = self._node("Mul", product, self._node("Mul", x_scale, q_scales))
        return self._node("Add", product, bias)


def pooling(path: Path) -> str:
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


def has_module(path: Path, kind: str) -> bool:
    """Whether the sentence-transformers pipeline in ``modules.json`` has a ``kind`` module."""
    modules = path / "modules.json"
    if not modules.is_file():
        return False
    return any(str(m.get("type", "")).endswith(kind) for m in json.loads(modules.read_text()))
