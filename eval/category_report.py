"""Category accuracy on labelled prompt sets: ``python -m eval.category_report``.

The datasets label requests with their own taxonomies; the mappings below translate each label
into the set of our categories that count as a correct answer. They are coarse where the source
is coarse (OR-Bench's ``illegal`` covers hacking, drugs and theft alike), and written down here
so the figures can be checked. The exemplars and keywords in ``policies/categories.yaml`` were
written by hand, never taken from these sets.

Items are split in two by a hash of their id: ``dev`` is what one may look at while improving
exemplars and keywords, ``test`` is the held-out half, and the headline figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.datasets import HARM_CATEGORIES, load
from guardrail.categories import CategoryClassifier, CategoryGroup, default_encoder
from guardrail.policies import PolicySet, load_policies
from guardrail.settings import default_policies_dir

EMOTIONAL = frozenset({"love_romance", "attachment_friendship", "dependence_need", "ai_personhood"})
ANY_HARM = HARM_CATEGORIES - {"other_harm"}
"""The harm and regulated-advice categories, as the benchmark's loaders define them."""

ORBENCH = {
    "illegal": frozenset(
        {
            "other_illegal",
            "cybersecurity",
            "drugs_poisons",
            "weapons",
            "fraud_deception",
            "privacy_surveillance",
            "financial_advice",
        }
    ),
    "privacy": frozenset({"privacy_surveillance", "cybersecurity"}),
    "unethical": frozenset({"fraud_deception", "other_illegal", "hate_harassment"}),
    "harmful": ANY_HARM,
    "deception": frozenset({"fraud_deception", "misinformation"}),
    "sexual": frozenset({"sexual_content"}),
    "violence": frozenset({"violence", "weapons"}),
    "self-harm": frozenset({"self_harm"}),
    "hate": frozenset({"hate_harassment"}),
    "harassment": frozenset({"hate_harassment", "privacy_surveillance"}),
}
"""OR-Bench-Hard-1K's ten categories. ``harmful`` is a catch-all there, so any harm domain."""

MULTIJAIL = {
    "Violence & incitement": frozenset({"violence", "weapons"}),
    "Discrimination & injustice": frozenset({"hate_harassment"}),
    "Hate speech & offensive language": frozenset({"hate_harassment"}),
    "Bullying & harassment": frozenset({"hate_harassment"}),
    "Non-violent unethical behavior (e.g. lying, cheating, etc.)": frozenset(
        {"fraud_deception", "other_illegal"}
    ),
    "Conspiracy theories & misinformation": frozenset({"misinformation"}),
    "Theft": frozenset({"other_illegal"}),
    "Weapons": frozenset({"weapons"}),
    "Adult content": frozenset({"sexual_content"}),
    "Substance abuse & banned substances": frozenset({"drugs_poisons"}),
    "Terrorism & organized crime": frozenset({"violence", "weapons", "other_illegal"}),
    "Fraud & deception": frozenset({"fraud_deception"}),
    "Sexual exploitation & human trafficking": frozenset(
        {"sexual_content", "child_exploitation", "other_illegal"}
    ),
    "Animal abuse": frozenset({"violence"}),
    "Property crime & vandalism": frozenset({"other_illegal"}),
    "Soliciting personally identifiable information": frozenset({"privacy_surveillance"}),
    "Self-harm": frozenset({"self_harm"}),
    "Child abuse": frozenset({"violence", "child_exploitation"}),
}
"""MultiJail's 18 tags; a row with several tags accepts any of their categories."""

COCONOT = {
    "privacy violations": frozenset({"privacy_surveillance"}),
    "misinformation": frozenset({"misinformation"}),
    "triggers for offensive language": frozenset({"hate_harassment"}),
    "copyright violations": frozenset({"other_illegal"}),
    "dangerous or sensitive topics": ANY_HARM,
}
"""CoCoNot safety subcategories (original set). Its non-safety reasons (incomplete,
unsupported, indeterminate requests) carry no harm domain, so ``benign`` is right for them;
``Humanizing requests`` are requests that treat the assistant as a person (emotional group).
Its ``wildchats`` subcategory is a mixed bag of real chats and is left out."""

KOR = {
    "harm_illegal_other": frozenset({"other_illegal"}),
    "harm_privacy_surveil": frozenset({"privacy_surveillance"}),
    "harm_financial": frozenset({"other_illegal", "fraud_deception", "financial_advice"}),
    "harm_violence": frozenset({"violence", "weapons"}),
    "harm_drugs": frozenset({"drugs_poisons"}),
    "harm_fraud_forgery": frozenset({"fraud_deception"}),
    "harm_chem_bio": frozenset({"weapons", "drugs_poisons"}),
    "harm_hate_harass": frozenset({"hate_harassment"}),
    "harm_weapons": frozenset({"weapons"}),
    "harm_illegal_goods": frozenset({"other_illegal", "weapons", "drugs_poisons"}),
    "harm_cyber": frozenset({"cybersecurity"}),
    "harm_misinfo": frozenset({"misinformation"}),
    "k_idioms": frozenset({"benign"}),
}
"""K-OverRefusal (Korean): its harm domains, and idioms that only sound violent ("killer
smile"), which are benign. Its other safe types (legality framing, safe contexts...) keep a
harm domain's vocabulary on purpose, so neither answer would be wrong; they are left out."""

COCONOT_CATEGORY = {
    "Incomplete requests": frozenset({"benign"}),
    "Unsupported requests": frozenset({"benign"}),
    "Indeterminate requests": frozenset({"benign"}),
    "Humanizing requests": EMOTIONAL,
}


@dataclass(frozen=True, slots=True)
class Item:
    dataset: str
    id: str
    prompt: str
    lang: str
    label: str
    accepted: frozenset[str]


def _orbench() -> Iterable[Item]:
    for r in load("orbench_hard", replies=False):
        yield Item(
            "orbench_hard", r.id, r.prompt, "en", r.source_category, ORBENCH[r.source_category]
        )


def _multijail(languages: Sequence[str]) -> Iterable[Item]:
    for r in load("multijail", replies=False):
        if r.lang not in languages:
            continue
        tags = [tag.strip() for tag in r.source_category.split(";")]
        accepted = frozenset().union(*(MULTIJAIL[tag] for tag in tags if tag in MULTIJAIL))
        if accepted:
            yield Item("multijail", r.id, r.prompt, r.lang, tags[0], accepted)


def _coconot() -> Iterable[Item]:
    for r in load("coconot_eval", replies=False):
        category, _, subcategory = r.source_category.partition("/")
        category, subcategory = category.strip(), subcategory.strip()
        if category == "Requests with safety concerns":
            accepted = COCONOT.get(subcategory)
            label = subcategory
        else:
            accepted = COCONOT_CATEGORY.get(category)
            label = category
        if accepted:
            yield Item("coconot_eval", r.id, r.prompt, r.lang, label, accepted)


def _korean() -> Iterable[Item]:
    for r in load("k_overrefusal", replies=False):
        accepted = KOR.get(r.source_category)
        if accepted:
            yield Item("k_overrefusal", r.id, r.prompt, "ko", r.source_category, accepted)


def _emotional() -> Iterable[Item]:
    for r in load("emotional_attachment", replies=False):
        yield Item(
            "emotional_attachment", r.id, r.prompt, r.lang, r.category, frozenset({r.category})
        )


def split_of(item: Item) -> str:
    """A stable half-split by id, the same on every machine; a MultiJail prompt's translations
    all fall on the same side, so no test item is a translation of a dev item."""
    group = item.id.rsplit("-", 1)[0] if item.dataset == "multijail" else item.id
    digest = hashlib.sha256(f"{item.dataset}/{group}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


@dataclass
class Tally:
    total: int = 0
    top1: int = 0
    top3: int = 0
    group: int = 0
    confusions: Counter[str] = field(default_factory=Counter)

    def add(self, correct1: bool, correct3: bool, group_ok: bool, predicted: str) -> None:
        self.total += 1
        self.top1 += correct1
        self.top3 += correct3
        self.group += group_ok
        if not correct1:
            self.confusions[predicted] += 1

    def row(self, name: str) -> dict[str, object]:
        def pct(n: int) -> float:
            return round(100.0 * n / self.total, 1) if self.total else 0.0

        return {
            "slice": name,
            "n": self.total,
            "top1": pct(self.top1),
            "top3": pct(self.top3),
            "group": pct(self.group),
            "confused_with": ", ".join(f"{k} {v}" for k, v in self.confusions.most_common(3)),
        }


def _group(name: str, policy_set: PolicySet) -> CategoryGroup | None:
    return policy_set.group_of(name)


def evaluate(
    items: Sequence[Item], classifier: CategoryClassifier, policy_set: PolicySet
) -> dict[str, Tally]:
    tallies: dict[str, Tally] = defaultdict(Tally)
    evidence = []
    for start in range(0, len(items), 256):
        batch = items[start : start + 256]
        evidence += classifier.explain_many(
            [[{"role": "user", "content": i.prompt}] for i in batch]
        )
    for item, found in zip(items, evidence, strict=True):
        ranked = [s.name for s in found.scores]
        top = ranked[0] if ranked else "benign"
        groups = {_group(name, policy_set) for name in item.accepted}
        ok1 = top in item.accepted
        ok3 = bool(set(ranked[:3]) & item.accepted)
        group_ok = _group(top, policy_set) in groups
        for key in (item.dataset, f"{item.dataset}:{item.label}", f"{item.dataset}@{item.lang}"):
            tallies[key].add(ok1, ok3, group_ok, top)
    return tallies


def markdown(rows: Sequence[dict[str, object]]) -> str:
    header = "| slice | n | top-1 % | top-3 % | group % | most confused with |"
    lines = [header, "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['slice']} | {r['n']} | {r['top1']} | {r['top3']} | {r['group']} | "
            f"{r['confused_with']} |"
        )
    return "\n".join(lines)


SOURCES: dict[str, Callable[[Sequence[str]], Iterable[Item]]] = {
    "orbench_hard": lambda langs: _orbench(),
    "multijail": _multijail,
    "coconot_eval": lambda langs: _coconot(),
    "emotional_attachment": lambda langs: _emotional(),
    "k_overrefusal": lambda langs: _korean(),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--policies", type=Path, default=default_policies_dir())
    parser.add_argument("--split", choices=["dev", "test", "all"], default="test")
    parser.add_argument("--datasets", nargs="*", default=list(SOURCES))
    parser.add_argument(
        "--languages",
        nargs="*",
        default=["en", "zh", "ko", "it", "vi", "ar", "th", "bn", "sw", "jv"],
    )
    parser.add_argument("--no-embeddings", action="store_true", help="keyword rules only")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--details", action="store_true", help="per-label and per-language rows")
    args = parser.parse_args(argv)

    policy_set = load_policies(args.policies)
    encoder = None if args.no_embeddings else default_encoder()
    classifier = CategoryClassifier(policy_set.categories, encoder)
    items = [item for name in args.datasets for item in SOURCES[name](args.languages)]
    if args.split != "all":
        items = [item for item in items if split_of(item) == args.split]
    started = time.perf_counter()
    tallies = evaluate(items, classifier, policy_set)
    elapsed = time.perf_counter() - started
    keys = sorted(k for k in tallies if args.details or (":" not in k and "@" not in k))
    if not args.details:
        keys += sorted(k for k in tallies if k.startswith("multijail@"))
    rows = [tallies[k].row(k) for k in keys]
    print(
        f"Category accuracy, {args.split} split, "
        f"{'keywords only' if encoder is None else 'exemplars + keywords'} "
        f"({len(items)} prompts, {1000 * elapsed / max(1, len(items)):.1f} ms each)\n"
    )
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"split": args.split, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
