"""Core settings defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardrail.settings import default_cache_dir


def test_the_cache_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "guardrail"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")
    assert default_cache_dir() == Path.home() / ".cache" / "guardrail"
