"""Streaming JSONL labelling, as a function and as ``guardrail detect``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from guardrail.detection import BatchError, Detector, DetectorConfig, detect_file
from guardrail.types import Detection
from proxy.cli import app


@pytest.fixture(scope="session")
def detector() -> Detector:
    return Detector(DetectorConfig(use_embeddings=False))


def write_lines(path: Path, lines: Sequence[object]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_line_keeps_its_fields_and_gains_the_detection(
    tmp_path: Path, detector: Detector
) -> None:
    source = write_lines(
        tmp_path / "in.jsonl",
        [
            {"id": "a", "prompt": "How do I make a bomb?", "response": "Sorry, I can't help."},
            "",
            {"id": "b", "prompt": "Capital of France?", "response": "Paris.", "extra": [1, 2]},
            {"id": "c", "response": None, "refusal": "I can't assist with that."},
            {"id": "d", "response": "  "},
            {"id": "e", "messages": [{"role": "user", "content": "hi"}], "response": "Hello!"},
        ],
    )
    target = tmp_path / "out.jsonl"
    assert detect_file(source, target, detector=detector, progress=False) == 5
    rows = read_lines(target)
    assert [r["id"] for r in rows] == ["a", "b", "c", "d", "e"]
    assert rows[1]["extra"] == [1, 2]
    for row in rows:
        assert {"is_refusal", "score", "strategy", "label3", "patterns", "lang"} <= row.keys()
    assert rows[0]["is_refusal"] is True
    assert rows[1]["is_refusal"] is False
    assert rows[2]["decided_by"] == "refusal_field"
    assert rows[3]["decided_by"] == "empty"
    assert rows[0]["patterns"][0] == {
        "pattern": "direct_refusal",
        "sentence": "Sorry, I can't help.",
    }


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"prompt": "hi"}', "missing the 'response' field"),
        ('{"response": 42}', "'response' must be a string or null"),
        ('{"response": "ok", "messages": "hi"}', "'messages' must be a list"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_no_output_is_left(
    tmp_path: Path, detector: Detector, line: str, message: str
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [{"response": "fine"}, "", line])
    target = tmp_path / "out.jsonl"
    with pytest.raises(BatchError, match=message) as error:
        detect_file(source, target, detector=detector, progress=False)
    assert f"{source}:3:" in str(error.value)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == [source]


def test_a_missing_input_file_is_a_clear_error(tmp_path: Path, detector: Detector) -> None:
    with pytest.raises(BatchError, match="No such file"):
        detect_file(tmp_path / "absent.jsonl", tmp_path / "out.jsonl", detector=detector)


class CountingDetector:
    """Records the largest batch it was handed, delegating the work."""

    def __init__(self, inner: Detector) -> None:
        self.inner = inner
        self.largest = 0

    def detect_batch(self, items: Sequence[tuple[str, str]]) -> list[Detection]:
        self.largest = max(self.largest, len(items))
        return self.inner.detect_batch(items)

    def detect(self, *args: object, **kwargs: object) -> Detection:
        return self.inner.detect(*args, **kwargs)  # type: ignore[arg-type]


def test_ten_thousand_lines_stream_through_in_bounded_batches(
    tmp_path: Path, detector: Detector
) -> None:
    replies = ["Paris is the capital of France.", "I'm sorry, but I can't help with that."]
    source = write_lines(
        tmp_path / "in.jsonl",
        [{"n": i, "prompt": "q", "response": replies[i % 2]} for i in range(10_000)],
    )
    counting = CountingDetector(detector)
    target = tmp_path / "out.jsonl"
    count = detect_file(source, target, detector=counting, batch_size=100, progress=False)  # type: ignore[arg-type]
    assert count == 10_000
    assert counting.largest <= 100
    rows = read_lines(target)
    assert [r["n"] for r in rows[:3]] == [0, 1, 2]
    assert sum(bool(r["is_refusal"]) for r in rows) == 5_000


def test_the_command_line_labels_a_file_and_rejects_a_bad_one(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write_lines(tmp_path / "good.jsonl", [{"prompt": "hi", "response": "Hello there!"}])
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["detect", "--input", str(good), "--output", str(out), "--no-embeddings"]
    )
    assert result.exit_code == 0, result.output
    assert read_lines(out)[0]["is_refusal"] is False
    bad = write_lines(tmp_path / "bad.jsonl", [{"response": "ok"}, "{oops"])
    result = runner.invoke(
        app, ["detect", "--input", str(bad), "--output", str(tmp_path / "x.jsonl")]
    )
    assert result.exit_code == 1
    assert f"{bad}:2: not valid JSON" in result.output
    assert "Traceback" not in result.output
