"""The prompt a rewrite model gets: built from the policy, the request and the original reply."""

from __future__ import annotations

from collections.abc import Sequence

from guardrail.policies.schema import Detail, Policy, PolicyAction

LANGUAGE_NAMES = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
    "ru": "Russian",
    "pl": "Polish",
    "tr": "Turkish",
    "ar": "Arabic",
    "vi": "Vietnamese",
    "id": "Indonesian",
    "sv": "Swedish",
    "uk": "Ukrainian",
    "hi": "Hindi",
    "th": "Thai",
}

ACTION_GUIDANCE = {
    PolicyAction.PARTIAL_COMPLIANCE: (
        "Write a partial-compliance answer: engage with the general, conceptual or historical "
        "side of the request and give real, useful general knowledge. Briefly say what you leave "
        "out, without lecturing. Never open with an apology or a refusal."
    ),
    PolicyAction.REDIRECT: (
        "Give the general background that helps, then point the user to the right kind of "
        "professional or service for their situation."
    ),
    PolicyAction.EMPATHETIC_BOUNDARY: (
        "Write an empathetic boundary: acknowledge and validate the user's feeling, be honest "
        "that you are an AI without feelings of your own who cannot be a partner or friend in "
        "the human sense, offer to keep talking, and gently encourage connection with people in "
        "their life. Never claim human feelings and never promise a relationship."
    ),
    PolicyAction.REGENERATE: (
        "The request is benign and was refused by mistake. Answer it directly, completely and "
        "helpfully, as a knowledgeable assistant would. Do not mention the earlier refusal."
    ),
    PolicyAction.KEEP: (
        "The request must stay declined. Write a short, warm reply that says so plainly, gives "
        "the reason in one sentence, and points to a safer direction or a place to get help."
    ),
}

DETAIL_TEXT = {
    Detail.STEP_SEQUENCES: "step-by-step instructions, numbered procedures or sequences of actions",
    Detail.QUANTITIES: "quantities, amounts, doses, concentrations or measurements",
    Detail.CODE: "code, commands or scripts",
    Detail.ACQUISITION_SOURCES: "where to buy or obtain anything (shops, sites, URLs, vendors)",
}


def system_prompt(policy: Policy, lang: str) -> str:
    """The instructions: the action's guidance, then the policy's own settings."""
    language = LANGUAGE_NAMES.get(lang, "the same language as the user's message")
    lines = [
        "You rewrite an AI assistant's reply to a user.",
        ACTION_GUIDANCE[policy.action],
        f"Write only the new reply, in {language}, in at most {policy.max_chars} characters.",
    ]
    if policy.never_include:
        banned = "; ".join(DETAIL_TEXT[detail] for detail in policy.never_include)
        lines.append(f"Never include: {banned}.")
    if policy.tone:
        lines.append(f"Tone: {policy.tone}.")
    if policy.instructions:
        lines.append(policy.instructions.strip())
    return "\n".join(lines)


def user_prompt(
    request: str,
    salvaged: Sequence[str],
    *,
    include_reply: bool,
    earlier: Sequence[str] = (),
) -> str:
    """The request (with the user's earlier turns, which show how a conversation escalated)
    and the informative parts of the original reply (never its refusal)."""
    parts = []
    if earlier:
        history = "\n".join(f"- {turn.strip()}" for turn in earlier if turn.strip())
        parts.append(f"The user's earlier messages, oldest first:\n<<<\n{history}\n>>>")
    parts.append(f"The user's message:\n<<<\n{request.strip()}\n>>>")
    if include_reply:
        useful = "\n".join(salvaged).strip()
        parts.append(
            "Informative parts of the original reply (the refusal itself is removed):\n"
            f"<<<\n{useful or '(nothing informative)'}\n>>>"
        )
    parts.append("Write the new reply now.")
    return "\n\n".join(parts)
