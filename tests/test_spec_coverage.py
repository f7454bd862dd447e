"""Every spec field reaches the answer. Adding a field touches the model, the view and a
template; this test fails when a field of any spec model has no entry below ("which field
did you add?"), and when setting a field changes nothing the hook answers ("the view or
the template forgot it")."""

from __future__ import annotations

import copy
import re
import types
import typing
import zlib
from datetime import timedelta
from typing import Any

import pytest
from hooks.api.spec import LLMDeploymentSpec
from hooks.core.facts import Measurement, QueryResult
from hooks.core.rollout import MeasurementPlan
from hooks.errors import UnsafeToAnswer
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ROUTERS, ChildSettings, Settings
from pydantic import BaseModel

from tests import metacontroller as mc
from tests.rollouts import Rollout, values
from tests.syncing import encoded, run_sync

BASE: dict[str, Any] = {
    "model": {"uri": "s3://models/llama", "revision": "1", "servedName": "llama", "quantization": "awq",
              "credentialsSecret": "creds", "cache": {"size": "50Gi"}},
    "engine": {"type": "vllm", "image": "registry.example.com/vllm:1", "args": ["--x"],
               "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
               "maxModelLen": 4096, "tensorParallelSize": 2, "port": 8000},
    "resources": {"gpu": {"count": 2, "resourceName": "nvidia.com/gpu", "product": "H100"}, "cpu": "4", "memory": "32Gi"},
    "replicas": 2,
    "autoscaling": {"minReplicas": 1, "maxReplicas": 4, "scaleDownStabilizationSeconds": 600, "metrics": [
        {"type": "queue-length", "target": 5},
        {"type": "external", "name": "q", "target": 100, "selector": {"matchLabels": {"q": "a"}}}]},
    "canary": {"weight": 10, "replicas": 1,
               "model": {"uri": "s3://models/llama2", "revision": "2", "servedName": "llama-c", "quantization": "gptq",
                         "credentialsSecret": "creds-c", "cache": {"size": "60Gi"}},
               "engine": {"type": "vllm", "image": "registry.example.com/vllm:2", "args": ["--y"],
                          "env": [{"name": "C", "value": "3"}], "maxModelLen": 2048, "tensorParallelSize": 1,
                          "port": 8000},
               "resources": {"gpu": {"count": 2, "resourceName": "nvidia.com/gpu", "product": "L40S"}, "cpu": "2",
                             "memory": "16Gi"},
               "match": [{"headers": {"x-canary": {"exact": "1"}}, "uri": {"prefix": "/v1"},
                          "queryParams": {"c": {"regex": "y.*"}}, "method": {"exact": "POST"}}],
               "mirror": True, "mirrorPercent": 20},
    "traffic": {"istio": True, "hosts": ["h.example.com"], "gateways": ["istio-system/gw"], "timeoutSeconds": 600,
                "retries": {"attempts": 2, "perTryTimeoutSeconds": 300, "retryOn": "5xx"}, "loadBalancer": "LEAST_REQUEST"},
    "pod": {"nodeSelector": {"pool": "gpu"}, "affinity": {"nodeAffinity": {}}, "labels": {"team": "a"},
            "annotations": {"note": "a"}, "serviceAccountName": "sa", "priorityClassName": "high",
            "imagePullSecrets": [{"name": "pull"}], "securityContext": {},
            "tolerations": [{"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoExecute",
                             "tolerationSeconds": 60}]},
    "startupTimeoutSeconds": 1800,
    "rollout": {"maxSurge": 1, "maxUnavailable": 0},
    "disruptionBudget": {"maxUnavailable": 1},
    "expose": {"host": "m.example.com", "className": "nginx", "tls": {"secretName": "m-tls"}, "annotations": {"a": "1"}},
    "access": {"from": [{"namespace": "apps"}, {"serviceAccount": "apps/web"}], "mtls": "STRICT"},
    "paused": False,
}
EVERY_ROUTER = ChildSettings(routers=ROUTERS)

# One change per field of every spec model, as (path, new value); None removes the field. A
# "path & path" entry changes several fields at once (the value is then a tuple).
EFFECTS: list[tuple[str, Any]] = [
    ("model.uri", "s3://models/other"), ("model.revision", "9"), ("model.servedName", "other"),
    ("model.quantization", "fp8"), ("model.credentialsSecret", "other"), ("model.cache.size", "70Gi"),
    ("model.cache", {"claimName": "models"}),
    ("engine.type", "tgi"), ("engine.image", "registry.example.com/vllm:3"), ("engine.args", ["--z"]),
    ("engine.env[0].name", "Z"), ("engine.env[0].value", "9"),
    ("engine.env[1].valueFrom", {"secretKeyRef": {"name": "s", "key": "other", "optional": True}}),
    ("engine.env[1].valueFrom", {"configMapKeyRef": {"name": "c", "key": "k"}}),
    ("engine.env[1].valueFrom", {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}),
    ("engine.env[1].valueFrom", {"resourceFieldRef": {"containerName": "engine", "resource": "limits.memory",
                                                      "divisor": "1Mi"}}),
    ("engine.maxModelLen", 8192), ("engine.tensorParallelSize", 1), ("engine.port", 9000),
    ("resources.gpu.count", 4), ("resources.gpu.resourceName", "amd.com/gpu"), ("resources.gpu.product", "A100"),
    ("resources.cpu", "8"), ("resources.memory", "64Gi"),
    ("autoscaling", None), ("autoscaling & replicas", (None, 3)),
    ("autoscaling.minReplicas", 2), ("autoscaling.maxReplicas", 5), ("autoscaling.scaleDownStabilizationSeconds", 60),
    ("autoscaling.metrics[0].type", "gpu-utilization"), ("autoscaling.metrics[0].target", 6),
    ("autoscaling.metrics[1].name", "r"),
    ("autoscaling.metrics[1].selector", {"matchLabels": {"q": "b"},
                                         "matchExpressions": [{"key": "t", "operator": "In", "values": ["x"]}]}),
    ("canary.weight", 20), ("canary.replicas", 2),
    ("canary.model.uri", "s3://models/other"), ("canary.model.revision", "9"), ("canary.model.servedName", "other"),
    ("canary.model.quantization", "fp8"), ("canary.model.credentialsSecret", "other"),
    ("canary.model.cache", {"claimName": "models"}),
    ("canary.engine.type", "sglang"), ("canary.engine.image", "registry.example.com/vllm:3"),
    ("canary.engine.args", ["--z"]), ("canary.engine.env[0].name", "Z"), ("canary.engine.env[0].value", "9"),
    ("canary.engine.env[0]", {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
    ("canary.engine.maxModelLen", 1024), ("canary.engine.tensorParallelSize", 2), ("canary.engine.port", 9000),
    ("canary.resources.gpu.count", 0), ("canary.resources.gpu.resourceName", "amd.com/gpu"),
    ("canary.resources.gpu.product", "A100"), ("canary.resources.cpu", "1"), ("canary.resources.memory", "8Gi"),
    ("canary.match[0].headers.x-canary", {"prefix": "1"}), ("canary.match[0].headers.x-canary", {"regex": "1+"}),
    ("canary.match[0].uri", {"exact": "/v2"}), ("canary.match[0].method", {"prefix": "P"}),
    ("canary.match[0].queryParams.c", {"exact": "y"}),
    ("canary.mirror", False), ("canary.mirrorPercent", 30),
    ("traffic.istio", False), ("traffic.hosts", ["i.example.com"]), ("traffic.gateways", ["istio-system/other"]),
    ("traffic.timeoutSeconds", 300), ("traffic.retries.attempts", 3), ("traffic.retries.perTryTimeoutSeconds", 30),
    ("traffic.retries.retryOn", "reset"), ("traffic.loadBalancer", "ROUND_ROBIN"),
    ("traffic.router & traffic.hosts & traffic.gateways", ("gateway-api", [], [])),
    ("traffic.router & traffic.hosts & traffic.gateways & canary.mirror", ("linkerd", [], [], False)),
    ("traffic.router & traffic.hosts & traffic.gateways", ("none", [], [])),
    ("expose.host", "n.example.com"), ("expose.className", "haproxy"), ("expose.tls.secretName", "n-tls"),
    ("expose.annotations", {"a": "2"}), ("expose", None),
    ("expose", {"host": "m.example.com", "via": "gateway",
                "gateway": {"name": "public", "namespace": "gateways", "sectionName": "https"}}),
    ("expose", {"host": "m.example.com", "via": "istio", "gateway": {"name": "public"}}),
    ("observability", {"tracing": {"endpoint": "http://otel:4317", "sampleRatio": 0.5}}),
    ("access.from", [{"namespace": "batch"}, {"serviceAccount": "apps/other"}]), ("access.mtls", "PERMISSIVE"),
    ("access", None),
    ("pod.nodeSelector", {"pool": "b"}), ("pod.labels", {"team": "b"}),
    ("pod.affinity", {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
             "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}),
    ("pod.affinity", {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "cache"}}, "namespaceSelector": {"matchLabels": {"t": "a"}},
            "namespaces": ["ml"], "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["pod-template-hash"],
            "mismatchLabelKeys": ["tenant"]}],
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"topologyKey": "zone"}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}),
    ("pod.annotations", {"note": "b"}), ("pod.serviceAccountName", "other"), ("pod.priorityClassName", "low"),
    ("pod.automountServiceAccountToken", True), ("pod.securityContext.runAsUser", 2000),
    ("pod.securityContext.runAsGroup", 2000), ("pod.securityContext.fsGroup", 3000),
    ("pod.securityContext.runAsNonRoot", False), ("pod.securityContext.supplementalGroups", [4000]),
    ("pod.imagePullSecrets[0].name", "other"), ("pod.tolerations[0].key", "other"),
    ("pod.tolerations[0]", {"key": "spot", "operator": "Exists"}), ("pod.tolerations[0].value", "no"),
    ("pod.tolerations[0].effect", "NoSchedule"), ("pod.tolerations[0].tolerationSeconds", 30),
    ("startupTimeoutSeconds", 600), ("rollout.maxSurge", 2), ("rollout.maxUnavailable", 1),
    ("disruptionBudget.maxUnavailable", "50%"), ("paused", True),
]
# The Canary strategy's fields act during a rollout: ROLLOUT_BASE is a resource with one in
# progress and a measurement due; each change below alters that sync's answer, judged with
# the measurement named (see `rollout_answer`).
TOKENS = 'sum(rate(vllm:generation_tokens_total{namespace="{{ namespace }}",pod=~"{{ deployment }}-.+"}[{{ window }}]))'
ROLLOUT_BASE: dict[str, Any] = {
    "model": {"uri": "hf://o/m", "revision": "1"}, "replicas": 4,
    "rollout": {"strategy": "Canary", "steps": [{"weight": 10, "pauseSeconds": 600}, {"weight": 50}],
                "canaryReplicas": "auto",
                "analysis": {"provider": "default", "intervalSeconds": 60, "windowSeconds": 300, "failureLimit": 1,
                             "inconclusiveLimit": 5,
                             "checks": [{"metric": "error-rate", "max": 0.01},
                                        {"metric": "ttft-p95", "maxRatioToStable": 1.5},
                                        {"name": "tokens", "query": TOKENS, "min": 1, "minRatioToStable": 0.5}]}}}
ROLLOUT_EFFECTS: list[tuple[str, Any, str]] = [
    ("rollout.strategy", "RollingUpdate", "passing"), ("rollout.steps[0].weight", 20, "passing"),
    ("rollout.steps[0].pauseSeconds", 90, "passing"), ("rollout.canaryReplicas", 3, "passing"),
    ("rollout.analysis", None, "passing"), ("rollout.analysis.provider", "eu", "passing"),
    ("rollout.analysis.intervalSeconds", 600, "passing"), ("rollout.analysis.windowSeconds", 600, "passing"),
    ("rollout.analysis.failureLimit", 0, "failing"), ("rollout.analysis.inconclusiveLimit", 1, "no-data"),
    ("rollout.analysis.checks[0].metric", "queue-length", "passing"),
    ("rollout.analysis.checks[0].metric", "kv-cache-usage", "passing"),
    ("rollout.analysis.checks[1].metric", "e2e-latency-p95", "passing"),
    ("rollout.analysis.checks[0].max", 0.02, "passing"), ("rollout.analysis.checks[1].maxRatioToStable", 2, "passing"),
    ("rollout.analysis.checks[2].name", "tps", "passing"), ("rollout.analysis.checks[2].query", TOKENS + " * 2",
                                                             "passing"),
    ("rollout.analysis.checks[2].min", 2, "passing"), ("rollout.analysis.checks[2].minRatioToStable", 0.9, "passing"),
]
SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def segments(path: str) -> list[str | int]:
    return [int(index) if index else name for name, index in SEGMENT.findall(path)]


def changes(path: str, value: Any) -> list[tuple[str, Any]]:
    paths = path.split(" & ")
    return list(zip(paths, value)) if len(paths) > 1 else [(path, value)]


def changed(path: str, value: Any, base: dict[str, Any] = BASE) -> dict[str, Any]:
    spec = copy.deepcopy(base)
    for one, new in changes(path, value):
        *parents, last = segments(one)
        target: Any = spec
        for key in parents:
            target = target[key]
        if new is None:
            del target[last]
        else:
            target[last] = new
    return spec


def model_of(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The model inside an annotation, with one "[" or "{" for each list or map around it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return next((found for arg in args if (found := model_of(arg))), None)
    if origin in (list, dict):
        found = model_of(args[-1])
        return (found[0], ("[" if origin is list else "{") + found[1]) if found else None
    return None


def fields() -> set[tuple[str, str]]:
    """(model, field) for every field of every spec model."""
    found: set[tuple[str, str]] = set()

    def walk(model: type[BaseModel]) -> None:
        for name, field in model.model_fields.items():
            if (model.__name__, name) in found:
                continue
            found.add((model.__name__, name))
            inner = model_of(field.annotation)
            if inner:
                walk(inner[0])

    walk(LLMDeploymentSpec)
    return found


def covered(path: str, value: Any) -> set[tuple[str, str]]:
    """The (model, field) pairs a change at `path` to `value` exercises."""
    model: type[BaseModel] = LLMDeploymentSpec
    out: set[tuple[str, str]] = set()
    pending = segments(path)
    while pending:
        key = pending.pop(0)
        name = next(n for n, f in model.model_fields.items() if (f.alias or n) == key)
        out.add((model.__name__, name))
        inner = model_of(model.model_fields[name].annotation)
        if inner is None:
            break
        for _ in inner[1]:
            if pending:
                pending.pop(0)  # the index or map key
        model = inner[0]
    else:
        out |= fields_in(model, value)  # a whole object set: what it holds is exercised too
    return out


def fields_in(model: type[BaseModel], value: Any) -> set[tuple[str, str]]:
    """The (model, field) pairs a value for `model` sets, all the way down."""
    if isinstance(value, list):
        return set().union(*(fields_in(model, item) for item in value))
    if not isinstance(value, dict):
        return set()
    out: set[tuple[str, str]] = set()
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in value:
            out.add((model.__name__, name))
            inner = model_of(field.annotation)
            if inner is not None:
                item = value[key]
                for marker in inner[1]:
                    item = list(item.values()) if marker == "{" and isinstance(item, dict) else item
                out |= fields_in(inner[0], item)
    return out


def answer(spec: dict[str, Any], templates: TemplateSet) -> bytes:
    canary = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "llama3-canary", "namespace": "ml", "generation": 1},
              "status": {"availableReplicas": 1, "observedGeneration": 1}}
    try:
        result = run_sync(mc.request(mc.parent(spec), [canary]), templates, EVERY_ROUTER)
    except UnsafeToAnswer:
        return b"refused"  # paused: the canary Deployment here was never applied, so it cannot be kept
    assert result.outcome == "ok", result.status.conditions[-1].message
    return encoded(result)


def test_every_field_of_every_spec_model_has_an_effect_listed() -> None:
    effects = [*EFFECTS, *((path, value) for path, value, _ in ROLLOUT_EFFECTS)]
    listed = set().union(*(covered(one, new) for path, value in effects for one, new in changes(path, value)))
    assert fields() - listed == set(), "add these fields to EFFECTS in tests/test_spec_coverage.py"


@pytest.mark.parametrize(("path", "value"), EFFECTS, ids=[f"{p}={v}" for p, v in EFFECTS])
def test_every_field_changes_the_answer(templates: TemplateSet, path: str, value: Any) -> None:
    assert answer(changed(path, value), templates) != answer(BASE, templates), \
        f"spec.{path} changes nothing: the view or a template does not use it"


def rollout_answer(spec: dict[str, Any], templates: TemplateSet, measurement: str) -> bytes:
    """The answer, one minute into a rollout of ROLLOUT_BASE's next revision, to a sync with a
    measurement due: checks answered by `measurement` (passing, failing or no-data), each
    value drawn from the provider and the query's text, so that another query (or another
    Prometheus) measures differently."""
    settings = Settings.with_prometheus({"default": "http://prom:9090", "eu": "http://prom-eu:9090"}).children

    def measure(plan: MeasurementPlan) -> Measurement:
        def value(query: str) -> QueryResult:
            if measurement == "no-data":
                return QueryResult(())
            if "5xx" in query:
                return QueryResult((0.5 if measurement == "failing" else 0.0,))
            return QueryResult((1 + zlib.crc32(f"{plan.provider} {query}".encode()) % 1000 / 100,))
        return Measurement(plan.key, plan.at, {q: value(q) for q in plan.queries})

    rollout = Rollout(templates, copy.deepcopy(ROLLOUT_BASE), measure=values({}), settings=settings)
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda step: step.rollout.get("weight") == 10)
    rollout.now += timedelta(seconds=60)
    parent = mc.parent(spec | {"model": rollout.spec["model"]}, generation=rollout.generation, status=rollout.status)
    result = run_sync(mc.request(parent, rollout.cluster.observed()), templates, settings, rollout.now, measure)
    return encoded(result)


@pytest.mark.parametrize(("path", "value", "measurement"), ROLLOUT_EFFECTS,
                         ids=[f"{p}={v}" for p, v, _ in ROLLOUT_EFFECTS])
def test_every_rollout_field_changes_a_rollouts_answer(templates: TemplateSet, path: str, value: Any,
                                                       measurement: str) -> None:
    assert rollout_answer(changed(path, value, ROLLOUT_BASE), templates, measurement) != \
        rollout_answer(ROLLOUT_BASE, templates, measurement), f"spec.{path} changes nothing during a rollout"

