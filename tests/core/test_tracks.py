"""The canary's effective settings: every field it overrides, and only those."""

from __future__ import annotations

from typing import Any

from hooks.api.spec import (
    Engine,
    EngineOverride,
    Gpu,
    GpuOverride,
    ModelOverride,
    ModelSource,
    Resources,
    ResourcesOverride,
)
from hooks.api.validation import validate_resource
from hooks.core.tracks import overlay, track_specs


def test_an_override_setting_every_field_replaces_every_field() -> None:
    base = Engine.model_validate({"type": "vllm", "image": "a:1", "args": ["--a"], "env": [], "maxModelLen": 1,
                                  "tensorParallelSize": 1, "port": 8000})
    values = {"type": "tgi", "image": "b:2", "args": ["--b"], "env": [{"name": "X", "value": "1"}],
              "maxModelLen": 2, "tensorParallelSize": 2, "port": 9000}
    merged = overlay(base, EngineOverride.model_validate(values))
    assert merged == Engine.model_validate(values)


def test_an_empty_override_changes_nothing() -> None:
    model = ModelSource.model_validate({"uri": "hf://o/m", "revision": "r", "credentialsSecret": "s"})
    assert overlay(model, ModelOverride()) == model
    assert overlay(Gpu(), GpuOverride()) == Gpu()


def test_nested_overrides_merge_field_by_field() -> None:
    base = Resources.model_validate({"gpu": {"count": 2, "product": "H100"}, "cpu": "8"})
    merged = overlay(base, ResourcesOverride.model_validate({"gpu": {"count": 4}}))
    assert (merged.gpu.count, merged.gpu.product, merged.cpu) == (4, "H100", "8")


def tracks(spec: dict[str, Any]) -> list[Any]:
    return track_specs(validate_resource("m", spec))


def test_env_merges_by_name_and_args_replace() -> None:
    stable, canary = tracks({
        "model": {"uri": "hf://o/m"},
        "engine": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], "args": ["--x"]},
        "canary": {"engine": {"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}], "args": ["--y"]}},
    })
    assert [(e.name, e.value) for e in canary.engine.env] == [("A", "1"), ("B", "3"), ("C", "4")]
    assert canary.engine.args == ["--y"] and stable.engine.args == ["--x"]


def test_replicas_per_track() -> None:
    stable, canary = tracks({"model": {"uri": "hf://o/m"}, "replicas": 3, "canary": {"replicas": 2}})
    assert (stable.replicas, canary.replicas) == (3, 2)
    (scaled,) = tracks({"model": {"uri": "hf://o/m"}, "autoscaling": {}})
    assert scaled.replicas is None
