"""Hot reload: edits take effect; broken edits never do (the last good set stays, logged)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from guardrail.policies import PolicyError, PolicyStore

BASE = """\
templates:
  en:
    partial_compliance:
      acknowledge_general: [Here is the general picture.]
      boundary: [I'll leave out the specifics.]
policies:
  - {name: first, action: partial_compliance, priority: %d}
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_reload_applies_changes_and_keeps_last_good_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policies.yaml"
    path.write_text(BASE % 1)
    clock = FakeClock()
    store = PolicyStore(tmp_path, interval=2.0, clock=clock)
    original = store.current
    assert original.policies[0].priority == 1

    path.write_text(BASE % 7)
    assert store.current is original, "checked no sooner than the interval"
    clock.now = 3.0
    assert store.current.policies[0].priority == 7
    good = store.current

    path.write_text(BASE.replace("partial_compliance, priority", "nonsense, priority") % 9)
    clock.now = 6.0
    with caplog.at_level(logging.WARNING, logger="guardrail.policies"):
        assert store.current is good
    assert store.last_error is not None
    assert "keeping version" in caplog.text and "policies[0].action" in caplog.text

    caplog.clear()
    clock.now = 9.0
    with caplog.at_level(logging.WARNING, logger="guardrail.policies"):
        assert store.current is good
    assert caplog.text == "", "an unchanged broken file is reported once"

    path.write_text(BASE % 3)
    clock.now = 12.0
    assert store.current.policies[0].priority == 3
    assert store.last_error is None


def test_added_file_is_noticed_and_disabled_reload_never_looks(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BASE % 1)
    clock = FakeClock()
    live = PolicyStore(tmp_path, interval=0.0, clock=clock)
    frozen = PolicyStore(tmp_path, interval=None, clock=clock)
    (tmp_path / "b.yaml").write_text("policies:\n  - {name: second, action: partial_compliance}\n")
    assert [p.name for p in live.current.policies] == ["first", "second"]
    assert [p.name for p in frozen.current.policies] == ["first"]


def test_first_load_failure_raises(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("policies:\n  - {name: x}\n")
    with pytest.raises(PolicyError, match="Field required"):
        PolicyStore(tmp_path)
