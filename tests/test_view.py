"""Decisions the view model makes: effective canary settings, resources, traffic gating."""

from __future__ import annotations

from typing import Any

from hooks.hookapi import KubeObject
from hooks.naming import Names
from hooks.settings import Settings
from hooks.validation import validate_resource
from hooks.view import View, build_view, observed_availability

NAMES = Names("llama3", "ml")
PARENT = KubeObject.model_validate({"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                    "metadata": {"name": "llama3", "namespace": "ml"}})


def deployment(name: str, available: int) -> KubeObject:
    return KubeObject.model_validate({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                                      "status": {"availableReplicas": available}})


def view_of(spec: dict[str, Any], observed: list[KubeObject] | None = None) -> View:
    availability = observed_availability(observed or [], NAMES)
    return build_view(validate_resource("llama3", spec), PARENT, NAMES, availability, Settings())


def test_canary_overrides_merge_over_the_stable_settings() -> None:
    view = view_of({
        "model": {"uri": "hf://org/model", "revision": "a", "credentialsSecret": "hf"},
        "engine": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], "args": ["--x"]},
        "resources": {"gpu": {"count": 2, "product": "H100"}, "memory": "64Gi"},
        "canary": {"model": {"revision": "b"}, "engine": {"env": [{"name": "B", "value": "3"}], "args": ["--y"]},
                   "resources": {"gpu": {"count": 4}}},
    })
    stable, canary = view.tracks
    assert (stable.model, canary.model) == ("hf://org/model@a", "hf://org/model@b")
    assert canary.credentials_secret == "hf"
    assert "--revision=b" in canary.args and canary.args[-1] == "--y" and "--x" not in canary.args
    assert "--tensor-parallel-size=4" in canary.args and "--tensor-parallel-size=2" in stable.args
    assert [e["value"] for e in canary.env if e["name"] in ("A", "B")] == ["1", "3"]
    assert canary.requests == {"cpu": "4", "memory": "64Gi", "nvidia.com/gpu": "4"}
    assert canary.node_selector == {"nvidia.com/gpu.product": "H100"}


def test_cpu_only_model_requests_no_gpu_and_no_toleration() -> None:
    (track,) = view_of({"model": {"uri": "hf://org/m"}, "resources": {"gpu": {"count": 0}, "cpu": "4000m"}}).tracks
    assert track.requests == {"cpu": "4", "memory": "32Gi"} and track.limits == {"memory": "32Gi"}
    assert track.tolerations == [] and "--tensor-parallel-size=1" in track.args


def test_user_tolerations_follow_the_gpu_one_without_duplicates() -> None:
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    spec = {"model": {"uri": "hf://o/m"}, "pod": {"tolerations": [gpu, {"key": "spot", "operator": "Exists"}]}}
    assert view_of(spec).tracks[0].tolerations == [gpu, {"key": "spot", "operator": "Exists"}]


def test_replicas_are_left_to_the_hpa_when_autoscaling() -> None:
    assert view_of({"model": {"uri": "hf://o/m"}, "autoscaling": {}}).tracks[0].replicas is None
    assert view_of({"model": {"uri": "hf://o/m"}, "replicas": 3}).tracks[0].replicas == 3


def test_canary_gets_traffic_only_once_available() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "canary": {"weight": 30, "match": [{"headers": {"x": {"exact": "1"}}}],
                                                      "mirror": True}}
    waiting = view_of(spec, [deployment("llama3-canary", 0)])
    assert (waiting.traffic.stable, waiting.traffic.canary) == (100, 0)
    assert waiting.routing is not None
    assert [r.name for r in waiting.routing.routes] == ["default"]
    assert waiting.routing.routes[0].weights == [("stable", 100), ("canary", 0)]
    assert waiting.routing.routes[0].mirror_percent is None
    serving = view_of(spec, [deployment("llama3-canary", 1)])
    assert serving.routing is not None
    assert [r.name for r in serving.routing.routes] == ["canary-match-0", "default"]
    assert serving.routing.routes[-1].weights == [("stable", 70), ("canary", 30)]
    assert serving.routing.routes[-1].mirror_percent == 100


def test_ab_only_canary_with_zero_weight_still_gets_its_matches() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "canary": {"weight": 0, "match": [{"uri": {"prefix": "/v2"}}]}}
    view = view_of(spec, [deployment("llama3-canary", 2)])
    assert view.routing is not None and view.routing.routes[0].match == [{"uri": {"prefix": "/v2"}}]


def test_without_istio_the_split_is_the_ratio_of_available_replicas() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "traffic": {"istio": False}, "canary": {"weight": 50}}
    view = view_of(spec, [deployment("llama3-stable", 3), deployment("llama3-canary", 1)])
    assert view.routing is None
    assert (view.traffic.router, view.traffic.stable, view.traffic.canary) == ("service", 75, 25)


def test_gateways_keep_the_mesh_and_hosts_start_with_the_service() -> None:
    view = view_of({"model": {"uri": "hf://o/m"}, "traffic": {"hosts": ["a.example.com", "llama3"],
                                                              "gateways": ["gw/public"]}})
    assert view.routing is not None
    assert view.routing.hosts == ["llama3", "a.example.com"]
    assert view.routing.gateways == ["gw/public", "mesh"]
    assert view_of({"model": {"uri": "hf://o/m"}}).routing.gateways == []  # type: ignore[union-attr]


def test_probes_and_deadlines_follow_the_startup_timeout() -> None:
    (track,) = view_of({"model": {"uri": "hf://o/m"}, "startupTimeoutSeconds": 95}).tracks
    assert track.startup_failure_threshold == 10
    assert track.progress_deadline_seconds > 95


def test_model_sources_reach_the_engine_as_local_paths_or_hub_ids() -> None:
    def model_arg(uri: str) -> str:
        return view_of({"model": {"uri": uri}}).tracks[0].args[0]

    assert model_arg("hf://org/m") == "--model=org/m"
    assert model_arg("s3://b/p") == "--model=/model-cache/model"
    assert model_arg("gs://b/p") == "--model=/model-cache/model"
    assert model_arg("models:/llama/3") == "--model=/model-cache/model"
    assert model_arg("https://host/files/m.gguf?x=1") == "--model=/model-cache/model/m.gguf"
    assert model_arg("pvc://store/org/m") == "--model=/model-source/org/m"
    assert model_arg("oci://registry/m:1") == "--model=/model-source"


def test_engines_get_their_own_arguments() -> None:
    def args(engine: str) -> list[str]:
        spec = {"model": {"uri": "s3://b/m", "quantization": "awq"}, "engine": {"type": engine, "maxModelLen": 8}}
        return view_of(spec).tracks[0].args

    assert args("tgi")[:1] == ["--model-id=/model-cache/model"] and "--quantize=awq" in args("tgi")
    assert "--tp-size=1" in args("sglang") and "--context-length=8" in args("sglang")
    assert args("triton") == ["--model-repository=/model-cache/model", "--http-port=8000"]
