"""Client keys: ``Authorization: Bearer <key>`` checked in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from proxy.errors import ProxyError

_SCHEME = "bearer "


def authenticate(authorization: str | None, keys: Sequence[bytes]) -> str | None:
    """The client's key, or ``None`` when no keys are configured; 401 otherwise.

    Every configured key is compared, so the time taken reveals neither which key matched nor
    how much of one did.
    """
    if not keys:
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
    candidate = presented.encode()
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(candidate, key)
    if not matched:
        raise ProxyError(401, "Incorrect API key provided.", code="invalid_api_key")
    return presented
