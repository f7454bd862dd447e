"""Metacontroller's sync hook request, parsed once, where it arrives, into typed objects.

The parent's `spec` stays raw here: a bad spec is the resource author's problem (reported in
status), not a bad request. Children are read by the `apiVersion`, `kind` and `metadata.name`
inside each object, never by map keys, which differ between hook versions v1 and v2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hooks.contract.observed import Observed, count, read_observed
from hooks.errors import RequestError

JSON = dict[str, Any]


@dataclass(frozen=True)
class Parent:
    """The LLMDeployment as sent: identity, metadata, and the spec as written."""

    name: str
    namespace: str
    uid: str
    generation: int
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: Any


@dataclass(frozen=True)
class PreviousCondition:
    status: str
    last_transition_time: str


@dataclass(frozen=True)
class PreviousStatus:
    """What the hook reported last time (the parent's status), as far as it is reused."""

    conditions: dict[str, PreviousCondition] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # per track: the model status reported
    rollout: JSON | None = None  # status.rollout as written: the rollout's memory (hooks.core.rollout reads it)


@dataclass(frozen=True)
class SyncRequest:
    parent: Parent
    previous: PreviousStatus
    observed: Observed
    generate_selector: bool = False  # children are selected by a controller-uid label
    finalizing: bool = False


def parse_request(payload: Any) -> SyncRequest:
    """A SyncRequest from decoded JSON, or a RequestError that says what is wrong."""
    body = _object(payload, "(body)")
    controller = _optional_object(body.get("controller"), "controller")
    controller_spec = _optional_object(controller.get("spec"), "controller.spec")
    parent = _object(body.get("parent"), "parent")
    _, _, meta = _identity(parent, "parent")
    status = parent.get("status")  # ours, but anyone with access to the subresource can write it
    return SyncRequest(
        parent=Parent(
            name=meta["name"],
            namespace=_string(meta.get("namespace", ""), "parent.metadata.namespace"),
            uid=_string(meta.get("uid", ""), "parent.metadata.uid"),
            generation=_integer(meta.get("generation", 0), "parent.metadata.generation"),
            labels=_string_map(meta.get("labels"), "parent.metadata.labels"),
            annotations=_string_map(meta.get("annotations"), "parent.metadata.annotations"),
            spec=parent.get("spec"),
        ),
        previous=_previous(status if isinstance(status, dict) else {}),
        observed=read_observed(_children(body.get("children"))),
        generate_selector=_boolean(controller_spec.get("generateSelector", False), "controller.spec.generateSelector"),
        finalizing=_boolean(body.get("finalizing", False), "finalizing"),
    )


def _previous(status: JSON) -> PreviousStatus:
    """The reusable parts of the last status; malformed entries are skipped (the parent's
    status is ours, but anyone with access to the status subresource can write it)."""
    conditions = {}
    entries = status.get("conditions")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("type"), str):
            since = entry.get("lastTransitionTime")
            conditions[entry["type"]] = PreviousCondition(str(entry.get("status")),
                                                          since if isinstance(since, str) else "")
    models = {track: status[track]["model"] for track in ("stable", "canary")
              if isinstance(status.get(track), dict) and isinstance(status[track].get("model"), str)}
    rollout = status.get("rollout")
    return PreviousStatus(conditions, models, rollout if isinstance(rollout, dict) else None)


def _children(groups: Any) -> list[tuple[str, str, str, JSON]]:
    """Every observed child. Metacontroller always sends the map with a group per child rule
    (empty or not); anything else cannot tell "no children" from "children not sent", and
    answering it could delete serving children, so it is a bad request."""
    found = []
    for key, group in _object(groups, "children").items():
        for inner, child in _object(group, f"children.{key}").items():
            where = f"children.{key}.{inner}"
            api_version, kind, meta = _identity(_object(child, where), where)
            found.append((api_version, kind, meta["name"], child))
    return found


def _identity(obj: JSON, where: str) -> tuple[str, str, JSON]:
    meta = _object(obj.get("metadata"), f"{where}.metadata")
    for value, path in ((obj.get("apiVersion"), "apiVersion"), (obj.get("kind"), "kind"),
                        (meta.get("name"), "metadata.name")):
        if not (isinstance(value, str) and value):
            raise _bad(f"{where}.{path}", "must be a non-empty string")
    return obj["apiVersion"], obj["kind"], meta


def _object(value: Any, where: str) -> JSON:
    if not isinstance(value, dict):
        raise _bad(where, "must be an object")
    return value


def _optional_object(value: Any, where: str) -> JSON:
    return {} if value is None else _object(value, where)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(where, "must be a string")
    return value


def _integer(value: Any, where: str) -> int:
    if count(value) != value:
        raise _bad(where, "must be a whole number")
    return int(value)


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(where, "must be true or false")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    found = _optional_object(value, where)
    if not all(isinstance(v, str) for v in found.values()):
        raise _bad(where, "must map strings to strings")
    return found


def _bad(where: str, problem: str) -> RequestError:
    return RequestError(f"not a Metacontroller sync request: {where}: {problem}")
