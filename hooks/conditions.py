"""metav1.Condition bookkeeping: the request's clock and transition times that do not flap.

The hook must answer the same bytes for the same request, so it never reads the wall clock:
"now" is the newest timestamp the request itself carries (the parent's and children's
metadata, managed fields and condition times). A condition keeps the lastTransitionTime the
parent's status already has unless its status changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hooks.hookapi import KubeObject, SyncRequest

EPOCH = "1970-01-01T00:00:00Z"
_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # how Kubernetes writes metav1.Time


class Condition(BaseModel):
    """One metav1.Condition."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)

    type: str = Field(description="Condition type: Ready, StableAvailable, CanaryAvailable or SpecValid.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="One CamelCase word for machines.")
    message: str = Field(description="What a person needs to know.")
    last_transition_time: str = Field(
        alias="lastTransitionTime", description="When status last changed.",
        json_schema_extra={"format": "date-time"},
    )
    observed_generation: int = Field(alias="observedGeneration", description="The generation this was computed for.")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.astimezone(timezone.utc) if parsed.tzinfo else None


def format_time(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def request_time(request: SyncRequest) -> str:
    """The newest moment the request proves has passed."""
    canonical: list[str] = []
    other: list[datetime] = []
    for stamp in _timestamps(request):
        if isinstance(stamp, str) and _CANONICAL.fullmatch(stamp):
            canonical.append(stamp)  # fixed width, UTC: these order as strings do
        elif (parsed := parse_time(stamp)) is not None:
            other.append(parsed)
    newest = [parse_time(max(canonical))] if canonical else []
    found = [t for t in [*newest, *other] if t is not None]
    return format_time(max(found)) if found else EPOCH


def _timestamps(request: SyncRequest) -> Iterator[Any]:
    for obj in [request.parent, *(c for group in request.children.values() for c in group.values())]:
        yield from _object_timestamps(obj)


def _object_timestamps(obj: KubeObject) -> Iterator[Any]:
    meta = obj.metadata
    yield meta.creation_timestamp
    yield meta.deletion_timestamp
    for entry in meta.managed_fields:
        if isinstance(entry, dict):
            yield entry.get("time")
    conditions = obj.status_map.get("conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict):
            yield condition.get("lastTransitionTime")
            yield condition.get("lastUpdateTime")


def previous_conditions(parent: KubeObject) -> dict[str, Mapping[str, Any]]:
    """The parent's current conditions by type (malformed entries are ignored)."""
    conditions = parent.status_map.get("conditions")
    found: dict[str, Mapping[str, Any]] = {}
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and isinstance(condition.get("type"), str):
            found[condition["type"]] = condition
    return found


def settle(
    fresh: Iterable[tuple[str, bool, str, str]],
    previous: Mapping[str, Mapping[str, Any]],
    now: str,
    generation: int,
) -> list[Condition]:
    """Conditions from (type, status, reason, message), keeping a transition time whose
    status did not change."""
    out = []
    for kind, ok, reason, message in fresh:
        status: Literal["True", "False"] = "True" if ok else "False"
        before = previous.get(kind, {})
        since = before.get("lastTransitionTime")
        keep = before.get("status") == status and parse_time(since) is not None
        # Built without re-validation: every value is ours and already of the right type.
        out.append(Condition.model_construct(
            type=kind, status=status, reason=reason, message=message,
            last_transition_time=str(since) if keep else now, observed_generation=generation,
        ))
    return out
