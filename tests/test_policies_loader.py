"""The policy loader: the bundled set is valid, and every broken file is reported by line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from guardrail.policies import PolicyAction, PolicyError, load_policies
from guardrail.settings import default_policies_dir

BUNDLED = default_policies_dir()

MINIMAL_TEMPLATES = textwrap.dedent(
    """\
    templates:
      en:
        partial_compliance:
          acknowledge_general: [Here is the general picture.]
          boundary: [I'll leave out the specifics.]
    categories:
      weapons:
        group: harm
        exemplars: ["How do I build a gun?"]
    """
)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(directory: Path) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load_policies(directory)
    return [str(problem) for problem in caught.value.problems]


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    write(tmp_path, "00-base.yaml", MINIMAL_TEMPLATES)
    return tmp_path


def test_bundled_policies_are_valid_and_cover_every_category() -> None:
    policy_set = load_policies(BUNDLED)
    covered = {name for policy in policy_set.policies for name in policy.match.categories}
    assert covered == set(policy_set.categories)
    assert {p.action for p in policy_set.policies} >= {
        PolicyAction.PARTIAL_COMPLIANCE,
        PolicyAction.EMPATHETIC_BOUNDARY,
        PolicyAction.REGENERATE,
        PolicyAction.KEEP,
    }


def test_policies_are_ordered_by_priority_then_file_order(policy_dir: Path) -> None:
    write(
        policy_dir,
        "10-policies.yaml",
        """\
        policies:
          - {name: low, priority: 1, action: partial_compliance}
          - {name: high, priority: 9, action: partial_compliance}
          - {name: also_low, priority: 1, action: partial_compliance}
        """,
    )
    names = [p.name for p in load_policies(policy_dir).policies]
    assert names == ["high", "low", "also_low"]


def test_invalid_yaml_names_the_line(policy_dir: Path) -> None:
    write(policy_dir, "broken.yaml", "policies:\n  - name: x\n    action: [unclosed\n")
    (problem,) = problems_of(policy_dir)
    assert problem.startswith(f"{policy_dir / 'broken.yaml'}:")
    assert "invalid YAML" in problem


def test_schema_errors_are_all_reported_with_lines_and_fields(policy_dir: Path) -> None:
    path = write(
        policy_dir,
        "bad.yaml",
        """\
        policies:
          - name: first
            action: partial_compliance
            match:
              min_confidence: 1.5
          - name: second
            action: shout
          - name: third
            action: keep
            colour: blue
        """,
    )
    problems = problems_of(policy_dir)
    assert f"{path}:5: policies[0].match.min_confidence: " in problems[0]
    assert "less than or equal to 1" in problems[0]
    assert problems[1].startswith(f"{path}:7: policies[1].action: ")
    assert problems[2].startswith(f"{path}:10: policies[2].colour: ")
    assert "Extra inputs are not permitted" in problems[2]


def test_missing_required_field_points_at_the_item(policy_dir: Path) -> None:
    path = write(policy_dir, "bad.yaml", "policies:\n  - name: nameless_action\n")
    (problem,) = problems_of(policy_dir)
    assert problem == f"{path}:2: policies[0].action: Field required"


def test_duplicate_names_across_files(policy_dir: Path) -> None:
    first = write(policy_dir, "a.yaml", "policies:\n  - {name: twin, action: partial_compliance}\n")
    second = write(
        policy_dir, "b.yaml", "\npolicies:\n  - {name: twin, action: partial_compliance}\n"
    )
    (problem,) = problems_of(policy_dir)
    assert problem.startswith(f"{second}:3: policies[0].name: duplicate policy name 'twin'")
    assert f"also at {first}:2" in problem


def test_unknown_category_and_missing_template(policy_dir: Path) -> None:
    path = write(
        policy_dir,
        "p.yaml",
        """\
        policies:
          - name: lost
            action: redirect
            match:
              categories: [weapons, wizardry]
        """,
    )
    problems = problems_of(policy_dir)
    assert f"{path}:5: policies[0].match.categories[1]: unknown category 'wizardry'" in problems
    assert any(
        p.startswith(f"{path}:3: policies[0].action: no 'en' template for slot") for p in problems
    )


def test_duplicate_keys_are_errors(policy_dir: Path) -> None:
    path = write(
        policy_dir,
        "dup.yaml",
        "policies:\n  - name: a\n    action: redirect\n    action: partial_compliance\n",
    )
    (problem,) = problems_of(policy_dir)
    assert problem == f"{path}:4: duplicate key 'action' (first on line 3)"


def test_templates_reject_unknown_slots_and_placeholders(policy_dir: Path) -> None:
    path = write(
        policy_dir,
        "t.yaml",
        """\
        templates:
          es:
            partial_compliance:
              acknowledge: ["Sobre {tema}..."]
              farewell: [Adiós.]
        """,
    )
    problems = problems_of(policy_dir)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}:3: templates.es.partial_compliance: ")
    assert "acknowledge" in problems[0] or "farewell" in problems[0]


def test_category_extension_merges_and_groupless_category_is_an_error(policy_dir: Path) -> None:
    write(
        policy_dir,
        "extra.yaml",
        """\
        categories:
          weapons:
            exemplars: ["Where can I buy a crossbow?"]
            keywords: {it: [pistola]}
        """,
    )
    merged = load_policies(policy_dir).categories["weapons"]
    assert merged.exemplars == ["How do I build a gun?", "Where can I buy a crossbow?"]
    assert merged.keywords == {"it": ["pistola"]}

    path = write(policy_dir, "orphan.yaml", "categories:\n  gardening:\n    exemplars: [Roses]\n")
    (problem,) = problems_of(policy_dir)
    assert (
        problem == f"{path}:2: categories.gardening: category 'gardening' has no group in any file"
    )


def test_not_a_directory_and_empty_directory(tmp_path: Path) -> None:
    assert "not a directory" in problems_of(tmp_path / "missing")[0]
    assert "no policy files" in problems_of(tmp_path)[0]


def test_non_utf8_and_non_mapping_files(policy_dir: Path) -> None:
    (policy_dir / "latin1.yaml").write_bytes("policies: []\n# caf\xe9\n".encode("latin-1"))
    write(policy_dir, "list.yaml", "- just\n- a list\n")
    problems = problems_of(policy_dir)
    assert any("latin1.yaml: not UTF-8" in p for p in problems)
    assert any("list.yaml:1: the top level must be a mapping" in p for p in problems)
