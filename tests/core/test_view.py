"""Decisions the view model makes: effective canary settings, resources, traffic gating, and
a template contract of plain data only."""

from __future__ import annotations

import dataclasses
from typing import Any

from hooks.api.validation import validate_resource
from hooks.core.naming import Names
from hooks.core.sources import download_directory
from hooks.core.tracks import track_specs
from hooks.core.traffic import Availability, canary_serving, split_in_force
from hooks.core.view import DestinationView, View, build_view
from hooks.settings import ChildSettings

NAMES = Names("llama3", "ml")


def view_of(spec: dict[str, Any], stable: int = 0, canary: int = 0) -> View:
    """The view of `spec` with that many replicas available per track."""
    valid = validate_resource("llama3", spec)
    availability = Availability(stable, canary)
    return build_view(valid, track_specs(valid), split_in_force(valid, availability),
                      canary_serving(valid, availability), NAMES, {}, {}, ChildSettings())


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
    assert canary.resources.requests == {"cpu": "4", "memory": "64Gi", "nvidia.com/gpu": "4"}
    assert canary.pod.node_selector == {"nvidia.com/gpu.product": "H100"}


def test_cpu_only_model_requests_no_gpu_and_no_toleration() -> None:
    (track,) = view_of({"model": {"uri": "hf://org/m"}, "resources": {"gpu": {"count": 0}, "cpu": "4000m"}}).tracks
    assert track.resources.requests == {"cpu": "4", "memory": "32Gi"} and track.resources.limits == {"memory": "32Gi"}
    assert track.pod.tolerations == () and "--tensor-parallel-size=1" in track.args


def test_user_tolerations_follow_the_gpu_one_without_duplicates() -> None:
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    spec = {"model": {"uri": "hf://o/m"}, "pod": {"tolerations": [gpu, {"key": "spot", "operator": "Exists"}]}}
    assert view_of(spec).tracks[0].pod.tolerations == (gpu, {"key": "spot", "operator": "Exists"})


def test_replicas_are_left_to_the_hpa_when_autoscaling() -> None:
    assert view_of({"model": {"uri": "hf://o/m"}, "autoscaling": {}}).tracks[0].replicas is None
    assert view_of({"model": {"uri": "hf://o/m"}, "replicas": 3}).tracks[0].replicas == 3


def test_canary_gets_traffic_only_once_available() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "canary": {"weight": 30, "match": [{"headers": {"x": {"exact": "1"}}}],
                                                      "mirror": True}}
    waiting = view_of(spec, canary=0)
    assert (waiting.traffic.stable, waiting.traffic.canary) == (100, 0)
    assert waiting.routing is not None
    assert [r.name for r in waiting.routing.routes] == ["default"]
    assert waiting.routing.routes[0].destinations == (DestinationView("stable", 100), DestinationView("canary", 0))
    assert waiting.routing.routes[0].mirror is None
    serving = view_of(spec, canary=1)
    assert serving.routing is not None
    assert [r.name for r in serving.routing.routes] == ["canary-match-0", "default"]
    assert serving.routing.routes[-1].destinations == (DestinationView("stable", 70), DestinationView("canary", 30))
    assert serving.routing.routes[-1].mirror is not None and serving.routing.routes[-1].mirror.percent == 100


def test_ab_only_canary_with_zero_weight_still_gets_its_matches() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "canary": {"weight": 0, "match": [{"uri": {"prefix": "/v2"}}]}}
    view = view_of(spec, canary=2)
    assert view.routing is not None and view.routing.routes[0].match == ({"uri": {"prefix": "/v2"}},)


def test_without_istio_the_split_is_the_ratio_of_available_replicas() -> None:
    spec = {"model": {"uri": "hf://o/m"}, "traffic": {"istio": False}, "canary": {"weight": 50}}
    view = view_of(spec, stable=3, canary=1)
    assert view.routing is None
    assert (view.traffic.router, view.traffic.stable, view.traffic.canary) == ("none", 75, 25)


def test_gateways_keep_the_mesh_and_hosts_start_with_the_service() -> None:
    view = view_of({"model": {"uri": "hf://o/m"}, "traffic": {"hosts": ["a.example.com", "llama3"],
                                                              "gateways": ["gw/public"]}})
    assert view.routing is not None
    assert view.routing.hosts == ("llama3", "a.example.com")
    assert view.routing.gateways == ("gw/public", "mesh")
    assert view_of({"model": {"uri": "hf://o/m"}}).routing.gateways == ()  # type: ignore[union-attr]


def test_probes_and_deadlines_follow_the_startup_timeout() -> None:
    (track,) = view_of({"model": {"uri": "hf://o/m"}, "startupTimeoutSeconds": 95}).tracks
    assert track.probes.startup.failure_threshold * track.probes.startup.period_seconds >= 95
    assert track.probes.startup.failure_threshold == 10
    assert track.progress_deadline_seconds > 95


def test_model_sources_reach_the_engine_as_local_paths_or_hub_ids() -> None:
    def model_arg(uri: str) -> str:
        return view_of({"model": {"uri": uri}}).tracks[0].args[0]

    assert model_arg("hf://org/m") == "--model=org/m"
    assert model_arg("s3://b/p") == f"--model={download_directory('s3://b/p', None)}"
    assert model_arg("gs://b/p") == f"--model={download_directory('gs://b/p', None)}"
    assert model_arg("models:/llama/3") == f"--model={download_directory('models:/llama/3', None)}"
    https = "https://host/files/m.gguf?x=1"
    assert model_arg(https) == f"--model={download_directory(https, None)}/m.gguf"
    assert model_arg("pvc://store/org/m") == "--model=/model-source/org/m"
    assert model_arg("oci://registry/m:1") == "--model=/model-source"


def test_engines_get_their_own_arguments() -> None:
    def args(engine: str) -> tuple[str, ...]:
        spec = {"model": {"uri": "s3://b/m", "quantization": "awq"}, "engine": {"type": engine, "maxModelLen": 8}}
        return view_of(spec).tracks[0].args

    local = download_directory("s3://b/m", None)
    assert args("tgi")[:1] == (f"--model-id={local}",) and "--quantize=awq" in args("tgi")
    assert "--tp-size=1" in args("sglang") and "--context-length=8" in args("sglang")
    assert args("triton")[:2] == (f"--model-repository={local}", "--http-port=8000")


PLAIN = (str, int, float, bool, type(None))


def plain_data(value: Any, path: str = "view") -> list[str]:
    """Where `value` holds anything but strings, numbers, booleans, None, tuples, dicts and
    dataclasses of those."""
    if isinstance(value, PLAIN):
        return []
    if isinstance(value, (tuple, list)):
        return [p for i, v in enumerate(value) for p in plain_data(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in [*plain_data(k, path), *plain_data(v, f"{path}.{k}")]]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        methods = [n for n in dir(value) if not n.startswith("_") and n not in {f.name for f in dataclasses.fields(value)}]
        return [f"{path} has methods {methods}"] * bool(methods) + [
            p for f in dataclasses.fields(value) for p in plain_data(getattr(value, f.name), f"{path}.{f.name}")]
    return [f"{path} is a {type(value).__name__}"]


def test_the_view_is_plain_data() -> None:
    from hooks.core.exercise import EVERY_BRANCH

    view = view_of(EVERY_BRANCH, stable=1, canary=1)
    assert plain_data(view) == []
    assert plain_data({"x": object()}) == ["view.x is a object"]
