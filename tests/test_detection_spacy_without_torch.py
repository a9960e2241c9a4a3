"""The detector, embeddings included, runs without loading torch; torch itself still imports."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from guardrail.detection import Detector
detector = Detector()
detector.detect("I can't help with that.", prompt="a story")
assert detector.encoder(["Sure, here is a short story."]).shape == (1, 384)
assert "torch" not in sys.modules, "torch was loaded"
import torch
assert torch.ones(1).item() == 1.0
"""

ALREADY_LOADED = """
import torch
import guardrail.detection
import thinc.compat
assert thinc.compat.has_torch, "torch was hidden although the program had loaded it"
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_detector_never_loads_torch() -> None:
    result = run(CHECK)
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_program_that_loaded_torch_keeps_thinc_s_torch_support() -> None:
    result = run(ALREADY_LOADED)
    assert result.returncode == 0, result.stderr[-2000:]
