"""The BERT graph built from safetensors weights, float and int8, on ONNX Runtime."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from guardrail.detection.encoder import BUNDLED_MODEL, resolve_model
from guardrail.detection.onnx_bert import BertModel, SafetensorsFile, WeightsError, pooling

MODEL = Path(resolve_model(BUNDLED_MODEL))
TEXTS = ["I can't help with that.", "Here is a recipe for banana bread with walnuts."]


@pytest.fixture(scope="module")
def float_model() -> BertModel:
    return BertModel(MODEL, quantize=False)


def test_float_and_int8_graphs_agree_closely(float_model: BertModel) -> None:
    exact = float_model.embed(TEXTS, 64, 768)
    quantized = BertModel(MODEL, quantize=True).embed(TEXTS, 64, 768)
    assert exact.shape == quantized.shape == (2, 384)
    cosines = (exact * quantized).sum(axis=1)
    assert (cosines > 0.97).all()
    assert float((exact[0] * exact[1]).sum()) < 0.5  # and the two texts stay apart


def test_padding_does_not_change_a_text_s_embedding(float_model: BertModel) -> None:
    alone = float_model.embed(TEXTS[:1], 64, 768)
    padded = float_model.embed(TEXTS, 64, 768)[:1]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


def test_long_texts_are_cut_to_the_token_limit_keeping_the_separator(
    float_model: BertModel,
) -> None:
    long = "word " * 400
    assert np.allclose(
        float_model.embed([long], 16, 10_000), float_model.embed([long + "tail"], 16, 10_000)
    )


def test_a_missing_weight_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "model"
    shutil.copytree(MODEL, broken)
    weights = broken / "model.safetensors"
    data = weights.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    name = next(n for n in header if n.endswith("attention.output.dense.bias"))
    header[name.replace("output.dense.bias", "output.dense.gone")] = header.pop(name)
    encoded = json.dumps(header).encode().ljust(size)
    weights.write_bytes(len(encoded).to_bytes(8, "little") + encoded + data[8 + size :])
    with pytest.raises(WeightsError, match=r"attention\.output\.dense\.bias"):
        BertModel(broken, quantize=True)


def test_safetensors_tensors_read_as_float32() -> None:
    weights = SafetensorsFile(MODEL / "model.safetensors")
    name = next(n for n in weights.names if n.endswith("position_embeddings.weight"))
    table = weights.read(name)
    assert table.dtype == np.float32 and table.shape[1] == 384


def test_pooling_defaults_to_mean_without_a_config(tmp_path: Path) -> None:
    assert pooling(MODEL) == "mean"
    assert pooling(tmp_path) == "mean"
