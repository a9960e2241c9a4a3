"""Hot reload: a running guardrail picks up edited policy files without a restart.

Files are checked by modification time and size at most every ``interval`` seconds, on the
request path (a few ``stat`` calls), so no watcher thread is needed. A broken edit never takes
effect: the last good set stays in force and the problem is logged once per change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from guardrail.policies.loader import load_policies, policy_files
from guardrail.policies.policyset import PolicySet
from guardrail.policies.problems import PolicyError

logger = logging.getLogger("guardrail.policies")

Fingerprint = tuple[tuple[str, int, int], ...]


class PolicyStore:
    """Holds the policy set in force; raises :class:`PolicyError` if the first load fails."""

    def __init__(
        self,
        directory: str | Path,
        *,
        interval: float | None = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.interval = interval
        self._clock = clock
        self._fingerprint = self._scan()
        self._current = load_policies(self.directory)
        self._checked = clock()
        self.last_error: PolicyError | None = None

    @property
    def current(self) -> PolicySet:
        """The policy set in force, reloading first if the files changed."""
        self.refresh()
        return self._current

    def refresh(self) -> bool:
        """Reload if due and the files changed; returns whether a new set took effect."""
        if self.interval is None:
            return False
        now = self._clock()
        if now - self._checked < self.interval:
            return False
        self._checked = now
        fingerprint = self._scan()
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        try:
            candidate = load_policies(self.directory)
        except PolicyError as error:
            self.last_error = error
            logger.warning(
                "policy files in %s changed but are invalid; keeping version %s. %s",
                self.directory,
                self._current.version,
                error,
            )
            return False
        self.last_error = None
        changed = candidate.version != self._current.version
        if changed:
            logger.info(
                "reloaded policies from %s: version %s -> %s",
                self.directory,
                self._current.version,
                candidate.version,
            )
        self._current = candidate
        return changed

    def _scan(self) -> Fingerprint:
        try:
            files = policy_files(self.directory)
            return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)
        except OSError:
            return ()
