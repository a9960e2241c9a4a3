"""Load a directory of policy files into a :class:`PolicySet`, collecting every problem.

Files load in name order; all problems (YAML syntax, schema, cross-file references) are gathered
and raised together as one :class:`PolicyError` so ``guardrail policies check`` can list them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from guardrail.categories.spec import CategorySpec
from guardrail.policies.policyset import PolicySet
from guardrail.policies.problems import PolicyError, PolicyProblem
from guardrail.policies.schema import Policy, PolicyAction, PolicyFile, SlotTemplates
from guardrail.policies.yamlpos import ParsedYaml, YamlSyntaxError, parse_yaml

FALLBACK_LANGUAGE = "en"

REQUIRED_SLOTS: dict[PolicyAction, tuple[str, ...]] = {
    PolicyAction.PARTIAL_COMPLIANCE: ("acknowledge_general", "boundary"),
    PolicyAction.REDIRECT: ("acknowledge_general", "redirect"),
    PolicyAction.EMPATHETIC_BOUNDARY: ("validate", "ai_honesty", "offer", "connection"),
    PolicyAction.KEEP: ("acknowledge_general", "boundary"),
    PolicyAction.REGENERATE: ("acknowledge_general", "limit"),
    PolicyAction.BLOCK: ("message",),
}
"""Slots compose cannot do without; each needs wording in the fallback language at least."""

POLICY_SUFFIXES = (".yaml", ".yml")


def policy_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in POLICY_SUFFIXES and p.is_file())


@dataclass
class _Loaded:
    path: str
    parsed: ParsedYaml
    content: PolicyFile


def load_policies(directory: str | Path) -> PolicySet:
    """Load every ``*.yaml`` file in ``directory``; raises :class:`PolicyError` listing problems."""
    root = Path(directory)
    if not root.is_dir():
        raise PolicyError([PolicyProblem(str(root), 0, "", "not a directory")])
    files = policy_files(root)
    if not files:
        raise PolicyError([PolicyProblem(str(root), 0, "", "no policy files (*.yaml)")])
    problems: list[PolicyProblem] = []
    loaded: list[_Loaded] = []
    digest = hashlib.sha256()
    for path in files:
        raw = path.read_bytes()
        digest.update(path.name.encode() + b"\0" + raw + b"\0")
        result = _load_file(path, raw, problems)
        if result is not None:
            loaded.append(result)
    policy_set = _merge(loaded, problems, digest.hexdigest()[:16])
    if problems:
        raise PolicyError(problems)
    return policy_set


def _load_file(path: Path, raw: bytes, problems: list[PolicyProblem]) -> _Loaded | None:
    name = str(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.append(PolicyProblem(name, 0, "", f"not UTF-8 ({error.reason})"))
        return None
    try:
        parsed, duplicates = parse_yaml(text)
    except YamlSyntaxError as error:
        problems.append(PolicyProblem(name, error.line, "", f"invalid YAML: {error}"))
        return None
    problems.extend(PolicyProblem(name, line, "", message) for line, message in duplicates)
    data = parsed.data if parsed.data is not None else {}
    if not isinstance(data, dict):
        problems.append(PolicyProblem(name, 1, "", "the top level must be a mapping"))
        return None
    try:
        content = PolicyFile.model_validate(data)
    except ValidationError as error:
        for item in error.errors():
            loc = [step for step in item["loc"] if step != "[key]"]
            problems.append(
                PolicyProblem(name, parsed.line_of(loc), _field(loc), _message(item["msg"]))
            )
        return None
    return _Loaded(name, parsed, content)


def _field(loc: Iterable[str | int]) -> str:
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _message(message: str) -> str:
    return message.removeprefix("Value error, ")


def _merge(loaded: list[_Loaded], problems: list[PolicyProblem], version: str) -> PolicySet:
    categories = _merge_categories(loaded, problems)
    templates = _merge_templates(loaded, problems)
    policies: list[tuple[Policy, str]] = []
    seen: dict[str, str] = {}
    for item in loaded:
        for index, policy in enumerate(item.content.policies):
            where = f"{item.path}:{item.parsed.line_of(['policies', index, 'name'])}"
            if policy.name in seen:
                problems.append(
                    _at(
                        item,
                        ["policies", index, "name"],
                        f"duplicate policy name {policy.name!r} (also at {seen[policy.name]})",
                    )
                )
                continue
            seen[policy.name] = where
            policies.append((policy, where))
            for position, category in enumerate(policy.match.categories):
                if category not in categories:
                    problems.append(
                        _at(
                            item,
                            ["policies", index, "match", "categories", position],
                            f"unknown category {category!r}",
                        )
                    )
            for slot in REQUIRED_SLOTS[policy.action]:
                if not _has_slot(policy, templates, slot):
                    problems.append(
                        _at(
                            item,
                            ["policies", index, "action"],
                            f"no {FALLBACK_LANGUAGE!r} template for slot {slot!r} of "
                            f"{policy.action.value} (add it under templates)",
                        )
                    )
    ordered = sorted(policies, key=lambda pair: -pair[0].priority)
    return PolicySet(
        policies=tuple(policy for policy, _ in ordered),
        categories=categories,
        templates=templates,
        version=version,
        sources={policy.name: where for policy, where in ordered},
    )


def _at(item: _Loaded, path: list[str | int], message: str) -> PolicyProblem:
    return PolicyProblem(item.path, item.parsed.line_of(path), _field(path), message)


def _has_slot(
    policy: Policy, templates: dict[str, dict[PolicyAction, SlotTemplates]], slot: str
) -> bool:
    if slot in policy.templates.get(FALLBACK_LANGUAGE, {}):
        return True
    return slot in templates.get(FALLBACK_LANGUAGE, {}).get(policy.action, {})


def _merge_categories(
    loaded: list[_Loaded], problems: list[PolicyProblem]
) -> dict[str, CategorySpec]:
    merged: dict[str, CategorySpec] = {}
    defined_at: dict[str, str] = {}
    for item in loaded:
        for name, spec in item.content.categories.items():
            current = merged.get(name)
            if spec.group is not None and name in defined_at:
                problems.append(
                    _at(
                        item,
                        ["categories", name, "group"],
                        f"category {name!r} already has a group (set at {defined_at[name]})",
                    )
                )
            if spec.group is not None:
                defined_at.setdefault(
                    name, f"{item.path}:{item.parsed.line_of(['categories', name, 'group'])}"
                )
            if current is None:
                merged[name] = spec.model_copy(deep=True)
                continue
            keywords = {lang: list(rules) for lang, rules in current.keywords.items()}
            for lang, rules in spec.keywords.items():
                keywords.setdefault(lang, []).extend(rules)
            merged[name] = current.model_copy(
                update={
                    "group": current.group or spec.group,
                    "description": current.description or spec.description,
                    "echo_topic": current.echo_topic and spec.echo_topic,
                    "label": {**spec.label, **current.label},
                    "exemplars": [*current.exemplars, *spec.exemplars],
                    "keywords": keywords,
                }
            )
    for item in loaded:
        for name in item.content.categories:
            if merged[name].group is None and name not in defined_at:
                problems.append(
                    _at(item, ["categories", name], f"category {name!r} has no group in any file")
                )
                defined_at[name] = "reported"
    return merged


def _merge_templates(
    loaded: list[_Loaded], problems: list[PolicyProblem]
) -> dict[str, dict[PolicyAction, SlotTemplates]]:
    merged: dict[str, dict[PolicyAction, SlotTemplates]] = {}
    where: dict[tuple[str, PolicyAction, str], str] = {}
    for item in loaded:
        for lang, actions in item.content.templates.items():
            for action in PolicyAction:
                slots = actions.for_action(action)
                if not slots:
                    continue
                target = merged.setdefault(lang, {}).setdefault(action, {})
                for slot, variants in slots.items():
                    key = (lang, action, slot)
                    path: list[str | int] = ["templates", lang, action.value, slot]
                    if key in where:
                        problems.append(
                            _at(item, path, f"slot defined twice (also at {where[key]})")
                        )
                        continue
                    where[key] = f"{item.path}:{item.parsed.line_of(path)}"
                    target[slot] = list(variants)
    return merged
