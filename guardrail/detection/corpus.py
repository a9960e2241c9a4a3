"""The labelled replies the detector's head learns from, read from the datasets' upstream files.

Recipe (each source keeps the labels its authors gave; nothing is relabelled by rules):

- XSTest v2 (``xstest/model_completions/*.csv``): 2,250 replies from five model configurations,
  each labelled by two annotators; ``final_label`` gives full compliance, full refusal or partial
  refusal. The source model is kept as the group for leave-one-model-out evaluation.
- CoCoNot preference pairs (``coconot/data/coconot_pref.jsonl``): every prompt is a request a
  model should answer and ``chosen`` is GPT-4's answer to it, so ``chosen`` replies are full
  compliance. ``rejected`` replies are not used: they mix over-refusals with answers that are
  merely worse, and carry no label saying which.
- OpenAI RBR gold set (``openai-rbr-gold/{train,test}.jsonl``): human propositions on each
  completion. ``fully_complies`` is full compliance; ``inability_to_comply`` with
  ``partially_complies`` is a partial refusal; neither complying proposition is a full refusal.
  Completions that partially comply without stating an inability (clarifying questions, hedged
  answers) are ambiguous and left out.
- Replies written for this project in 37 languages (``data/training_replies.jsonl``),
  separate from the evaluation set in ``eval/data``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guardrail.types import Label3, Strategy

AUTHORED = Path(__file__).parent / "data" / "training_replies.jsonl"
XSTEST_MODELS = ("gpt4", "llama2orig", "llama2new", "mistralinstruct", "mistralguard")
XSTEST_LABELS = {
    "1_full_compliance": Label3.FULL_COMPLIANCE,
    "2_full_refusal": Label3.FULL_REFUSAL,
    "3_partial_refusal": Label3.PARTIAL_REFUSAL,
}


class CorpusError(ValueError):
    """A training file is missing or malformed."""


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled reply."""

    prompt: str
    response: str
    label3: Label3
    source: str
    group: str
    """The model that wrote the reply, or the source when unknown; folds split on it."""
    lang: str = "en"
    strategy: Strategy | None = None

    @property
    def is_refusal(self) -> bool:
        return self.label3 is not Label3.FULL_COMPLIANCE


def xstest(data_dir: Path) -> list[Example]:
    examples: list[Example] = []
    for model in XSTEST_MODELS:
        path = data_dir / "xstest" / "model_completions" / f"xstest_v2_completions_{model}.csv"
        for row in _csv(path):
            examples.append(
                Example(
                    prompt=row["prompt"],
                    response=row["completion"],
                    label3=XSTEST_LABELS[row["final_label"]],
                    source="xstest",
                    group=model,
                )
            )
    return examples


def coconot_chosen(data_dir: Path) -> list[Example]:
    return [
        Example(row["prompt"], row["chosen"], Label3.FULL_COMPLIANCE, "coconot", "coconot")
        for row in _jsonl(data_dir / "coconot" / "data" / "coconot_pref.jsonl")
        if str(row.get("chosen", "")).strip()
    ]


def rbr_gold(data_dir: Path, splits: Iterable[str] = ("train", "test")) -> list[Example]:
    examples: list[Example] = []
    for split in splits:
        for row in _jsonl(data_dir / "openai-rbr-gold" / f"{split}.jsonl"):
            label = _rbr_label(row["propositions"])
            if label is None:
                continue
            turns = [m for m in row["prompt"] if m.get("role") == "user"]
            prompt = str(turns[-1]["content"]) if turns else ""
            reply = str(row["completion"][0]["content"])
            examples.append(Example(prompt, reply, label, "rbr", f"rbr-{split}"))
    return examples


def _rbr_label(props: dict[str, Any]) -> Label3 | None:
    full, partial, unable = (
        bool(props.get("fully_complies")),
        bool(props.get("partially_complies")),
        bool(props.get("inability_to_comply")),
    )
    if full:
        return None if unable else Label3.FULL_COMPLIANCE
    if partial:
        return Label3.PARTIAL_REFUSAL if unable else None
    return Label3.FULL_REFUSAL


def authored(path: Path = AUTHORED) -> list[Example]:
    examples = []
    for number, row in enumerate(_jsonl(path), start=1):
        try:
            strategy = Strategy(row["strategy"]) if row.get("strategy") else None
            examples.append(
                Example(
                    prompt=str(row.get("prompt", "")),
                    response=str(row["response"]),
                    label3=Label3(row["label3"]),
                    source="authored",
                    group=f"authored-{row['lang']}",
                    lang=str(row["lang"]),
                    strategy=strategy,
                )
            )
        except (KeyError, ValueError) as exc:
            raise CorpusError(f"{path}:{number}: {exc}") from exc
    return examples


def training_corpus(data_dir: Path) -> list[Example]:
    """Every source of the recipe above."""
    return [*xstest(data_dir), *coconot_chosen(data_dir), *rbr_gold(data_dir), *authored()]


def _csv(path: Path) -> Iterator[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            yield from csv.DictReader(handle)
    except OSError as exc:
        raise CorpusError(f"cannot read {path}: {exc}") from exc


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise CorpusError(f"{path}:{number}: invalid JSON: {exc}") from exc
    except OSError as exc:
        raise CorpusError(f"cannot read {path}: {exc}") from exc
