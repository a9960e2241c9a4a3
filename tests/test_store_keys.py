from guardrail.store.keys import embedding_key, key_id, rewrite_key

MESSAGES = [{"role": "user", "content": "How do I pick the lock on my own front door?"}]
REPLY = "I'm sorry, but I can't help with that."


def test_rewrite_key_is_a_sha256_digest_without_raw_text() -> None:
    key = rewrite_key(MESSAGES, REPLY, "default", "3")
    assert len(key) == 64
    assert int(key, 16) >= 0
    assert "lock" not in key


def test_rewrite_key_is_stable_across_dict_order() -> None:
    reordered = [{"content": MESSAGES[0]["content"], "role": "user"}]
    assert rewrite_key(MESSAGES, REPLY, "default", "3") == rewrite_key(
        reordered, REPLY, "default", "3"
    )


def test_rewrite_key_changes_with_each_input() -> None:
    base = rewrite_key(MESSAGES, REPLY, "default", "3")
    others = {
        rewrite_key([{"role": "user", "content": "Something else"}], REPLY, "default", "3"),
        rewrite_key(MESSAGES, REPLY + " ", "default", "3"),
        rewrite_key(MESSAGES, REPLY, "medical", "3"),
        rewrite_key(MESSAGES, REPLY, "default", "4"),
        rewrite_key(MESSAGES, REPLY, "default", "3", "gpt-4o"),
    }
    assert base not in others
    assert len(others) == 5


def test_rewrite_key_has_no_field_boundary_ambiguity() -> None:
    assert rewrite_key(MESSAGES, "ab", "c", "1") != rewrite_key(MESSAGES, "a", "bc", "1")


def test_embedding_key_separates_models() -> None:
    assert embedding_key("model-a", "hello") != embedding_key("model-b", "hello")
    assert embedding_key("model-a", "hello") == embedding_key("model-a", "hello")


def test_key_id_is_stable_and_hides_the_key() -> None:
    secret = "gr-live-8f3a9c0d1e2b"
    assert key_id(secret) == key_id(secret)
    assert key_id(secret).startswith("key_")
    assert secret not in key_id(secret)
    assert key_id(secret) != key_id(secret + "x")
