"""The CRD: generated from the models, committed, structural, and rejecting what the hook rejects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hooks.api.validation import validate_resource
from hooks.errors import SpecError
from hooks.tools.cli import crd_yaml

from tests.conftest import EXAMPLES
from tests.crdschema import (
    CRD_FILE,
    admission_problems,
    committed_crd,
    root_schema,
    schema_problems,
)
from tests.manifests import schema_errors

RESOURCE = {"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
            "metadata": {"name": "llama3", "namespace": "ml"}}

INVALID: list[tuple[dict[str, Any], str]] = [
    ({"model": {"uri": "hf://a/b"}, "autoscaling": {"minReplicas": 5, "maxReplicas": 2}},
     "spec.autoscaling.minReplicas: must be less than or equal to maxReplicas"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"tensorParallelSize": 2}},
     "spec.engine.tensorParallelSize: must not exceed resources.gpu.count"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"engine": {"tensorParallelSize": 2}}},
     "spec.canary: the canary's tensorParallelSize must not exceed its GPU count"),
    ({"model": {"uri": "hf://a/b"}, "resources": {"gpu": {"count": 0}}, "engine": {"tensorParallelSize": 4}},
     "spec.engine.tensorParallelSize: must not exceed resources.gpu.count (1 on CPU)"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"tensorParallelSize": 2},
      "canary": {"resources": {"gpu": {"count": 0}}}},
     "spec.canary: the canary's tensorParallelSize must not exceed its GPU count (1 on CPU)"),
    ({"model": {"uri": "hf://a/b"}, "autoscaling": {"metrics": [{"type": "external", "target": 1}]}},
     "spec.autoscaling.metrics[0].name: name is required for pods and external metrics"),
    ({"model": {"uri": "ftp://a/b"}}, "spec.model.uri: must be hf://"),
    ({"model": {"uri": "hf://a/b", "cache": {"size": "1Gi", "claimName": "x"}}},
     "spec.model.cache: set size or claimName, not both"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"match": [{}]}}, "spec.canary.match[0]: a match must name"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"match": [{"uri": {}}]}},
     "spec.canary.match[0].uri: set exactly one of exact, prefix and regex"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"maxSurge": 0, "maxUnavailable": 0}},
     "spec.rollout.maxSurge: maxSurge and maxUnavailable cannot both be 0"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "triton"}}, "spec.model.uri: triton serves"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"env": [{"name": "A", "value": "1", "valueFrom": {}}]}},
     "spec.engine.env[0]: set value or valueFrom, not both"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"strategy": "Canary"}, "canary": {}},
     "spec.canary: the Canary rollout strategy runs its own canary"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "tgi"},
      "rollout": {"strategy": "Canary", "analysis": {"checks": [{"metric": "ttft-p95", "max": 1}]}}},
     "spec.rollout.analysis.checks: tgi exports no metric for ttft-p95"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "sglang"}, "traffic": {"istio": False},
      "rollout": {"strategy": "Canary", "analysis": {"checks": [{"metric": "error-rate", "max": 0.1}]}}},
     "spec.rollout.analysis.checks: sglang exports no metric for error-rate (error-rate needs router istio)"),
    ({"model": {"uri": "s3://a/b"}, "engine": {"type": "triton"},
      "rollout": {"analysis": {"checks": [{"metric": "kv-cache-usage", "max": 0.9}]}}},
     "spec.rollout.analysis.checks: triton exports no metric for ttft-p95, e2e-latency-p95, kv-cache-usage"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"checks": [{"metric": "error-rate"}]}}},
     "spec.rollout.analysis.checks[0]: set at least one bound"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"checks": [{"name": "x", "max": 1}]}}},
     "spec.rollout.analysis.checks[0]: set metric (a built-in check) or query (PromQL), not both"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"checks": [{"query": "up", "max": 1}]}}},
     "spec.rollout.analysis.checks[0].name: a query check needs a name"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"checks": [
        {"metric": "error-rate", "max": 1}, {"name": "error-rate", "query": "up", "max": 1}]}}},
     "spec.rollout.analysis.checks: check names must be unique"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"intervalSeconds": 120, "windowSeconds": 60}}},
     "spec.rollout.analysis.windowSeconds: must be at least intervalSeconds"),
    # Routers and exposure.
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api", "istio": False}},
     "spec.traffic.istio: istio: false means router none"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "linkerd", "hosts": ["a.example.com"]}},
     "spec.traffic.router: hosts and gateways are the Istio VirtualService's"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "linkerd"}, "canary": {"mirror": True}},
     "spec.canary.mirror: Linkerd does not mirror requests"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"},
      "canary": {"match": [{"headers": {"x-c": {"prefix": "a"}}}]}},
     "spec.canary.match: an HTTPRoute matches headers and query parameters by a non-empty exact value"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"match": [{"headers": {"x-c": {"prefix": "a"}}}]},
      "expose": {"host": "m.example.com", "via": "gateway", "gateway": {"name": "public"}}},
     "spec.canary.match: an HTTPRoute matches headers and query parameters by a non-empty exact value"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"match": [{"headers": {}}]}},
     "spec.canary.match[0]: a match must name headers, uri, queryParams or method (an empty match takes all traffic)"),
    ({"model": {"uri": "hf://a/b"}, "canary": {"match": [{"queryParams": {}, "headers": {}}]}},
     "spec.canary.match[0]: a match must name headers, uri, queryParams or method (an empty match takes all traffic)"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"},
      "canary": {"match": [{"queryParams": {"user[id]": {"exact": "1"}}}]}},
     "spec.canary.match: an HTTPRoute matches header and query parameter names of at most 256 characters"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "linkerd"},
      "canary": {"match": [{"headers": {"x" * 257: {"exact": "1"}}}]}},
     "spec.canary.match: an HTTPRoute matches header and query parameter names of at most 256 characters"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "annotations": {"a b": "1"}}},
     "spec.expose.annotations: annotation keys must be qualified names"),
    ({"model": {"uri": "hf://a/b"}, "pod": {"securityContext": {"runAsNonRoot": True, "runAsUser": 0}}},
     "spec.pod.securityContext.runAsUser: runAsNonRoot with runAsUser 0 never starts"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "sglang"}, "observability": {"tracing": {"endpoint": "http://o:4317"}}},
     "spec.observability.tracing: only vllm and tgi export traces"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "tgi"},
      "observability": {"tracing": {"endpoint": "http://o:4317", "sampleRatio": 0.5}}},
     "spec.observability.tracing.sampleRatio: TGI traces every request"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "10.1.2.3"}},
     "spec.expose.host: must be a DNS name, not an IP address"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "className": "nginx",
                                                "annotations": {"kubernetes.io/ingress.class": "nginx"}}},
     "spec.expose.annotations: className and the kubernetes.io/ingress.class annotation cannot both be set"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "linkerd"},
      "canary": {"match": [{"queryParams": {"v": {"exact": ""}}}]}},
     "spec.canary.match: an HTTPRoute matches headers and query parameters by a non-empty exact value"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"}, "canary": {"match": [{"uri": {"prefix": "v1"}}]}},
     "spec.canary.match: an HTTPRoute matches a uri exact or prefix that is an absolute, normalised path"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"},
      "canary": {"match": [{"uri": {"exact": "/a/../b"}}]}},
     "spec.canary.match: an HTTPRoute matches a uri exact or prefix that is an absolute, normalised path"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"},
      "canary": {"match": [{"method": {"prefix": "PO"}}]}},
     "spec.canary.match: an HTTPRoute matches a method exactly"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"router": "gateway-api"},
      "canary": {"match": [{"method": {"exact": "FETCH"}}]}},
     "spec.canary.match: an HTTPRoute matches a method exactly"),
    ({"model": {"uri": "hf://a/b"}, "traffic": {"istio": False},
      "expose": {"host": "m.example.com", "via": "istio", "gateway": {"name": "pub"}}},
     "spec.expose.via: expose via istio adds a Gateway to the VirtualService"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "via": "gateway"}},
     "spec.expose.gateway: via gateway and istio name a gateway"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "gateway": {"name": "pub"}}},
     "spec.expose.gateway: via gateway and istio name a gateway"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "via": "gateway", "gateway": {"name": "p"},
                                               "tls": {"secretName": "t"}}},
     "spec.expose.via: className and tls are the Ingress's"),
    ({"model": {"uri": "hf://a/b"}, "expose": {"host": "m.example.com", "via": "istio",
                                               "gateway": {"name": "p", "sectionName": "https"}}},
     "spec.expose.via: an Istio Gateway is named on the VirtualService"),
]
SCHEMA_INVALID: list[tuple[dict[str, Any], str]] = [
    ({"model": {"uri": "hf://a/b"}, "canary": {"weight": 101}}, "spec.canary.weight"),
    ({"model": {"uri": "hf://a/b"}, "observability": {"tracing": {"endpoint": "otel:4317"}}},
     "spec.observability.tracing.endpoint"),
    ({"model": {"uri": "hf://a/b"}, "observability": {"tracing": {"endpoint": "http://o:4317", "sampleRatio": 2}}},
     "spec.observability.tracing.sampleRatio"),
    ({"model": {"uri": "hf://a/b"}, "replicas": -1}, "spec.replicas"),
    ({"model": {"uri": "hf://a/b"}, "resources": {"gpu": {"count": -1}}}, "spec.resources.gpu.count"),
    ({"model": {"uri": "hf://a/b"}, "resources": {"memory": "32GB"}}, "spec.resources.memory"),
    ({"model": {"uri": "hf://a/b"}, "autoscaling": {"metrics": [{"type": "cpu", "target": 0}]}},
     "spec.autoscaling.metrics.0.target"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"type": "llamacpp"}}, "spec.engine.type"),
    ({"model": {"uri": "hf://a/b"}, "engine": {"typo": 1}}, "spec.engine"),
    ({}, "spec"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"strategy": "BlueGreen"}}, "spec.rollout.strategy"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"steps": []}}, "spec.rollout.steps"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"steps": [{"weight": 0}]}}, "spec.rollout.steps.0.weight"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"steps": [{"weight": 101}]}}, "spec.rollout.steps.0.weight"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"canaryReplicas": 0}}, "spec.rollout.canaryReplicas"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"canaryReplicas": "half"}}, "spec.rollout.canaryReplicas"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"provider": "http://evil:9090"}}},
     "spec.rollout.analysis.provider"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"intervalSeconds": 1}}},
     "spec.rollout.analysis.intervalSeconds"),
    ({"model": {"uri": "hf://a/b"}, "rollout": {"analysis": {"checks": [{"metric": "p99", "max": 1}]}}},
     "spec.rollout.analysis.checks.0.metric"),
]


def resource(spec: dict[str, Any], name: str = "llama3") -> dict[str, Any]:
    return {**copy.deepcopy(RESOURCE), "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def test_committed_crd_is_the_generated_one() -> None:
    assert CRD_FILE.read_text() == crd_yaml(), "crds/ is stale: run `make crd` and commit the result"


def test_crd_is_structural_and_valid() -> None:
    assert schema_errors([committed_crd()]) == []


def test_crd_names_and_columns() -> None:
    spec = committed_crd()["spec"]
    assert spec["names"]["shortNames"] == ["llmd"] and spec["names"]["categories"] == ["llm-serving"]
    (version,) = spec["versions"]
    assert version["subresources"] == {"status": {}} and version["served"] and version["storage"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Model", "Engine", "Canary", "Ready", "Phase", "Rollout", "Age"]


def test_every_field_has_a_description() -> None:
    def missing(schema: dict[str, Any], path: str) -> list[str]:
        found = [] if schema.get("description") else [path]
        for key, sub in schema.get("properties", {}).items():
            found += missing(sub, f"{path}.{key}")
        if isinstance(schema.get("items"), dict):
            found += [p for p in missing(schema["items"], f"{path}[]") if not p.endswith("[]")]
        return found

    properties = root_schema()["properties"]
    assert missing(properties["spec"], "spec") == [] and missing(properties["status"], "status") == []


def test_no_pydantic_leftovers() -> None:
    text = CRD_FILE.read_text()
    for leftover in ("$ref", "anyOf", "$defs", "title:", "type: null", "exclusiveMinimum: 0"):
        assert leftover not in text


# The keys of apiextensions.k8s.io/v1 JSONSchemaProps we may use (no refs, no combinators).
SCHEMA_KEYS = {"description", "type", "format", "default", "maximum", "exclusiveMaximum", "minimum",
               "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
               "multipleOf", "enum", "maxProperties", "minProperties", "required", "items", "properties",
               "additionalProperties", "nullable", "example"}


def test_every_schema_key_is_one_kubernetes_knows() -> None:
    """The API server silently drops what it does not know (a `const` would check nothing)."""
    def unknown(node: dict[str, Any], where: str) -> list[str]:
        found = [f"{where}.{k}" for k in node if k not in SCHEMA_KEYS and not k.startswith("x-kubernetes-")]
        for key, sub in node.get("properties", {}).items():
            found += unknown(sub, f"{where}.{key}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                found += unknown(node[key], f"{where}[]")
        return found

    assert unknown(root_schema(), "") == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_crd_accepts_every_example(path: Path) -> None:
    assert admission_problems(yaml.safe_load(path.read_text())) == []


def test_crd_accepts_examples_with_the_shared_validator() -> None:
    assert schema_errors([yaml.safe_load(p.read_text()) for p in EXAMPLES], extra_crds=[committed_crd()]) == []


@pytest.mark.parametrize(("spec", "message"), INVALID)
def test_crd_and_hook_reject_with_the_same_message(spec: dict[str, Any], message: str) -> None:
    crd_says = admission_problems(resource(spec))
    assert any(p.startswith(message) for p in crd_says), crd_says
    with pytest.raises(SpecError) as hook_says:
        validate_resource("llama3", spec)
    assert set(crd_says) <= set(hook_says.value.errors)


@pytest.mark.parametrize(("spec", "where"), SCHEMA_INVALID)
def test_crd_schema_rejects_bad_values(spec: dict[str, Any], where: str) -> None:
    problems = admission_problems(resource(spec))
    assert problems and any(p.startswith(where) for p in problems), problems


@pytest.mark.parametrize(("name", "ok"), [
    ("a" * 45, True), ("a" * 46, False), ("1abc", False), ("chat-stable", False), ("chat-canary", False),
    ("chat-external", False), ("stable", True), ("canary-chat", True), ("chat-stables", True)])
def test_name_rules(name: str, ok: bool) -> None:
    """The CRD and the hook agree; a name ending like another resource's track Service or
    external route is refused, so that two resources never render the same child."""
    spec = {"model": {"uri": "hf://a/b"}}
    problems = admission_problems(resource(spec, name=name))
    assert (problems == []) == ok
    assert all(p.startswith("metadata.name: ") for p in problems)
    try:
        validate_resource(name, spec)
        hook_problems: list[str] = []
    except SpecError as e:
        hook_problems = list(e.errors)
    assert hook_problems == problems


def test_defaults_make_the_cel_rules_evaluable() -> None:
    assert admission_problems(resource({"model": {"uri": "hf://a/b"}, "canary": {}})) == []


def test_null_disruption_budget_survives_defaulting() -> None:
    from tests.crdschema import with_defaults

    defaulted = with_defaults(root_schema(), resource({"model": {"uri": "hf://a/b"}, "disruptionBudget": None}))
    assert defaulted["spec"]["disruptionBudget"] is None
    assert with_defaults(root_schema(), resource({"model": {"uri": "hf://a/b"}}))["spec"]["disruptionBudget"] == \
        {"maxUnavailable": 1}


def test_status_schema_rejects_unknown_fields() -> None:
    status_schema = root_schema()["properties"]["status"]
    assert schema_problems(status_schema, {"observedGeneration": 1, "phase": "Ready", "bogus": 1})


M = {"uri": "hf://a/b"}
LONG = "x" * 600
# Values the API server would reject in the children: the CRD and the hook reject them first,
# naming the field (#11 item 9 and its variants).
KUBERNETES_REJECTS: list[tuple[dict[str, Any], str]] = [
    ({"model": M, "replicas": 3_000_000_000}, "spec.replicas"),
    ({"model": M, "canary": {"replicas": 2**31}}, "spec.canary.replicas"),
    ({"model": M, "autoscaling": {"maxReplicas": 2**31}}, "spec.autoscaling.maxReplicas"),
    ({"model": M, "startupTimeoutSeconds": 2_147_483_000}, "spec.startupTimeoutSeconds"),
    ({"model": M, "traffic": {"timeoutSeconds": 9_999_999_999_999}}, "spec.traffic.timeoutSeconds"),
    ({"model": M, "engine": {"maxModelLen": 2**40}}, "spec.engine.maxModelLen"),
    ({"model": M, "autoscaling": {"metrics": [{"type": "cpu", "target": 2**31}]}}, "spec.autoscaling.metrics"),
    ({"model": M, "rollout": {"maxSurge": "0%", "maxUnavailable": "00%"}}, "spec.rollout.maxUnavailable"),
    ({"model": M, "rollout": {"maxSurge": "05%"}}, "spec.rollout.maxSurge"),
    ({"model": M, "rollout": {"maxUnavailable": "101%"}}, "spec.rollout.maxUnavailable"),
    ({"model": M, "rollout": {"maxSurge": 2**31}}, "spec.rollout.maxSurge"),
    ({"model": M, "disruptionBudget": {"maxUnavailable": "250%"}}, "spec.disruptionBudget.maxUnavailable"),
    ({"model": M, "pod": {"labels": {LONG: "v"}}}, "spec.pod.labels"),
    ({"model": M, "pod": {"labels": {"team": LONG}}}, "spec.pod.labels"),
    ({"model": M, "pod": {"labels": {"a b": "v"}}}, "spec.pod.labels"),
    ({"model": M, "pod": {"labels": {"team": "a\nb"}}}, "spec.pod.labels"),
    ({"model": M, "pod": {"labels": {"x" * 254 + "/a": "v"}}}, "spec.pod.labels"),
    ({"model": M, "pod": {"nodeSelector": {"pool": "gpu pool"}}}, "spec.pod.nodeSelector"),
    ({"model": M, "pod": {"annotations": {"bad key": "v"}}}, "spec.pod.annotations"),
    ({"model": M, "pod": {"serviceAccountName": "a\n---"}}, "spec.pod.serviceAccountName"),
    ({"model": M, "pod": {"priorityClassName": "High"}}, "spec.pod.priorityClassName"),
    ({"model": M, "pod": {"imagePullSecrets": [{"name": "a_b"}]}}, "spec.pod.imagePullSecrets"),
    ({"model": M, "pod": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}},
     "spec.pod.tolerations[0].value"),
    ({"model": M, "pod": {"tolerations": [{"effect": "NoSchedule"}]}}, "spec.pod.tolerations[0].key"),
    ({"model": M, "pod": {"affinity": {"nodeAffinity": {"x": 1}}}}, "spec.pod.affinity"),
    ({"model": M, "pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]}}}}}, "spec.pod.affinity"),
    ({"model": M, "traffic": {"hosts": [""]}}, "spec.traffic.hosts"),
    ({"model": M, "traffic": {"hosts": ["Bad Host"]}}, "spec.traffic.hosts"),
    ({"model": M, "traffic": {"gateways": ["a/b/c"]}}, "spec.traffic.gateways"),
    ({"model": M, "traffic": {"retries": {"retryOn": "5xx; rm"}}}, "spec.traffic.retries.retryOn"),
    ({"model": {**M, "credentialsSecret": "Hf_Token"}}, "spec.model.credentialsSecret"),
    ({"model": {**M, "cache": {"claimName": "a b"}}}, "spec.model.cache.claimName"),
    ({"model": M, "engine": {"env": [{"name": "A=B", "value": "1"}]}}, "spec.engine.env[0].name"),
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}},
     "spec.engine.env[0].valueFrom"),
    ({"model": M, "engine": {"image": "vllm/vllm openai"}}, "spec.engine.image"),
    ({"model": M, "resources": {"gpu": {"product": "H100 80GB"}}}, "spec.resources.gpu.product"),
    ({"model": M, "canary": {"match": [{"headers": {"X-Canary": {"exact": "1"}}}]}}, "spec.canary.match[0].headers"),
    ({"model": M, "autoscaling": {"metrics": [{"type": "pods", "name": "a/b", "target": 1}]}},
     "spec.autoscaling.metrics[0].name"),
    ({"model": M, "autoscaling": {"metrics": [{"type": "cpu", "target": 1, "selector": {}}]}},
     "spec.autoscaling.metrics[0].selector"),
]


def test_a_quantity_beyond_64_bits_is_invalid() -> None:
    """The API server cannot even decode it; the hook says which field."""
    with pytest.raises(SpecError, match="spec.resources.memory"):
        validate_resource("llama3", {"model": M, "resources": {"memory": 2**64}})


@pytest.mark.parametrize(("spec", "field"), KUBERNETES_REJECTS, ids=[w for _, w in KUBERNETES_REJECTS])
def test_what_kubernetes_would_reject_in_a_child_is_rejected_first(spec: dict[str, Any], field: str) -> None:
    crd_says = admission_problems(resource(spec))
    assert any(field in p.replace(".0.", "[0].") for p in crd_says), crd_says
    with pytest.raises(SpecError) as hook_says:
        validate_resource("llama3", spec)
    assert any(e.startswith(field) for e in hook_says.value.errors), hook_says.value.errors


MORE_REJECTS: list[tuple[dict[str, Any], str]] = [
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]}},
     "spec.engine.env[0].valueFrom.fieldRef.fieldPath"),
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name",
                                                                              "apiVersion": "v9"}}}]}},
     "spec.engine.env[0].valueFrom.fieldRef.apiVersion"),
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "bogus"}}}]}},
     "spec.engine.env[0].valueFrom.resourceFieldRef.resource"),
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {
        "resource": "limits.memory", "divisor": 3}}}]}}, "spec.engine.env[0].valueFrom.resourceFieldRef.divisor"),
    ({"model": M, "engine": {"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": ".."}}}]}},
     "spec.engine.env[0].valueFrom.secretKeyRef.key"),
    ({"model": M, "pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]}]}}}}},
     "spec.pod.affinity"),
    ({"model": M, "pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "spec.bogus", "operator": "In", "values": ["a", "b"]}]}]}}}}},
     "spec.pod.affinity"),
    ({"model": M, "pod": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "namespaces": ["not.a.label"]}]}}}}, "spec.pod.affinity"),
    ({"model": M, "pod": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "matchLabelKeys": ["app"]}]}}}}, "spec.pod.affinity"),
    ({"model": M, "pod": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                           "tolerationSeconds": 30}]}}, "spec.pod.tolerations[0].tolerationSeconds"),
    ({"model": M, "resources": {"gpu": {"resourceName": "vendor.com/" + "g" * 64}}}, "spec.resources.gpu.resourceName"),
    ({"model": M, "resources": {"gpu": {"resourceName": "gpu/x"}}}, "spec.resources.gpu.resourceName"),
    ({"model": M, "traffic": {"hosts": ["*"]}}, "spec.traffic.hosts"),
    ({"model": M, "traffic": {"hosts": ["a" * 64 + ".example.com"]}}, "spec.traffic.hosts"),
    ({"model": M, "traffic": {"retries": {"retryOn": "bogus-policy"}}}, "spec.traffic.retries.retryOn"),
]


@pytest.mark.parametrize(("spec", "field"), MORE_REJECTS, ids=[w for _, w in MORE_REJECTS])
def test_more_of_what_kubernetes_and_istio_would_reject(spec: dict[str, Any], field: str) -> None:
    test_what_kubernetes_would_reject_in_a_child_is_rejected_first(spec, field)


@pytest.mark.parametrize(("spec", "field"), [
    ({"model": M, "canary": {"match": [{"headers": {"x": {"regex": "("}}}]}}, "spec.canary.match[0].headers.x.regex"),
    ({"model": M, "canary": {"match": [{"uri": {"regex": "a(?=b)"}}]}}, "spec.canary.match[0].uri.regex"),
    ({"model": M, "engine": {"env": [{"name": f"V{i}", "value": "x" * 4000} for i in range(40)]}}, "spec:"),
    ({"model": M, "rollout": {"analysis": {"checks": [{"name": "q", "min": 1, "query": 'up{job={{ name }}}'}]}}},
     "spec.rollout.analysis.checks[0].query: {{ name }} must stand inside a quoted string"),
    ({"model": M, "rollout": {"analysis": {"checks": [{"name": "q", "min": 1, "query": "up{job=`{{ name }}`}"}]}}},
     "spec.rollout.analysis.checks[0].query: {{ name }} cannot stand in a raw"),
])
def test_the_hook_rejects_what_only_it_can_check(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as hook_says:
        validate_resource("llama3", spec)
    assert any(e.startswith(field) for e in hook_says.value.errors), hook_says.value.errors
