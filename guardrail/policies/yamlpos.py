"""YAML parsing that remembers where things are, so errors can name a line.

``yaml.compose`` keeps each node's start mark; pydantic reports error locations as key paths.
Walking the node tree along such a path gives the line to report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class ParsedYaml:
    data: Any
    root: yaml.Node | None

    def line_of(self, path: Sequence[str | int]) -> int:
        """The 1-based line of the deepest node along ``path`` (its key's line for mappings)."""
        node = self.root
        if node is None:
            return 1
        line = node.start_mark.line + 1
        for step in path:
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if key.value == str(step):
                        line, node = key.start_mark.line + 1, value
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
                if not 0 <= step < len(node.value):
                    return line
                node = node.value[step]
                line = node.start_mark.line + 1
            else:
                return line
        return line


class YamlSyntaxError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(message)


def parse_yaml(text: str) -> tuple[ParsedYaml, list[tuple[int, str]]]:
    """Parse ``text``; returns the document and duplicate-key warnings as ``(line, message)``.

    Raises :class:`YamlSyntaxError` for text that is not YAML at all.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text) if root is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlSyntaxError(
            line, f"{error.problem or error.context or 'invalid YAML'}"
        ) from error
    except yaml.YAMLError as error:
        raise YamlSyntaxError(1, str(error)) from error
    return ParsedYaml(data, root), _duplicate_keys(root)


def _duplicate_keys(node: yaml.Node | None) -> list[tuple[int, str]]:
    """PyYAML silently keeps the last of two equal keys; a policy author almost never means that."""
    found: list[tuple[int, str]] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in current.value:
                line = key.start_mark.line + 1
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        found.append(
                            (line, f"duplicate key {key.value!r} (first on line {seen[key.value]})")
                        )
                    seen.setdefault(key.value, line)
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return sorted(found)
