"""The observed state: the children Metacontroller sends, as typed objects.

Built once, where the request is decoded; nothing downstream reads a child's raw JSON again.
Status fields are written by Kubernetes controllers, so a missing or malformed count reads
as 0 (one rule, here), while a child without apiVersion, kind or name is a bad request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from hooks.canonical import loads
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION

REVISION_LABEL = "serving.llmdeploy.io/revision"  # a hash of the pod template (hooks.core.revision)
# On a Deployment (not its pods): the registry version its pod template pins, as JSON
# {reference, version, artifactUri, runId, resolvedAt}; what runs, when the registry cannot say.
RESOLVED_ANNOTATION = "serving.llmdeploy.io/resolved"

JSON = dict[str, Any]
RouteWriter = Literal["istio", "gateway-api", "linkerd"]  # the router whose route a child is


def count(value: Any) -> int:
    """A replica count or generation as Kubernetes writes it; anything else is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def parse_time(value: Any) -> datetime | None:
    """A metav1.Time (RFC 3339, with a zone) as an aware datetime, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.astimezone(timezone.utc) if parsed.tzinfo else None


@dataclass(frozen=True)
class ObservedChild:
    """Any observed child: its identity and what the hook last answered for it."""

    api_version: str
    kind: str
    name: str
    last_applied: str | None  # the annotation's text, see hooks.contract.lastapplied
    applied_server_side: bool = False  # by server-side apply, which keeps no last-applied


@dataclass(frozen=True)
class DeploymentCondition:
    type: str
    status: str
    reason: str
    last_transition_time: datetime | None


@dataclass(frozen=True)
class ObservedDeployment:
    """What a Deployment says about its rollout."""

    name: str
    generation: int
    observed_generation: int
    spec_replicas: int  # the live value: under an HPA, the HPA's
    replicas: int
    ready: int
    available: int
    updated: int
    conditions: tuple[DeploymentCondition, ...]
    last_applied: str | None
    revision: str | None = None  # the pod template's serving.llmdeploy.io/revision label
    resolved: JSON | None = None  # its serving.llmdeploy.io/resolved annotation, decoded

    def condition(self, kind: str) -> DeploymentCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)


@dataclass(frozen=True)
class ObservedRoute:
    """The default rule of a mesh route (a VirtualService, or an HTTPRoute on a Service, not
    one on a Gateway such as `N-external`): percent per track, and the router whose route it is."""

    router: RouteWriter
    weights: dict[str, int]

    def weight(self, track: str) -> int:
        return self.weights.get(track, 0)


@dataclass(frozen=True)
class Observed:
    """Every observed child, and the few kinds whose content the hook reads, by name."""

    children: tuple[ObservedChild, ...] = ()  # ordered by kind, apiVersion, name
    deployments: dict[str, ObservedDeployment] = field(default_factory=dict)
    service_ports: dict[str, int] = field(default_factory=dict)  # a Service's first port
    routes: dict[str, ObservedRoute] = field(default_factory=dict)

    def available(self, deployment: str) -> int:
        found = self.deployments.get(deployment)
        return found.available if found else 0


def read_observed(objects: list[tuple[str, str, str, JSON]]) -> Observed:
    """Observed state from (apiVersion, kind, name, object) of every child."""
    children, deployments, ports, routes = [], {}, {}, {}
    for api_version, kind, name, obj in sorted(objects, key=lambda o: (o[1], o[0], o[2])):
        meta = obj["metadata"]
        annotations = meta.get("annotations")
        last_applied = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
        last_applied = last_applied if isinstance(last_applied, str) else None
        fields = meta.get("managedFields")
        server_side = any(isinstance(f, dict) and f.get("operation") == "Apply" for f in _list(fields))
        children.append(ObservedChild(api_version, kind, name, last_applied, server_side))
        spec, status = _map(obj.get("spec")), _map(obj.get("status"))
        if kind == "Deployment" and api_version == "apps/v1":
            deployments[name] = _deployment(name, meta, spec, status, last_applied)
        elif kind == "Service" and api_version == "v1":
            port = _first_port(spec)
            if port is not None:
                ports[name] = port
        elif kind == "VirtualService":
            weights = _default_route_weights(spec)
            if weights is not None:
                routes[name] = ObservedRoute("istio", weights)
        elif kind == "HTTPRoute" and api_version.startswith("gateway.networking.k8s.io/"):
            weights = _default_rule_weights(spec)
            if weights is not None and not _on_gateways_only(spec):  # a mesh route, not an external one
                linkerd = isinstance(annotations, dict) and any(k.endswith(".linkerd.io/request") for k in annotations)
                routes[name] = ObservedRoute("linkerd" if linkerd else "gateway-api", weights)
    return Observed(tuple(children), deployments, ports, routes)


def _map(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _deployment(name: str, meta: JSON, spec: JSON, status: JSON, last_applied: str | None) -> ObservedDeployment:
    conditions = tuple(
        DeploymentCondition(str(c.get("type")), str(c.get("status")), str(c.get("reason", "")),
                            parse_time(c.get("lastTransitionTime")))
        for c in _list(status.get("conditions")) if isinstance(c, dict))
    replicas = spec.get("replicas", 1)
    return ObservedDeployment(
        name=name,
        generation=count(meta.get("generation")),
        observed_generation=count(status.get("observedGeneration")),
        spec_replicas=count(replicas),
        replicas=count(status.get("replicas")),
        ready=count(status.get("readyReplicas")),
        available=count(status.get("availableReplicas")),
        updated=count(status.get("updatedReplicas")),
        conditions=conditions,
        last_applied=last_applied,
        revision=_revision(spec),
        resolved=_resolved(meta),
    )


def _resolved(meta: JSON) -> JSON | None:
    annotations = meta.get("annotations")
    text = annotations.get(RESOLVED_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        return None
    try:
        found = loads(text)  # strict JSON: no NaN, no lone surrogate (a template could not quote it)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _revision(spec: JSON) -> str | None:
    labels = _map(_map(_map(spec.get("template")).get("metadata")).get("labels"))
    value = labels.get(REVISION_LABEL)
    return value if isinstance(value, str) else None


def _first_port(spec: JSON) -> int | None:
    ports = spec.get("ports")
    port = ports[0].get("port") if isinstance(ports, list) and ports and isinstance(ports[0], dict) else None
    return port if isinstance(port, int) and not isinstance(port, bool) else None


def _on_gateways_only(spec: JSON) -> bool:
    parents = [p for p in _list(spec.get("parentRefs")) if isinstance(p, dict)]
    return bool(parents) and all(p.get("kind", "Gateway") == "Gateway" for p in parents)


def _default_rule_weights(spec: JSON) -> dict[str, int] | None:
    """Percent per track of an HTTPRoute's last (default) rule: backends named `<N>-canary`
    are the canary's, the rest the stable's; weights are proportions (default 1)."""
    rules = spec.get("rules")
    if not (isinstance(rules, list) and rules and isinstance(rules[-1], dict)):
        return None
    shares: dict[str, int] = {}
    for ref in _list(rules[-1].get("backendRefs")):
        name = ref.get("name") if isinstance(ref, dict) else None
        if isinstance(name, str):
            track = "canary" if name.endswith("-canary") else "stable"
            shares[track] = shares.get(track, 0) + count(ref.get("weight", 1))
    total = sum(shares.values())
    if not total:
        return None
    canary = round(100 * shares.get("canary", 0) / total)
    return {"stable": 100 - canary, "canary": canary}


def _default_route_weights(spec: JSON) -> dict[str, int] | None:
    """Percent per subset of the last (default) http route, as Istio reads it."""
    routes = spec.get("http")
    if not (isinstance(routes, list) and routes and isinstance(routes[-1], dict)):
        return None
    weights: dict[str, int] = {}
    for destination in _list(routes[-1].get("route")):
        target = destination.get("destination") if isinstance(destination, dict) else None
        subset = target.get("subset") if isinstance(target, dict) else None
        if isinstance(subset, str):
            weights[subset] = weights.get(subset, 0) + count(destination.get("weight", 100))
    return weights
