"""Traces: the engine's own OTLP export, per track, and refused for engines that have none."""

from __future__ import annotations

from typing import Any

import pytest
from hooks.rendering.templateset import TemplateSet

from tests import metacontroller as mc
from tests.manifests import builtin_errors
from tests.syncing import run_sync

CANARY_UP = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama3-canary", "namespace": "ml"},
              "status": {"availableReplicas": 1}}]


def engines(spec: dict[str, Any], templates: TemplateSet) -> dict[str, dict[str, Any]]:
    result = run_sync(mc.request(mc.parent(spec), CANARY_UP), templates)
    assert result.outcome == "ok", result.status
    deployments = [c for c in result.children if c["kind"] == "Deployment"]
    assert [e for d in deployments for e in builtin_errors(d)] == []
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0] for d in deployments}


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container["env"]}


def test_vllm_exports_sampled_traces_per_track(templates: TemplateSet) -> None:
    spec = {"model": {"uri": "hf://o/m"}, "canary": {"model": {"revision": "2"}},
            "observability": {"tracing": {"endpoint": "http://otel-collector.observability:4317", "sampleRatio": 0.1}}}
    found = engines(spec, templates)
    for name, container in found.items():
        assert "--otlp-traces-endpoint=http://otel-collector.observability:4317" in container["args"]
        assert {k: v for k, v in env(container).items() if k.startswith("OTEL_")} == {
            "OTEL_SERVICE_NAME": name, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.1", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"}
    assert set(found) == {"llama3-stable", "llama3-canary"}


def test_tgi_exports_every_request_and_https_is_not_insecure(templates: TemplateSet) -> None:
    spec = {"model": {"uri": "hf://o/m"}, "engine": {"type": "tgi"},
            "observability": {"tracing": {"endpoint": "https://otel.example.com:4317"}}}
    (container,) = engines(spec, templates).values()
    assert {"--otlp-endpoint=https://otel.example.com:4317", "--otlp-service-name=llama3-stable"} <= \
        set(container["args"])
    assert not any(k.startswith("OTEL_") for k in env(container))


def test_without_tracing_nothing_is_exported(templates: TemplateSet) -> None:
    (container,) = engines({"model": {"uri": "hf://o/m"}}, templates).values()
    assert not any("otlp" in a for a in container["args"]) and not any(k.startswith("OTEL_") for k in env(container))


@pytest.mark.parametrize("spec", [
    {"model": {"uri": "hf://o/m"}, "engine": {"type": "sglang"}, "observability": {"tracing": {"endpoint": "http://o:4317"}}},
    {"model": {"uri": "s3://b/m"}, "canary": {"engine": {"type": "triton"}},
     "observability": {"tracing": {"endpoint": "http://o:4317"}}},
])
def test_engines_without_traces_are_refused(spec: dict[str, Any], templates: TemplateSet) -> None:
    result = run_sync(mc.request(mc.parent(spec)), templates)
    assert result.outcome == "invalid"
    spec_valid = next(c for c in result.status.as_json()["conditions"] if c["type"] == "SpecValid")
    assert spec_valid["message"].startswith("spec.observability.tracing: only vllm and tgi export traces")
