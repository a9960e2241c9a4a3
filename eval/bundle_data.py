"""Rebuild the bundled benchmark data in ``eval/data/`` from the upstream dataset copies.

Kept in the repository so the bundle is reproducible: every file is either copied byte for byte
or reduced to the columns the benchmark reads, and ``eval/data/DATA_LICENSES.md`` names where each
came from. Run ``python -m eval.bundle_data SOURCE_DIR`` where ``SOURCE_DIR`` holds the upstream
folders (``xstest/``, ``or-bench/``, ``coconot/``, ``multijail/``, ``k-overrefusal/``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from eval.datasets import DATA_DIR

XSTEST_MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")

COPIES: tuple[tuple[str, str], ...] = (
    ("xstest/xstest_prompts.csv", "xstest/xstest_prompts.csv"),
    *(
        (
            f"xstest/model_completions/xstest_v2_completions_{model}.csv",
            f"xstest/xstest_v2_completions_{model}.csv",
        )
        for model in XSTEST_MODELS
    ),
    ("xstest/LICENSE", "licenses/xstest-CC-BY-4.0.txt"),
    ("or-bench/or-bench-hard-1k_en_ko.jsonl", "or-bench/or-bench-hard-1k_en_ko.jsonl"),
    ("coconot/data/coconot_eval.jsonl", "coconot/coconot_eval.jsonl"),
    ("coconot/data/coconot_contrast_eval.jsonl", "coconot/coconot_contrast_eval.jsonl"),
    ("coconot/LICENSE", "licenses/coconot-MIT.txt"),
    ("multijail/MultiJail.csv", "multijail/MultiJail.csv"),
    ("multijail/LICENSE", "licenses/multijail-MIT.txt"),
    ("k-overrefusal/merged_dataset_v2.jsonl", "k-overrefusal/merged_dataset_v2.jsonl"),
    ("k-overrefusal/LICENSE", "licenses/k-overrefusal-MIT.txt"),
)

PREF_SOURCE = "coconot/data/coconot_pref.jsonl"
PREF_TARGET = "coconot/coconot_pref_rejected.jsonl"
PREF_COLUMNS = ("id", "category", "subcategory", "prompt", "rejected", "rejected_model")
PREF_DROPPED_SUBCATEGORIES = frozenset({"false presuppositions"})
"""Their rejected replies are mostly wrong answers to a true premise, not refusals."""


def bundle(source: Path, target: Path = DATA_DIR) -> list[Path]:
    """Copy or reduce each bundled file from ``source`` into ``target``; return the paths."""
    written: list[Path] = []
    for src, dst in COPIES:
        out = target / dst
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / src, out)
        written.append(out)
    written.append(_reduce_pref(source / PREF_SOURCE, target / PREF_TARGET))
    return written


def _reduce_pref(src: Path, dst: Path) -> Path:
    """Keep only the over-refusal-relevant rows and the recorded (rejected) reply."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with src.open(encoding="utf-8") as lines, dst.open("w", encoding="utf-8") as out:
        for line in lines:
            row = json.loads(line)
            if row["subcategory"] in PREF_DROPPED_SUBCATEGORIES:
                continue
            reduced = {column: row[column] for column in PREF_COLUMNS}
            out.write(json.dumps(reduced, ensure_ascii=False) + "\n")
    return dst


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m eval.bundle_data SOURCE_DIR")
    for path in bundle(Path(sys.argv[1])):
        print(path)
