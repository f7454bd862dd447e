"""Observed children become typed objects with one rule for malformed counts."""

from __future__ import annotations

from typing import Any

from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION
from hooks.contract.observed import RESOLVED_ANNOTATION, ObservedRoute
from hooks.contract.request import parse_request

from tests import metacontroller as mc


def deployment(name: str, status: object, spec: object = None, generation: object = 2) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ml", "generation": generation,
                         "annotations": {LAST_APPLIED_ANNOTATION: "{}"}},
            "spec": spec if spec is not None else {"replicas": 3}, "status": status}


def test_deployments_are_read_with_their_counts_and_conditions() -> None:
    live = deployment("llama3-stable", {"observedGeneration": 2, "replicas": 3, "readyReplicas": 2,
                                        "availableReplicas": 2, "updatedReplicas": 3, "conditions": [
                                            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                                             "lastTransitionTime": "2026-09-01T10:00:00Z"}]})
    observed = parse_request(mc.request(mc.parent({}), [live])).observed
    seen = observed.deployments["llama3-stable"]
    assert (seen.generation, seen.observed_generation, seen.spec_replicas) == (2, 2, 3)
    assert (seen.replicas, seen.ready, seen.available, seen.updated) == (3, 2, 2, 3)
    available = seen.condition("Available")
    assert available is not None and available.reason == "MinimumReplicasUnavailable"
    assert available.last_transition_time is not None and available.last_transition_time.hour == 10
    assert seen.last_applied == "{}" and observed.available("llama3-stable") == 2
    assert observed.available("llama3-canary") == 0


def test_malformed_counts_read_as_zero_and_a_missing_replicas_as_one() -> None:
    live = deployment("llama3-stable", {"replicas": "3", "readyReplicas": True, "availableReplicas": -1,
                                        "conditions": "nope"}, spec={}, generation="x")
    seen = parse_request(mc.request(mc.parent({}), [live])).observed.deployments["llama3-stable"]
    assert (seen.generation, seen.spec_replicas, seen.replicas, seen.ready, seen.available) == (0, 1, 0, 0, 0)
    assert seen.conditions == ()


def test_children_are_ordered_whatever_the_map_keys() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llama3"}, "spec": {"ports": [{"port": 9}]}}
    route = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "llama3"},
             "spec": {"http": [{"route": [{"destination": {"subset": "stable"}, "weight": 70},
                                          {"destination": {"subset": "canary"}, "weight": 30}]}]}}
    raw = mc.request(mc.parent({}))
    raw["children"] = {"b": {"2": route, "1": service}, "a": {"3": deployment("llama3-stable", {})}}
    observed = parse_request(raw).observed
    assert [(c.kind, c.name) for c in observed.children] == [
        ("Deployment", "llama3-stable"), ("Service", "llama3"), ("VirtualService", "llama3")]
    assert observed.service_ports == {"llama3": 9}
    assert observed.routes == {"llama3": ObservedRoute("istio", {"stable": 70, "canary": 30})}


def test_routes_on_a_gateway_are_not_the_mesh_split_whatever_their_name() -> None:
    def route(name: str, parent: dict[str, str], canary: int) -> dict[str, Any]:
        return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": name},
                "spec": {"parentRefs": [parent], "rules": [{"backendRefs": [
                    {"name": "llama3-stable", "port": 8000, "weight": 100 - canary},
                    {"name": "llama3-canary", "port": 8000, "weight": canary}]}]}}

    external = route("llama3", {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public"}, 50)
    mesh = route("llama3-external", {"group": "", "kind": "Service", "name": "llama3"}, 20)
    for routes, expected in (([external], {}), ([mesh], {"llama3-external": ObservedRoute(
            "gateway-api", {"stable": 80, "canary": 20})})):
        assert parse_request(mc.request(mc.parent({}), routes)).observed.routes == expected


def test_a_pin_annotation_is_read_as_strict_json() -> None:
    """A value JSON does not allow (NaN, a lone surrogate) would reach a template, which
    cannot quote it: such an annotation reads as no pin at all."""
    pins = {"ok": '{"version": "3"}', "nan": '{"version": NaN}', "surrogate": '{"artifactUri": "s3://b/\\ud800"}',
            "list": "[1]", "broken": "{"}
    read = {}
    for name, text in pins.items():
        live = deployment("llama3-stable", {})
        live["metadata"]["annotations"][RESOLVED_ANNOTATION] = text  # type: ignore[index]
        read[name] = parse_request(mc.request(mc.parent({}), [live])).observed.deployments["llama3-stable"].resolved
    assert read == {"ok": {"version": "3"}, "nan": None, "surrogate": None, "list": None, "broken": None}
