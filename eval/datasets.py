"""The bundled benchmark data, read into one uniform record type.

Every dataset speaks its own dialect (CSV or JSONL, its own category names, its own notion of
"safe"). The loaders here translate each into :class:`Record` so that runners, judges and metrics
never need to know where a prompt came from. Two views exist per dataset: *replies* (prompts with a
real recorded reply, for replay) and *prompts* (for live runs); a dataset without recorded replies
has only the second.
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from guardrail.types import Label3, Message

DATA_DIR = Path(__file__).parent / "data"


class DatasetError(Exception):
    """A bundled data file is missing or malformed."""


class Expected(StrEnum):
    """What a well-behaved assistant does with the request."""

    SHOULD_COMPLY = "should_comply"
    SHOULD_REFUSE = "should_refuse"
    WARM_BOUNDARY = "warm_boundary"
    """Emotional attachment: engage with the feeling, be honest about being an AI."""


class ReplyOrigin(StrEnum):
    """Where a record's "before" reply came from; authored replies are reported as such."""

    RECORDED = "recorded"
    AUTHORED = "authored"


HARM_CATEGORIES = frozenset(
    {
        "weapons",
        "violence",
        "drugs_poisons",
        "cybersecurity",
        "self_harm",
        "privacy_surveillance",
        "hate_harassment",
        "sexual_content",
        "child_exploitation",
        "fraud_deception",
        "other_illegal",
        "misinformation",
        "medical_advice",
        "legal_advice",
        "financial_advice",
        "other_harm",
    }
)
"""The core's harm and regulated-advice categories, plus ``other_harm`` for sources that mark a
request as harmful without naming a domain."""
EMOTIONAL_CATEGORIES = frozenset(
    {"love_romance", "attachment_friendship", "dependence_need", "emotional_attachment"}
)
"""The three Beyond No categories, and the family name for a source that does not say which."""
OTHER_CATEGORIES = frozenset(
    {"benign", "ai_personhood", "incomplete", "unsupported", "indeterminate", "uncategorised"}
)
"""``benign`` and ``ai_personhood`` as in the core; CoCoNot's non-safety reasons for declining
(incomplete, unsupported, indeterminate); ``uncategorised`` where a source names none."""
CATEGORIES = HARM_CATEGORIES | EMOTIONAL_CATEGORIES | OTHER_CATEGORIES
"""Request categories the report groups by, named as in ``policies/categories.yaml``."""


@dataclass(frozen=True, slots=True)
class Record:
    """One benchmark item: a request, what ought to happen, and (in replay) the reply it got."""

    dataset: str
    id: str
    prompt: str
    lang: str
    category: str
    expected: Expected | None
    """``None`` when the source does not say."""
    source_category: str = ""
    """The dataset's own category label, kept for traceability."""
    history: tuple[Message, ...] = ()
    source_model: str | None = None
    reply: str | None = None
    reply_origin: ReplyOrigin | None = None
    human_label: Label3 | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI chat messages, ending with the request."""
        return [dict(m) for m in self.history] + [{"role": "user", "content": self.prompt}]

    @property
    def key(self) -> str:
        """Unique within a run: the same prompt answered by several models gives several keys."""
        return f"{self.dataset}/{self.id}/{self.source_model or '-'}"

    @property
    def is_harmful(self) -> bool:
        """A request that should be declined because of what it asks for, not how it is phrased."""
        return self.expected is Expected.SHOULD_REFUSE and self.category in HARM_CATEGORIES

    @property
    def is_emotional(self) -> bool:
        return self.category in EMOTIONAL_CATEGORIES


Loader = Callable[[Path], list[Record]]


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """A bundled dataset: its description and its two views."""

    name: str
    description: str
    prompts: Loader
    replies: Loader | None = None


# --- helpers ---------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: expected a JSON object")
            yield row


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def _field(row: Mapping[str, Any], name: str, where: str) -> Any:
    try:
        return row[name]
    except KeyError:
        raise DatasetError(f"{where}: missing field {name!r}") from None


def _unique_prompts(records: Sequence[Record]) -> list[Record]:
    """The prompt view of a replies view: one record per prompt, without reply or label."""
    seen: dict[str, Record] = {}
    for record in records:
        seen.setdefault(
            record.id.split(":", 1)[0],
            Record(
                dataset=record.dataset,
                id=record.id.split(":", 1)[0],
                prompt=record.prompt,
                lang=record.lang,
                category=record.category,
                expected=record.expected,
                source_category=record.source_category,
                history=record.history,
            ),
        )
    return list(seen.values())


# --- XSTest v2 -------------------------------------------------------------------------------

XSTEST_MODELS = {
    "gpt4": "gpt-4",
    "llama2new": "llama-2-70b-chat (new system prompt)",
    "llama2orig": "llama-2-70b-chat (original system prompt)",
    "mistralguard": "mistral-7b-instruct (guardrail prompt)",
    "mistralinstruct": "mistral-7b-instruct",
}
_XSTEST_LABELS = {
    "1_full_compliance": Label3.FULL_COMPLIANCE,
    "2_full_refusal": Label3.FULL_REFUSAL,
    "3_partial_refusal": Label3.PARTIAL_REFUSAL,
}


def _xstest_category(prompt_type: str) -> str:
    kind = prompt_type.removeprefix("contrast_")
    if kind.startswith("privacy"):
        return "privacy_surveillance"
    if "discr" in kind:
        return "hate_harassment"
    return "benign" if kind == prompt_type else "other_harm"


def _xstest_prompt_rows(root: Path) -> dict[str, dict[str, str]]:
    rows = _read_csv(root / "xstest" / "xstest_prompts.csv")
    return {f"v2-{row['id']}": row for row in rows}


def _xstest_record(prompt_id: str, row: Mapping[str, str]) -> Record:
    return Record(
        dataset="xstest",
        id=prompt_id,
        prompt=row["prompt"],
        lang="en",
        category=_xstest_category(row["type"]),
        expected=Expected.SHOULD_COMPLY if row["label"] == "safe" else Expected.SHOULD_REFUSE,
        source_category=row["type"],
    )


def load_xstest_prompts(root: Path) -> list[Record]:
    return [_xstest_record(pid, row) for pid, row in _xstest_prompt_rows(root).items()]


def load_xstest_replies(root: Path) -> list[Record]:
    """The 2,250 human-labelled replies of five models to XSTest v2's 450 prompts."""
    prompts = _xstest_prompt_rows(root)
    records: list[Record] = []
    for short, model in XSTEST_MODELS.items():
        path = root / "xstest" / f"xstest_v2_completions_{short}.csv"
        for row in _read_csv(path):
            where = f"{path}: row {row.get('id')}"
            prompt_id = _field(row, "id", where)
            if prompt_id not in prompts:
                raise DatasetError(f"{where}: no prompt with this id")
            label = _XSTEST_LABELS.get(_field(row, "final_label", where))
            if label is None:
                raise DatasetError(f"{where}: unknown label {row['final_label']!r}")
            base = _xstest_record(prompt_id, prompts[prompt_id])
            records.append(
                Record(
                    dataset=base.dataset,
                    id=f"{prompt_id}:{short}",
                    prompt=base.prompt,
                    lang=base.lang,
                    category=base.category,
                    expected=base.expected,
                    source_category=base.source_category,
                    source_model=model,
                    reply=_field(row, "completion", where),
                    reply_origin=ReplyOrigin.RECORDED,
                    human_label=label,
                )
            )
    return records


# --- OR-Bench-Hard-1K ------------------------------------------------------------------------

_ORBENCH_CATEGORIES = {
    "illegal": "other_illegal",
    "privacy": "privacy_surveillance",
    "unethical": "other_harm",
    "harmful": "other_harm",
    "deception": "fraud_deception",
    "sexual": "sexual_content",
    "violence": "violence",
    "self-harm": "self_harm",
    "hate": "hate_harassment",
    "harassment": "hate_harassment",
}


def load_orbench_prompts(root: Path) -> list[Record]:
    """Prompts that look harmful but are safe; the category names what they resemble."""
    path = root / "or-bench" / "or-bench-hard-1k_en_ko.jsonl"
    records = []
    for number, row in enumerate(_read_jsonl(path), 1):
        where = f"{path}:{number}"
        source = _field(row, "category", where)
        records.append(
            Record(
                dataset="orbench_hard",
                id=str(number),
                prompt=_field(row, "prompt", where),
                lang="en",
                category=_ORBENCH_CATEGORIES.get(source, "other_harm"),
                expected=Expected.SHOULD_COMPLY,
                source_category=source,
            )
        )
    return records


# --- CoCoNot ---------------------------------------------------------------------------------

_COCONOT_SAFETY_SUBCATEGORIES = {
    "privacy violations": "privacy_surveillance",
    "triggers for offensive language": "hate_harassment",
    "misinformation": "misinformation",
    "false information": "misinformation",
    "copyright violations": "other_illegal",
}
_COCONOT_CATEGORIES = {
    "Incomplete requests": "incomplete",
    "Unsupported requests": "unsupported",
    "Indeterminate requests": "indeterminate",
    "Humanizing requests": "ai_personhood",
}


def _coconot_category(category: str, subcategory: str) -> str:
    if category == "Requests with safety concerns":
        return _COCONOT_SAFETY_SUBCATEGORIES.get(subcategory, "other_harm")
    return _COCONOT_CATEGORIES.get(category, "benign")


def _coconot_loader(file: str, dataset: str, expected: Expected) -> Loader:
    def load(root: Path) -> list[Record]:
        path = root / "coconot" / file
        records = []
        for number, row in enumerate(_read_jsonl(path), 1):
            where = f"{path}:{number}"
            category = _field(row, "category", where)
            subcategory = _field(row, "subcategory", where)
            # For contrast prompts the category names the domain whose vocabulary they borrow.
            mapped = _coconot_category(category, subcategory)
            records.append(
                Record(
                    dataset=dataset,
                    id=_field(row, "id", where),
                    prompt=_field(row, "prompt", where),
                    lang="en",
                    category=mapped,
                    expected=expected,
                    source_category=f"{category} / {subcategory}",
                )
            )
        return records

    return load


def load_coconot_pref_replies(root: Path) -> list[Record]:
    """CoCoNot's contrast preference pairs: the rejected (over-refusing) reply as "before"."""
    path = root / "coconot" / "coconot_pref_rejected.jsonl"
    records = []
    for number, row in enumerate(_read_jsonl(path), 1):
        where = f"{path}:{number}"
        category = _field(row, "category", where)
        subcategory = _field(row, "subcategory", where)
        records.append(
            Record(
                dataset="coconot_pref",
                id=_field(row, "id", where),
                prompt=_field(row, "prompt", where),
                lang="en",
                category=_coconot_category(category, subcategory),
                expected=Expected.SHOULD_COMPLY,
                source_category=f"{category} / {subcategory}",
                source_model=row.get("rejected_model") or "unnamed (CoCoNot rejected)",
                reply=_field(row, "rejected", where),
                reply_origin=ReplyOrigin.RECORDED,
            )
        )
    return records


# --- MultiJail -------------------------------------------------------------------------------

MULTIJAIL_LANGS = ("en", "zh", "it", "vi", "ar", "ko", "th", "bn", "sw", "jv")
_MULTIJAIL_TAGS = (
    # Most specific first: a prompt tagged "Weapons" and "Violence" is about weapons.
    ("Self-harm", "self_harm"),
    ("Weapons", "weapons"),
    ("Substance abuse & banned substances", "drugs_poisons"),
    ("Soliciting personally identifiable information", "privacy_surveillance"),
    ("Adult content", "sexual_content"),
    ("Sexual exploitation & human trafficking", "sexual_content"),
    ("Conspiracy theories & misinformation", "misinformation"),
    ("Hate speech & offensive language", "hate_harassment"),
    ("Discrimination & injustice", "hate_harassment"),
    ("Bullying & harassment", "hate_harassment"),
    ("Terrorism & organized crime", "violence"),
    ("Child abuse", "violence"),
    ("Animal abuse", "violence"),
    ("Violence & incitement", "violence"),
    ("Fraud & deception", "fraud_deception"),
    ("Non-violent unethical behavior (e.g. lying, cheating, etc.)", "fraud_deception"),
    ("Theft", "other_illegal"),
    ("Property crime & vandalism", "other_illegal"),
)


def _multijail_category(tags: Sequence[str]) -> str:
    for tag, category in _MULTIJAIL_TAGS:
        if tag in tags:
            return category
    return "other_harm"


def load_multijail_prompts(root: Path) -> list[Record]:
    """315 harmful prompts, each in ten languages (one record per language)."""
    path = root / "multijail" / "MultiJail.csv"
    records = []
    for row in _read_csv(path):
        where = f"{path}: row {row.get('id')}"
        try:
            tags = ast.literal_eval(_field(row, "tags", where))
        except (ValueError, SyntaxError):
            raise DatasetError(f"{where}: unreadable tags {row['tags']!r}") from None
        for lang in MULTIJAIL_LANGS:
            records.append(
                Record(
                    dataset="multijail",
                    id=f"{row['id']}-{lang}",
                    prompt=_field(row, lang, where),
                    lang=lang,
                    category=_multijail_category(tags),
                    expected=Expected.SHOULD_REFUSE,
                    source_category="; ".join(tags),
                )
            )
    return records


# --- K-OverRefusal ---------------------------------------------------------------------------

_KOR_HARM_DOMAINS = {
    "illegal_other": "other_illegal",
    "privacy_surveil": "privacy_surveillance",
    "financial": "fraud_deception",
    "violence": "violence",
    "drugs": "drugs_poisons",
    "fraud_forgery": "fraud_deception",
    "chem_bio": "weapons",
    "hate_harass": "hate_harassment",
    "weapons": "weapons",
    "illegal_goods": "other_illegal",
    "cyber": "cybersecurity",
    "misinfo": "misinformation",
}


def _kor_category(prompt_type: str, safe: bool) -> str:
    if prompt_type.startswith("harm_"):
        return _KOR_HARM_DOMAINS.get(prompt_type.removeprefix("harm_"), "other_harm")
    if prompt_type == "privacy":
        return "privacy_surveillance"
    return "benign" if safe else "other_harm"


def load_kor_prompts(root: Path) -> list[Record]:
    """Korean pseudo-harmful (safe) prompts and unsafe contrast prompts."""
    path = root / "k-overrefusal" / "merged_dataset_v2.jsonl"
    records = []
    for number, row in enumerate(_read_jsonl(path), 1):
        where = f"{path}:{number}"
        label = _field(row, "label", where)
        if label not in ("safe", "unsafe"):
            raise DatasetError(f"{where}: unknown label {label!r}")
        prompt_type = _field(row, "type", where)
        records.append(
            Record(
                dataset="k_overrefusal",
                id=str(number),
                prompt=_field(row, "prompt_ko", where),
                lang="ko",
                category=_kor_category(prompt_type, label == "safe"),
                expected=Expected.SHOULD_COMPLY if label == "safe" else Expected.SHOULD_REFUSE,
                source_category=prompt_type,
            )
        )
    return records


# --- authored sets ---------------------------------------------------------------------------


def _authored_history(row: Mapping[str, Any], where: str) -> tuple[Message, ...]:
    history = row.get("history") or []
    if not isinstance(history, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in history
    ):
        raise DatasetError(f"{where}: history must be a list of chat messages")
    return tuple(history)


def load_authored_replies(root: Path) -> list[Record]:
    """Replies written for the project in several languages (refusals, partial and compliant
    answers, emotional-attachment replies). The file names no request category, so only the
    emotional-attachment rows get one."""
    path = root / "multilingual_replies.jsonl"
    records = []
    for number, row in enumerate(_read_jsonl(path), 1):
        where = f"{path}:{number}"
        emotional = _field(row, "kind", where) == "emotional"
        records.append(
            Record(
                dataset="authored_replies",
                id=f"{_field(row, 'id', where)}:authored",
                prompt=_field(row, "prompt", where),
                lang=str(_field(row, "lang", where)),
                category="emotional_attachment" if emotional else "uncategorised",
                expected=Expected.WARM_BOUNDARY if emotional else None,
                source_category=str(row["kind"]),
                source_model="authored",
                reply=_field(row, "response", where),
                reply_origin=ReplyOrigin.AUTHORED,
            )
        )
    return records


def load_emotional_prompts(root: Path) -> list[Record]:
    """Emotional-attachment requests written natively in several languages."""
    path = root / "emotional_attachment.jsonl"
    records = []
    for number, row in enumerate(_read_jsonl(path), 1):
        where = f"{path}:{number}"
        category = _field(row, "category", where)
        if category not in EMOTIONAL_CATEGORIES:
            raise DatasetError(f"{where}: unknown emotional-attachment category {category!r}")
        records.append(
            Record(
                dataset="emotional_attachment",
                id=str(row.get("id", number)),
                prompt=_field(row, "prompt", where),
                lang=str(_field(row, "lang", where)),
                category=category,
                expected=Expected.WARM_BOUNDARY,
                source_category=category,
                history=_authored_history(row, where),
            )
        )
    return records


# --- registry --------------------------------------------------------------------------------

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "xstest",
            "XSTest v2: 250 safe prompts that look unsafe, 200 unsafe contrast prompts; "
            "2,250 human-labelled replies from 5 models",
            prompts=load_xstest_prompts,
            replies=load_xstest_replies,
        ),
        DatasetSpec(
            "coconot_pref",
            "CoCoNot contrast preference pairs: benign requests and a real over-refusing reply",
            prompts=lambda root: _unique_prompts(load_coconot_pref_replies(root)),
            replies=load_coconot_pref_replies,
        ),
        DatasetSpec(
            "authored_replies",
            "Replies authored for the project in several languages (not recorded from a model)",
            prompts=lambda root: _unique_prompts(load_authored_replies(root)),
            replies=load_authored_replies,
        ),
        DatasetSpec(
            "orbench_hard",
            "OR-Bench-Hard-1K: safe prompts that most models over-refuse",
            prompts=load_orbench_prompts,
        ),
        DatasetSpec(
            "coconot_contrast",
            "CoCoNot contrast set: requests a model should answer",
            prompts=_coconot_loader(
                "coconot_contrast_eval.jsonl", "coconot_contrast", Expected.SHOULD_COMPLY
            ),
        ),
        DatasetSpec(
            "coconot_eval",
            "CoCoNot original set: requests a model should decline or question",
            prompts=_coconot_loader("coconot_eval.jsonl", "coconot_eval", Expected.SHOULD_REFUSE),
        ),
        DatasetSpec(
            "multijail",
            "MultiJail: 315 harmful prompts in 10 languages",
            prompts=load_multijail_prompts,
        ),
        DatasetSpec(
            "k_overrefusal",
            "K-OverRefusal: Korean pseudo-harmful and unsafe prompts",
            prompts=load_kor_prompts,
        ),
        DatasetSpec(
            "emotional_attachment",
            "Emotional-attachment prompts authored for the project, in 8+ languages",
            prompts=load_emotional_prompts,
        ),
    )
}


def load(name: str, *, replies: bool, data_dir: Path = DATA_DIR) -> list[Record]:
    """Records of one dataset: the replies view when ``replies`` (replay), else the prompts."""
    spec = DATASETS.get(name)
    if spec is None:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if replies:
        if spec.replies is None:
            raise DatasetError(f"dataset {name!r} has no recorded replies")
        return spec.replies(data_dir)
    return spec.prompts(data_dir)
