"""The trained head: small multilayer perceptrons evaluated with numpy, and their weight file.

Training uses scikit-learn (``guardrail.detection.training``); inference needs only numpy, so
the proxy does not import scikit-learn. One ``.npz`` file holds every array plus a JSON
description of how it was made (the data recipe, the embedding model and the thresholds).

Two heads of two parts each:

- ``rules``: language-independent reply features only. It judges replies in every language and
  settles clear cases before any embedding is computed.
- ``full``: the same features plus the sentence embedding of the reply's start. The embedding
  model is English-only, so this head judges English replies (or every language, when trained
  with a multilingual embedding model); it is fitted on replies in every language all the same.

Each head has a ``refusal`` part (calibrated probability that the reply refuses anything) and a
``partial`` part (probability that a refusal is partial rather than full).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

WEIGHTS = Path(__file__).parent / "weights" / "head.npz"
FORMAT = 1
HEADS = ("rules", "full")
PARTS = ("refusal", "partial")

Matrix = npt.NDArray[np.float64]


class HeadError(ValueError):
    """A weight file is missing, malformed or made for other features."""


@dataclass(frozen=True, slots=True)
class MLP:
    """Standardise, one ReLU hidden layer, a logistic output, Platt-calibrated."""

    mean: Matrix
    scale: Matrix
    hidden_weights: Matrix
    hidden_bias: Matrix
    output_weights: Matrix
    output_bias: float
    calibration: tuple[float, float] = (1.0, 0.0)
    """``p = sigmoid(a * logit + b)``, fitted on out-of-fold predictions."""

    def logit(self, features: Matrix) -> Matrix:
        x = (np.atleast_2d(features) - self.mean) / self.scale
        hidden = np.maximum(x @ self.hidden_weights + self.hidden_bias, 0.0)
        return np.asarray(hidden @ self.output_weights, dtype=np.float64).ravel() + self.output_bias

    def probability(self, features: Matrix) -> Matrix:
        a, b = self.calibration
        return _sigmoid(a * self.logit(features) + b)

    @property
    def inputs(self) -> int:
        return int(self.hidden_weights.shape[0])


@dataclass(frozen=True, slots=True)
class Embedding:
    """The sentence-embedding setup the ``full`` head was trained with."""

    model: str
    dimension: int
    max_tokens: int
    quantize: bool
    languages: tuple[str, ...] | None
    """Languages whose replies the full head may judge; ``None`` for all."""

    def covers(self, lang: str) -> bool:
        return self.languages is None or lang in self.languages


@dataclass(frozen=True, slots=True)
class Thresholds:
    decision: float = 0.5
    """Calibrated refusal probability at or above which a reply counts as a refusal."""
    decision_uncovered: float = 0.5
    """The same cut for replies in languages the embedding model does not cover, which the rules
    head alone judges (see ``training.UNCOVERED_DECISION``)."""
    partial_rules: float = 0.5
    partial_full: float = 0.5
    """Per head: partial-refusal probability at or above which a refusal counts as partial."""
    rules_low: float = 0.0
    rules_high: float = 1.0
    """Rules-head probabilities outside (low, high) are trusted without embeddings."""


@dataclass(frozen=True, slots=True)
class HeadWeights:
    features: tuple[str, ...]
    embedding: Embedding
    heads: dict[str, dict[str, MLP]]
    thresholds: Thresholds = field(default_factory=Thresholds)
    training: dict[str, Any] = field(default_factory=dict)
    """Provenance: data recipe, example counts, seed, library versions, fit metrics."""

    def save(self, path: Path) -> None:
        arrays: dict[str, Matrix] = {}
        for head, parts in self.heads.items():
            for part, mlp in parts.items():
                prefix = f"{head}.{part}."
                arrays[prefix + "mean"] = mlp.mean
                arrays[prefix + "scale"] = mlp.scale
                arrays[prefix + "hidden_weights"] = mlp.hidden_weights
                arrays[prefix + "hidden_bias"] = mlp.hidden_bias
                arrays[prefix + "output_weights"] = mlp.output_weights
                arrays[prefix + "output"] = np.asarray(
                    [mlp.output_bias, *mlp.calibration], dtype=np.float64
                )
        meta = {
            "format": FORMAT,
            "features": list(self.features),
            "embedding": {
                "model": self.embedding.model,
                "dimension": self.embedding.dimension,
                "max_tokens": self.embedding.max_tokens,
                "quantize": self.embedding.quantize,
                "languages": list(self.embedding.languages)
                if self.embedding.languages is not None
                else None,
            },
            "thresholds": asdict(self.thresholds),
            "training": self.training,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        compact: dict[str, Any] = {name: value.astype(np.float32) for name, value in arrays.items()}
        np.savez_compressed(path, meta=np.asarray(json.dumps(meta, indent=1)), **compact)

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> HeadWeights:
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {
                    name: np.asarray(data[name], dtype=np.float64)
                    for name in data.files
                    if name != "meta"
                }
                meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            raise HeadError(f"cannot read head weights {path}: {exc}") from exc
        if meta.get("format") != FORMAT:
            raise HeadError(f"{path}: weight format {meta.get('format')!r}, expected {FORMAT}")
        try:
            heads = {
                head: {part: _mlp(arrays, f"{head}.{part}.") for part in PARTS} for head in HEADS
            }
            spec = meta["embedding"]
            languages = spec.get("languages")
            embedding = Embedding(
                model=str(spec["model"]),
                dimension=int(spec["dimension"]),
                max_tokens=int(spec["max_tokens"]),
                quantize=bool(spec["quantize"]),
                languages=tuple(languages) if languages is not None else None,
            )
            thresholds = Thresholds(**{k: float(v) for k, v in meta["thresholds"].items()})
            weights = cls(tuple(meta["features"]), embedding, heads, thresholds, meta["training"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HeadError(f"{path}: malformed weight file: {exc}") from exc
        weights.check()
        return weights

    def check(self) -> None:
        """Fail early when the arrays do not fit the feature list."""
        width = len(self.features)
        for head, parts in self.heads.items():
            expected = width + (self.embedding.dimension if head == "full" else 0)
            for part, mlp in parts.items():
                if mlp.inputs != expected:
                    raise HeadError(
                        f"head {head}.{part} takes {mlp.inputs} inputs, expected {expected}"
                    )


def _mlp(arrays: dict[str, Matrix], prefix: str) -> MLP:
    output = arrays[prefix + "output"]
    return MLP(
        mean=arrays[prefix + "mean"],
        scale=arrays[prefix + "scale"],
        hidden_weights=arrays[prefix + "hidden_weights"],
        hidden_bias=arrays[prefix + "hidden_bias"],
        output_weights=arrays[prefix + "output_weights"],
        output_bias=float(output[0]),
        calibration=(float(output[1]), float(output[2])),
    )


def _sigmoid(x: Matrix) -> Matrix:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)), dtype=np.float64)
