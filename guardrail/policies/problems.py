"""Policy problems reported as ``file:line: field: message``, all at once rather than first-only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """One thing wrong with a policy file, located as precisely as the YAML allows."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class PolicyError(Exception):
    """A policy set that cannot be used; carries every problem found."""

    def __init__(self, problems: Sequence[PolicyProblem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(
            f"{count} problem{'s' if count != 1 else ''} in the policy files:\n{lines}"
        )
