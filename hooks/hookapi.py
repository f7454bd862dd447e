"""Metacontroller's sync hook request, as it arrives, parsed at the edge.

The parent's `spec` stays raw here: a bad spec is the resource author's problem (reported in
status), not a bad request. Children are read by the `apiVersion`, `kind` and `metadata.name`
inside each object, never by map keys, which differ between hook versions v1 and v2.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hooks.errors import RequestError

JSONObject = dict[str, Any]


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ObjectMeta(_Loose):
    name: str = Field(min_length=1)
    namespace: str = ""
    uid: str = ""
    generation: int = 0
    creation_timestamp: str | None = Field(None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(None, alias="deletionTimestamp")
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    managed_fields: list[JSONObject] = Field(default_factory=list, alias="managedFields")


class KubeObject(_Loose):
    """Any object Metacontroller sends: typed metadata, the rest kept as it came."""

    model_config = ConfigDict(extra="allow", frozen=True)

    api_version: str = Field(alias="apiVersion", min_length=1)
    kind: str = Field(min_length=1)
    metadata: ObjectMeta
    spec: Any = None
    status: Any = None

    @property
    def spec_map(self) -> JSONObject:
        return self.spec if isinstance(self.spec, dict) else {}

    @property
    def status_map(self) -> JSONObject:
        return self.status if isinstance(self.status, dict) else {}


class ControllerSpec(_Loose):
    generate_selector: bool = Field(False, alias="generateSelector")


class Controller(_Loose):
    spec: ControllerSpec = Field(default_factory=ControllerSpec)


class SyncRequest(_Loose):
    controller: Controller = Field(default_factory=Controller)
    parent: KubeObject
    children: dict[str, dict[str, KubeObject]] = Field(default_factory=dict)
    related: dict[str, dict[str, JSONObject]] = Field(default_factory=dict)
    finalizing: bool = False

    def observed_children(self) -> list[KubeObject]:
        """Every observed child, in a fixed order (kind, name) whatever the map keys were."""
        found = [child for group in self.children.values() for child in group.values()]
        return sorted(found, key=lambda c: (c.kind, c.api_version, c.metadata.name))


def parse_request(payload: Any) -> SyncRequest:
    """A SyncRequest from decoded JSON, or a RequestError that says what is wrong."""
    if not isinstance(payload, dict):
        raise RequestError("the request body must be a JSON object with parent and children")
    try:
        return SyncRequest.model_validate(payload)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}" for err in e.errors()[:10]
        )
        raise RequestError(f"not a Metacontroller sync request: {problems}") from e
