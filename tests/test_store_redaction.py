import pytest

from guardrail.store.redaction import mask_secrets, redact


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "sk-ant-api03-abcdefghijklmnopqrstuv",
        "ghp_0123456789abcdefghijABCDEFGHIJ",
        "AKIAIOSFODNN7EXAMPLE",
        "AIzaSyA1234567890abcdefghijklmnopqrstu",
        "xoxb-123456789012-abcdefghij",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ],
)
def test_secrets_are_masked(secret: str) -> None:
    assert mask_secrets(f"my key is {secret}, thanks") == "my key is [SECRET], thanks"


def test_bearer_tokens_are_masked() -> None:
    assert mask_secrets("Authorization: Bearer abc.def-ghi_123") == "Authorization: [SECRET]"


def test_mask_secrets_leaves_personal_data() -> None:
    assert mask_secrets("mail ana@example.org") == "mail ana@example.org"


def test_redact_masks_emails_phones_and_digit_runs() -> None:
    text = (
        "Write to ana.lopez+work@example.co.uk or call +44 20 7946 0958 / (555) 123-4567; "
        "card 4111111111111111, order 12345678."
    )
    assert redact(text) == (
        "Write to [EMAIL] or call [PHONE] / [PHONE]; card [NUMBER], order [NUMBER]."
    )


def test_redact_keeps_ordinary_text_and_short_numbers() -> None:
    text = "I can't help with that, but in 2024 about 30% of 120 people asked the same."
    assert redact(text) == text


def test_redact_masks_secrets_too() -> None:
    assert redact("token sk-abcdefghijklmnop1234") == "token [SECRET]"
