"""metav1.Condition bookkeeping: transition times that do not flap.

A condition keeps the lastTransitionTime the parent's status already has unless its status
changed; then it is the sync's `now`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Literal

from hooks.api.status import Condition, built
from hooks.contract.observed import parse_time
from hooks.contract.request import PreviousCondition


def format_time(value: datetime) -> str:
    """As Kubernetes writes a metav1.Time: UTC, whole seconds."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def settle(fresh: Iterable[tuple[str, bool, str, str]], previous: Mapping[str, PreviousCondition],
           now: datetime, generation: int) -> list[Condition]:
    """Conditions from (type, status, reason, message), keeping a transition time whose
    status did not change."""
    out = []
    for kind, ok, reason, message in fresh:
        status: Literal["True", "False"] = "True" if ok else "False"
        before = previous.get(kind)
        keep = before is not None and before.status == status and parse_time(before.last_transition_time) is not None
        # Built without re-validation: every value is ours and already of the right type.
        out.append(built(
            Condition, type=kind, status=status, reason=reason, message=message,
            last_transition_time=before.last_transition_time if keep and before else format_time(now),
            observed_generation=generation,
        ))
    return out
