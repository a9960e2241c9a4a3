"""The OpenAI-compatible proxy: a thin FastAPI front door to the guardrail pipeline."""

import os

# litellm fetches its model cost map over the network at import unless told otherwise; the proxy
# must start offline and fast, so this is set before any proxy module imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
