from guardrail.store.audit import AuditConfig, AuditEntry, Auditor, audit_entry
from guardrail.store.memory import MemoryStore
from guardrail.types import Action, CategoryScore, Decision, Detection, Label3, Strategy

MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {
        "role": "user",
        "content": "I feel alone. Email me at ana@example.org, key sk-abcdefghijklmnop1234",
    },
]
REPLY = "I'm sorry, but I can't help with that."
CLIENT_KEY = "gr-client-key-123456"

DECISION = Decision(
    action=Action.REWRITTEN,
    text="That sounds hard. I can't be a substitute for people, but let's talk it through.",
    policy="emotional-support",
    before=Detection(True, 0.97, Strategy.DIRECT_REFUSAL, Label3.FULL_REFUSAL),
    after=Detection(False, 0.08, Strategy.PARTIAL_COMPLIANCE, Label3.PARTIAL_REFUSAL),
    categories=(CategoryScore("emotional_attachment", 0.9), CategoryScore("benign", 0.1)),
)


def build(config: AuditConfig) -> AuditEntry:
    return audit_entry(
        DECISION,
        config=config,
        client_key=CLIENT_KEY,
        model="gpt-4o-mini",
        messages=MESSAGES,
        reply=REPLY,
        request_id="req-1",
        now=1700000000.5,
    )


def test_entry_records_the_decision_without_texts_by_default() -> None:
    entry = build(AuditConfig(enabled=True))
    assert entry.action == "rewritten"
    assert entry.policy == "emotional-support"
    assert entry.categories == ("emotional_attachment", "benign")
    assert (entry.strategy_before, entry.strategy_after) == ("direct_refusal", "partial_compliance")
    assert entry.model == "gpt-4o-mini"
    assert entry.request_id == "req-1"
    assert entry.request is entry.reply is entry.rewrite is None
    assert entry.key_id.startswith("key_")
    assert CLIENT_KEY not in str(entry.to_fields())


def test_texts_are_redacted_when_configured() -> None:
    entry = build(AuditConfig(enabled=True, include_text=True, redact=True))
    assert entry.request == "I feel alone. Email me at [EMAIL], key [SECRET]"
    assert entry.reply == REPLY
    assert entry.rewrite == DECISION.text


def test_secrets_are_masked_even_without_redaction() -> None:
    entry = build(AuditConfig(enabled=True, include_text=True, redact=False))
    assert entry.request == "I feel alone. Email me at ana@example.org, key [SECRET]"


def test_missing_client_key_and_detections() -> None:
    entry = audit_entry(
        Decision(action=Action.PASS, text=None),
        config=AuditConfig(enabled=True),
        client_key=None,
        model=None,
    )
    assert entry.key_id == "anonymous"
    assert entry.strategy_before is None and entry.policy is None


def test_fields_round_trip() -> None:
    entry = build(AuditConfig(enabled=True, include_text=True))
    fields = entry.to_fields()
    assert all(isinstance(v, str) for v in fields.values())
    assert AuditEntry.from_fields(fields) == entry
    bare = build(AuditConfig(enabled=True))
    assert "request" not in bare.to_fields()
    assert AuditEntry.from_fields(bare.to_fields()) == bare


async def test_auditor_is_a_no_op_unless_enabled() -> None:
    store = MemoryStore()
    await Auditor(store, AuditConfig()).record(DECISION, client_key=CLIENT_KEY, model="m")
    assert await store.read_audit() == []
    await Auditor(store, AuditConfig(enabled=True)).record(
        DECISION, client_key=CLIENT_KEY, model="m", messages=MESSAGES, reply=REPLY
    )
    [entry] = await store.read_audit()
    assert entry.action == "rewritten" and entry.request is None
