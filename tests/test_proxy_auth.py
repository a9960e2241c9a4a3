"""Client key checks."""

from __future__ import annotations

import pytest

from proxy.auth import authenticate, hash_key, key_digests
from proxy.errors import ProxyError

KEYS = key_digests(["key-one", hash_key("key-two")])


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


def test_a_hashed_key_is_the_digest_of_its_key():
    assert key_digests([hash_key("k")]) == key_digests(["k"])
    assert key_digests([hash_key("k").upper().replace("SHA256:", "sha256:")]) == key_digests(["k"])


@pytest.mark.parametrize("entry", ["sha256:", "sha256:xyz", "sha256:" + "0" * 63])
def test_a_malformed_hashed_key_is_rejected(entry):
    with pytest.raises(ValueError, match="64 hexadecimal digits"):
        key_digests([entry])
