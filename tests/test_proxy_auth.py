"""Client key checks."""

from __future__ import annotations

import pytest

from proxy.auth import authenticate
from proxy.errors import ProxyError

KEYS = (b"key-one", b"key-two")


def test_no_configured_keys_means_no_authentication():
    assert authenticate(None, ()) is None
    assert authenticate("Bearer anything", ()) is None


@pytest.mark.parametrize("header", ["Bearer key-two", "bearer key-two", "Bearer  key-two "])
def test_a_listed_key_is_returned(header):
    assert authenticate(header, KEYS) == "key-two"


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic key-one", "key-one", "Bearer key-on", "Bearer key-one2"],
)
def test_anything_else_is_refused(header):
    with pytest.raises(ProxyError) as caught:
        authenticate(header, KEYS)
    assert caught.value.status == 401
    assert caught.value.code == "invalid_api_key"
