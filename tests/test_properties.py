"""Invariants over generated valid specs: schema-valid children, consistent selectors and
subsets, weights that sum to 100, no nulls, determinism."""

from __future__ import annotations

import copy
from typing import Any

from hooks.canonical import loads
from hooks.rendering.templateset import TemplateSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import metacontroller as mc
from tests.manifests import builtin_errors, schema_errors, shared_validator
from tests.strategies import specs
from tests.syncing import encoded, run_sync

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def canary_up(spec: dict[str, Any], available: int) -> list[dict[str, Any]]:
    if "canary" not in spec:
        return []
    return [{"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "llama3-canary", "namespace": "ml", "generation": 1},
             "status": {"availableReplicas": available, "observedGeneration": 1}}]


def by_kind(children: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [c for c in children if c["kind"] == kind]


def collect_nulls(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(collect_nulls(v) for v in value.values())
    if isinstance(value, list):
        return any(collect_nulls(v) for v in value)
    return False


@FAST
@given(specs(), st.integers(0, 2))
def test_invariants_hold_for_any_valid_spec(templates: TemplateSet, spec: dict[str, Any], available: int) -> None:
    raw = mc.request(mc.parent(spec), [])
    raw["children"]["Deployment.apps/v1"] = {c["metadata"]["name"]: c for c in canary_up(spec, available)}
    result = run_sync(copy.deepcopy(raw), templates)
    assert result.outcome == "ok", result.status
    children = list(result.children)
    body = encoded(result)
    assert not collect_nulls(loads(body))
    assert encoded(run_sync(raw, templates)) == body

    common = {"app.kubernetes.io/name": "llmdeploy", "app.kubernetes.io/instance": "llama3",
              "app.kubernetes.io/managed-by": "llmdeploy", "serving.llmdeploy.io/llmdeployment": "llama3"}
    assert all(common.items() <= c["metadata"]["labels"].items() for c in children)
    deployments = by_kind(children, "Deployment")
    assert [d["metadata"]["name"] for d in deployments] == ["llama3-stable"] + (["llama3-canary"] if "canary" in spec
                                                                                 else [])
    for d in deployments:
        pod_labels = d["spec"]["template"]["metadata"]["labels"]
        track = d["metadata"]["labels"]["serving.llmdeploy.io/track"]
        assert {**common, "serving.llmdeploy.io/track": track, "service.istio.io/canonical-name": "llama3",
                "service.istio.io/canonical-revision": track}.items() <= pod_labels.items()
        assert d["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        assert ("replicas" in d["spec"]) != (d["metadata"]["name"].endswith("stable") and "autoscaling" in spec)
        assert all(isinstance(v, str) for c in d["spec"]["template"]["spec"]["containers"]
                   for r in c["resources"].values() for v in r.values())
    service = by_kind(children, "Service")[0]
    assert all(service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
               for d in deployments)
    for budget in by_kind(children, "PodDisruptionBudget"):
        assert budget["spec"]["selector"] == deployments[0]["spec"]["selector"]
    for hpa in by_kind(children, "HorizontalPodAutoscaler"):
        assert hpa["spec"]["scaleTargetRef"]["name"] == "llama3-stable"

    for obj in children:
        if obj["apiVersion"].startswith("networking.istio.io"):
            continue
        assert builtin_errors(obj) == []

    if spec["traffic"]["istio"]:
        (rule,) = by_kind(children, "DestinationRule")
        subsets = {s["name"]: s["labels"] for s in rule["spec"]["subsets"]}
        assert set(subsets) == {d["metadata"]["labels"]["serving.llmdeploy.io/track"] for d in deployments}
        for d in deployments:
            track = d["metadata"]["labels"]["serving.llmdeploy.io/track"]
            assert subsets[track].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        (service_routes,) = by_kind(children, "VirtualService")
        for route in service_routes["spec"]["http"]:
            assert sum(r.get("weight", 100) for r in route["route"]) == 100
            assert {r["destination"]["subset"] for r in route["route"]} <= set(subsets)
        default = service_routes["spec"]["http"][-1]
        canary_weight = sum(r["weight"] for r in default["route"] if r["destination"]["subset"] == "canary")
        expected = spec["canary"]["weight"] if "canary" in spec and available > 0 else 0
        assert canary_weight == expected
        assert result.status.traffic is not None and result.status.traffic.canary == expected
    else:
        assert not by_kind(children, "VirtualService") and not by_kind(children, "DestinationRule")

    if shared_validator() is not None:
        assert schema_errors(children) == []
