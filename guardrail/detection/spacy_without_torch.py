"""Import spaCy without thinc's PyTorch bridge, so the detector never loads torch.

thinc, under spaCy, imports torch as soon as it is installed (it is: sentence-transformers needs
it), and torch alone keeps about 230 MB resident. The rule matcher uses spaCy's tokenizers and
phrase matchers, which never touch it. Hiding torch while spaCy is first imported leaves thinc's
torch layers unavailable in the process; a program that needs them (spacy-transformers, say)
imports spacy or torch before guardrail, and then nothing is hidden.
"""

from __future__ import annotations

import importlib
import sys


def import_spacy() -> None:
    """Import spaCy, with torch hidden unless torch or spaCy is already loaded."""
    if "spacy" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes `import torch` fail
    try:
        importlib.import_module("spacy")
    finally:
        del sys.modules["torch"]


import_spacy()
