"""The API page's rules, enforced by the hook with the CRD's own CEL expressions."""

from __future__ import annotations

from typing import Any

import pytest
from hooks.api.spec import LLMDeploymentSpec
from hooks.api.validation import validate_resource
from hooks.errors import SpecError

MODEL = {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct"}


def errors_of(spec: Any, name: str = "llama3") -> list[str]:
    with pytest.raises(SpecError) as caught:
        validate_resource(name, spec)
    return caught.value.errors


def test_defaults_are_those_of_the_api_page() -> None:
    spec = validate_resource("llama3", {"model": MODEL})
    assert spec.engine.type == "vllm" and spec.engine.port == 8000 and spec.engine.image == ""
    assert spec.resources.gpu.count == 1 and spec.resources.gpu.resource_name == "nvidia.com/gpu"
    assert (spec.resources.cpu, spec.resources.memory) == ("4", "32Gi")
    assert spec.replicas == 1 and spec.autoscaling is None and spec.canary is None
    assert spec.model.cache.size == "100Gi" and spec.model.quantization == "none"
    assert spec.traffic.istio and spec.traffic.timeout_seconds == 600 and spec.traffic.load_balancer == "LEAST_REQUEST"
    assert spec.traffic.retries.attempts == 2 and spec.traffic.retries.per_try_timeout_seconds == 300
    assert spec.startup_timeout_seconds == 1800 and not spec.paused
    assert (spec.rollout.max_surge, spec.rollout.max_unavailable) == (1, 0)
    assert spec.disruption_budget is not None and spec.disruption_budget.max_unavailable == 1
    scaled = validate_resource("llama3", {"model": MODEL, "autoscaling": {}, "canary": {}})
    assert scaled.autoscaling is not None and scaled.autoscaling.metrics[0].type == "queue-length"
    assert scaled.autoscaling.metrics[0].target == 5 and scaled.autoscaling.scale_down_stabilization_seconds == 600
    assert scaled.canary is not None and scaled.canary.weight == 10 and scaled.canary.mirror_percent == 100


def test_null_disruption_budget_means_none() -> None:
    assert validate_resource("llama3", {"model": MODEL, "disruptionBudget": None}).disruption_budget is None


@pytest.mark.parametrize(("spec", "expected"), [
    ({"model": MODEL, "autoscaling": {"minReplicas": 5, "maxReplicas": 2}},
     "spec.autoscaling.minReplicas: must be less than or equal to maxReplicas"),
    ({"model": MODEL, "canary": {"weight": 101}}, "spec.canary.weight: must be less than or equal to 100"),
    ({"model": MODEL, "canary": {"weight": -1}}, "spec.canary.weight: must be greater than or equal to 0"),
    ({"model": MODEL, "replicas": -1}, "spec.replicas: must be greater than or equal to 0"),
    ({"model": MODEL, "resources": {"gpu": {"count": -1}}}, "spec.resources.gpu.count: must be greater than or equal to 0"),
    ({"model": MODEL, "engine": {"tensorParallelSize": 2}},
     "spec.engine.tensorParallelSize: must not exceed resources.gpu.count"),
    ({"model": MODEL, "canary": {"engine": {"tensorParallelSize": 4}, "resources": {"gpu": {"count": 2}}}},
     "spec.canary: the canary's tensorParallelSize must not exceed its GPU count"),
    ({"model": MODEL, "resources": {"gpu": {"count": 0}}, "engine": {"tensorParallelSize": 4}},
     "spec.engine.tensorParallelSize: must not exceed resources.gpu.count (1 on CPU)"),
    ({"model": MODEL, "autoscaling": {"metrics": [{"type": "cpu", "target": 0}]}},
     "spec.autoscaling.metrics[0].target: must be greater than 0"),
    ({"model": MODEL, "autoscaling": {"metrics": [{"type": "pods", "target": 3}]}},
     "spec.autoscaling.metrics[0].name: name is required for pods and external metrics"),
    ({"model": MODEL, "autoscaling": {"metrics": [{"type": "external", "target": 3}]}},
     "spec.autoscaling.metrics[0].name: name is required for pods and external metrics"),
    ({"model": {"uri": "ftp://host/model"}}, "spec.model.uri: must be hf://"),
    ({"model": {"uri": "pvc://Bad_Claim/x"}}, "spec.model.uri: must be hf://"),
    ({"model": MODEL, "canary": {"model": {"uri": "llama"}}}, "spec.canary.model.uri: must be hf://"),
    ({"model": MODEL, "resources": {"memory": "32GB"}}, "spec.resources.memory: must be a Kubernetes quantity"),
    ({"model": MODEL, "resources": {"cpu": -4}}, "spec.resources.cpu: must be a Kubernetes quantity"),
    ({"model": {**MODEL, "cache": {"size": "1Gi", "claimName": "c"}}}, "spec.model.cache: set size or claimName, not both"),
    ({"model": MODEL, "engine": {"type": "llamacpp"}}, "spec.engine.type: must be one of"),
    ({"model": {**MODEL, "quantization": "q4"}}, "spec.model.quantization: must be one of"),
    ({"model": MODEL, "engine": {"imgae": "x"}}, "spec.engine.imgae: unknown field"),
    ({"model": MODEL, "engine": {"port": "8000"}}, "spec.engine.port: must be an integer"),
    ({"model": MODEL, "engine": {"port": 70000}}, "spec.engine.port: must be less than or equal to 65535"),
    ({"model": MODEL, "canary": {"match": [{}]}}, "spec.canary.match[0]: a match must name headers"),
    ({"model": MODEL, "canary": {"match": [{"headers": {"x": {"exact": "a", "prefix": "b"}}}]}},
     "spec.canary.match[0].headers.x: set exactly one of exact, prefix and regex"),
    ({"model": MODEL, "rollout": {"maxSurge": 0, "maxUnavailable": "0%"}},
     "spec.rollout.maxSurge: maxSurge and maxUnavailable cannot both be 0"),
    ({"model": MODEL, "rollout": {"maxSurge": "lots"}}, "spec.rollout.maxSurge: must be a whole number or a percentage"),
    ({"model": MODEL, "engine": {"env": [{"name": "A", "value": "1", "valueFrom": {}}]}},
     "spec.engine.env[0]: set value or valueFrom, not both"),
    ({"model": {"uri": "hf://org/m"}, "engine": {"type": "triton"}}, "spec.model.uri: triton serves a model repository"),
    ({"model": MODEL}, None),
    ({}, "spec.model: required"),
    ([], "spec: must be an object"),
    (None, "spec: must be an object"),
])
def test_each_rule_gives_its_message(spec: Any, expected: str | None) -> None:
    if expected is None:
        validate_resource("llama3", spec)
        return
    assert any(e.startswith(expected) for e in errors_of(spec)), errors_of(spec)


@pytest.mark.parametrize(("name", "ok"), [("a" * 45, True), ("a" * 46, False), ("llama3", True),
                                          ("3llama", False), ("Llama", False), ("llama-", False)])
def test_names_must_fit_every_child(name: str, ok: bool) -> None:
    if ok:
        validate_resource(name, {"model": MODEL})
    else:
        assert any(e.startswith("metadata.name: ") for e in errors_of({"model": MODEL}, name))


def test_every_error_is_reported_at_once() -> None:
    errors = errors_of({"model": {"uri": "x", "quantization": "q"}, "replicas": -1, "engine": {"typo": 1}}, "BAD")
    assert len(errors) == 5
    assert errors[0].startswith("metadata.name:")


def test_rules_also_run_when_the_schema_is_fine() -> None:
    errors = errors_of({"model": {"uri": "ftp://x"}, "autoscaling": {"minReplicas": 3, "maxReplicas": 1}})
    assert len(errors) == 2


def test_valid_spec_keeps_what_was_written() -> None:
    spec = LLMDeploymentSpec.model_validate({"model": MODEL, "resources": {"cpu": 8, "memory": "64Gi"}})
    assert spec.resources.cpu == 8
    assert spec.model_dump(by_alias=True)["resources"]["memory"] == "64Gi"
