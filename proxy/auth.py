"""Client keys: ``Authorization: Bearer <key>`` checked in constant time against SHA-256 digests.

Keys are configured either in clear or as ``sha256:<hex>`` (from ``guardrail hash-key``), so a
config file need not hold a usable secret. Both forms become digests at start-up, and a presented
key is hashed and compared with every digest.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Sequence

from proxy.errors import ProxyError

_SCHEME = "bearer "
HASH_PREFIX = "sha256:"
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def hash_key(key: str) -> str:
    """The ``sha256:<hex>`` form of ``key``, to put in a config file instead of the key."""
    return HASH_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def key_digests(entries: Iterable[str]) -> tuple[bytes, ...]:
    """Digests of configured keys, each given in clear or as ``sha256:<hex>``.

    Raises ``ValueError`` for a ``sha256:`` entry that is not 64 hex digits.
    """
    digests = []
    for entry in entries:
        if entry.startswith(HASH_PREFIX):
            hexdigest = entry[len(HASH_PREFIX) :].strip().lower()
            if not _HEX_DIGEST.fullmatch(hexdigest):
                raise ValueError("a sha256: key must be followed by 64 hexadecimal digits")
            digests.append(bytes.fromhex(hexdigest))
        else:
            digests.append(hashlib.sha256(entry.encode()).digest())
    return tuple(digests)


def authenticate(authorization: str | None, digests: Sequence[bytes]) -> str | None:
    """The client's key, or ``None`` when no keys are configured; 401 otherwise.

    Every configured digest is compared, so the time taken reveals neither which key matched
    nor how much of one did.
    """
    if not digests:
        return None
    presented = ""
    if authorization and authorization[: len(_SCHEME)].lower() == _SCHEME:
        presented = authorization[len(_SCHEME) :].strip()
    if not presented:
        raise ProxyError(
            401,
            "Missing API key: send it as 'Authorization: Bearer <key>'.",
            code="invalid_api_key",
        )
    candidate = hashlib.sha256(presented.encode()).digest()
    matched = False
    for digest in digests:
        matched |= hmac.compare_digest(candidate, digest)
    if not matched:
        raise ProxyError(401, "Incorrect API key provided.", code="invalid_api_key")
    return presented
