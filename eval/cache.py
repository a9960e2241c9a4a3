"""An append-only JSONL cache that lets an interrupted live run continue where it stopped.

Each finished call is appended and flushed at once, so killing the process loses at most the
calls in flight; a line cut short by the kill is skipped on the next start.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def cache_key(*parts: str) -> str:
    """A stable key for one call, e.g. ``cache_key(dataset, id, model, mode)``."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class ResponseCache:
    """Values by key, persisted in one JSONL file (``{"key": ..., "value": ...}`` per line)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.skipped_lines = 0
        self._values: dict[str, Any] = {}
        self._cut_short = False
        if path is not None and path.is_file():
            self._load(path)

    def _load(self, path: Path) -> None:
        data = path.read_bytes()
        self._cut_short = bool(data) and not data.endswith(b"\n")
        for line in data.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._values[entry["key"]] = entry["value"]
            except (json.JSONDecodeError, KeyError, TypeError):
                self.skipped_lines += 1

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str) -> Any | None:
        return self._values.get(key)

    def put(self, key: str, value: Any) -> None:
        self._values[key] = value
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            if self._cut_short:
                out.write("\n")
                self._cut_short = False
            out.write(json.dumps({"key": key, "value": value}, ensure_ascii=False) + "\n")
