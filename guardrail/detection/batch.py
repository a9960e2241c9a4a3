"""Label a JSONL file of replies, streaming: ``guardrail detect --input IN --output OUT``.

Each input line is a JSON object with ``response`` (a string, or null when the upstream gave no
text) and optionally ``prompt``, ``messages`` and ``refusal``; every other field is kept. Each
output line adds ``is_refusal``, ``score``, ``strategy``, ``label3``, ``patterns``, ``lang`` and
``decided_by``. Only one batch is in memory at a time, and the output appears (atomically) only
when every line was read, so a bad line never leaves half a file behind.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TextIO

from guardrail.detection.detector import Detector
from guardrail.types import Detection, last_user_text


class BatchError(ValueError):
    """An input line is not a usable record, or a file cannot be read or written."""


def detect_file(
    input_path: Path,
    output_path: Path,
    *,
    detector: Detector,
    batch_size: int = 64,
    progress: bool | None = None,
) -> int:
    """Write ``output_path`` from ``input_path``; return the number of records.

    ``progress=None`` shows a progress bar when standard error is a terminal.
    """
    if batch_size < 1:
        raise BatchError("batch size must be at least 1")
    show = sys.stderr.isatty() if progress is None else progress
    partial = output_path.with_name(output_path.name + ".partial")
    try:
        total = _count_lines(input_path) if show else None
        with (
            input_path.open(encoding="utf-8") as source,
            partial.open("w", encoding="utf-8") as sink,
            _progress(show, total) as advance,
        ):
            count = 0
            for batch in _batches(source, input_path, batch_size):
                for record, detection in zip(batch, _detect(detector, batch), strict=True):
                    sink.write(json.dumps({**record, **detection.to_dict()}, ensure_ascii=False))
                    sink.write("\n")
                count += len(batch)
                advance(len(batch))
        os.replace(partial, output_path)
    except OSError as exc:
        raise BatchError(str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise BatchError(f"{input_path}: not UTF-8 text: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    return count


def _batches(source: TextIO, path: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        batch.append(_record(line, path, number))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _record(line: str, path: Path, number: int) -> dict[str, Any]:
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BatchError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(record, dict):
        raise BatchError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "response" not in record:
        raise BatchError(f"{where}: missing the 'response' field")
    for field in ("response", "prompt", "refusal"):
        value = record.get(field)
        if value is not None and not isinstance(value, str):
            raise BatchError(f"{where}: '{field}' must be a string or null")
    messages = record.get("messages")
    if messages is not None and not (
        isinstance(messages, list) and all(isinstance(m, dict) for m in messages)
    ):
        raise BatchError(f"{where}: 'messages' must be a list of message objects")
    return record


def _detect(detector: Detector, batch: list[dict[str, Any]]) -> list[Detection]:
    """One embedding batch for the plain replies; refusal fields and empty replies go one by one."""
    results: dict[int, Detection] = {}
    plain: list[tuple[int, tuple[str, str]]] = []
    for index, record in enumerate(batch):
        prompt = record.get("prompt") or last_user_text(record.get("messages") or [])
        response, refusal = record.get("response"), record.get("refusal")
        if (refusal and refusal.strip()) or not (response and response.strip()):
            results[index] = detector.detect(response, prompt=prompt, refusal=refusal)
        else:
            plain.append((index, (prompt, response)))
    detections = detector.detect_batch([item for _, item in plain])
    for (index, _), detection in zip(plain, detections, strict=True):
        results[index] = detection
    return [results[i] for i in range(len(batch))]


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _progress(show: bool, total: int | None) -> AbstractContextManager[Any]:
    if not show:
        return nullcontext(lambda _n: None)
    return _RichProgress(total)


class _RichProgress:
    def __init__(self, total: int | None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task = self._progress.add_task("detecting", total=total)

    def __enter__(self) -> Any:
        self._progress.start()
        return lambda n: self._progress.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
