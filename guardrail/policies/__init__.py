"""YAML policies: the schema, the loader with line-numbered errors, matching and hot reload."""

from guardrail.policies.loader import load_policies
from guardrail.policies.matching import MatchContext, PolicyCheck, Selection, select_policy
from guardrail.policies.policyset import PolicySet
from guardrail.policies.problems import PolicyError, PolicyProblem
from guardrail.policies.schema import (
    Detail,
    LateRefusal,
    Match,
    OnFailure,
    Policy,
    PolicyAction,
    Resource,
)
from guardrail.policies.store import PolicyStore

__all__ = [
    "Detail",
    "LateRefusal",
    "Match",
    "MatchContext",
    "OnFailure",
    "Policy",
    "PolicyAction",
    "PolicyCheck",
    "PolicyError",
    "PolicyProblem",
    "PolicySet",
    "PolicyStore",
    "Resource",
    "Selection",
    "load_policies",
    "select_policy",
]
