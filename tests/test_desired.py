"""The desired-state cache changes how fast the answer comes, never what it is."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.desired import DesiredCache
from hooks.errors import UnsafeToAnswer
from hooks.hookapi import parse_request
from hooks.rendering import Renderer
from hooks.selfcheck import check_templates
from hooks.settings import Settings
from hooks.sync import sync
from tests import metacontroller as mc
from tests.conftest import EXAMPLES, SAMPLES
from tests.strategies import specs

SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "canary": {"weight": 30}, "traffic": {"istio": False}}
Raw = dict[str, Any]


def answer(raw: Raw, renderer: Renderer, cache: DesiredCache | None) -> bytes | str:
    """The response bytes, or the refusal when the hook refuses."""
    try:
        return sync(parse_request(copy.deepcopy(raw)), renderer, Settings(), cache).encode()
    except UnsafeToAnswer as e:
        return str(e)


def deployment(name: str, available: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "status": {"availableReplicas": available}}


def base_request() -> Raw:
    return mc.request(mc.parent(copy.deepcopy(SPEC)), [deployment("llama3-stable", 2), deployment("llama3-canary", 1)])


def set_path(raw: Raw, path: str, value: Any) -> Raw:
    changed = copy.deepcopy(raw)
    target: Any = changed
    *keys, last = path.split("/")
    for key in keys:
        target = target[key]
    target[last] = value
    return changed


def deployment_status(raw: Raw, track: str, field: str, value: int) -> Raw:
    changed = copy.deepcopy(raw)
    changed["children"]["Deployment.apps/v1"][f"llama3-{track}"]["status"][field] = value
    return changed


AFFECTING: dict[str, Callable[[Raw], Raw]] = {
    "name": lambda r: set_path(r, "parent/metadata/name", "other"),
    "namespace": lambda r: set_path(r, "parent/metadata/namespace", "team-b"),
    "uid": lambda r: set_path(r, "parent/metadata/uid", "another-uid"),
    "generateSelector": lambda r: set_path(r, "controller/spec/generateSelector", False),
    "labels": lambda r: set_path(r, "parent/metadata/labels", {"team": "a"}),
    "annotations": lambda r: set_path(r, "parent/metadata/annotations", {"note": "b"}),
    "spec field": lambda r: set_path(r, "parent/spec/replicas", 3),
    "nested spec field": lambda r: set_path(r, "parent/spec/model/revision", "v2"),
    "invalid spec": lambda r: set_path(r, "parent/spec/replicas", -1),
    "paused": lambda r: set_path(r, "parent/spec/paused", True),
    "stable availability": lambda r: deployment_status(r, "stable", "availableReplicas", 3),
    "canary availability": lambda r: deployment_status(r, "canary", "availableReplicas", 0),
}
NOT_AFFECTING: dict[str, Callable[[Raw], Raw]] = {
    "generation": lambda r: set_path(r, "parent/metadata/generation", 9),
    "parent status": lambda r: set_path(r, "parent/status", {"phase": "Ready"}),
    "resourceVersion": lambda r: set_path(r, "parent/metadata/resourceVersion", "999"),
    "child readiness": lambda r: deployment_status(r, "stable", "readyReplicas", 1),
}


# An extra child that shows the parent's own metadata, which only custom templates can use.
ECHO = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}, labels: {{ view.labels }}}\n"
        "data: {labels: {{ view.parent_labels | string }}, annotations: {{ view.parent_annotations | string }}}\n")


@pytest.fixture(scope="module")
def shipped() -> Renderer:
    return check_templates(Settings())


@pytest.fixture(scope="module")
def echoing(tmp_path_factory: pytest.TempPathFactory) -> Renderer:
    folder = tmp_path_factory.mktemp("echo")
    (folder / "echo.yaml").write_text(ECHO)
    return check_templates(Settings(), folder)


@pytest.mark.parametrize("change", list(AFFECTING), ids=list(AFFECTING))
def test_every_input_that_shapes_children_misses_the_cache(echoing: Renderer, change: str) -> None:
    cache = DesiredCache()
    before = base_request()
    answer(before, echoing, cache)
    after = AFFECTING[change](before)
    cached = answer(after, echoing, cache)
    assert cache.misses == 2 and cache.hits == 0
    assert cached == answer(after, echoing, None)
    assert cached != answer(before, echoing, None)


@pytest.mark.parametrize("change", list(NOT_AFFECTING), ids=list(NOT_AFFECTING))
def test_status_only_inputs_hit_the_cache_and_still_show(shipped: Renderer, change: str) -> None:
    cache = DesiredCache()
    before = base_request()
    answer(before, shipped, cache)
    after = NOT_AFFECTING[change](before)
    assert answer(after, shipped, cache) == answer(after, shipped, None)
    assert cache.hits == 1 and cache.misses == 1


def test_a_new_template_set_never_reuses_entries(shipped: Renderer, tmp_path: Any) -> None:
    cache = DesiredCache()
    raw = base_request()
    answer(raw, shipped, cache)
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n")
    reloaded = check_templates(Settings(), tmp_path)
    assert answer(raw, reloaded, cache) == answer(raw, reloaded, None) != answer(raw, shipped, None)
    assert cache.misses == 2


def test_cache_is_bounded(shipped: Renderer) -> None:
    cache = DesiredCache(size=5)
    for i in range(20):
        answer(set_path(base_request(), "parent/metadata/name", f"m{i}"), shipped, cache)
    assert len(cache) == 5


def corpus() -> list[Raw]:
    requests = [mc.request(mc.parent(yaml.safe_load(p.read_text())["spec"])) for p in EXAMPLES]
    for name in ("sync-new.json", "sync-existing.json"):
        if (SAMPLES / name).is_file():
            import json
            requests.append(json.loads((SAMPLES / name).read_text()))
    cluster = mc.Cluster()
    renderer = check_templates(Settings())
    for spec in (SPEC, {**SPEC, "replicas": "x"}, {**SPEC, "paused": True}):
        requests.append(mc.request(mc.parent(spec), cluster.observed()))
        cluster.apply(sync(parse_request(requests[-1]), renderer, Settings()).children)
    return requests


def test_cached_and_uncached_agree_across_the_corpus(shipped: Renderer) -> None:
    cache = DesiredCache()
    for raw in corpus() * 2:
        assert answer(raw, shipped, cache) == answer(raw, shipped, None)
    assert cache.hits >= len(corpus())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs(), st.integers(0, 2), st.sampled_from(list(AFFECTING) + list(NOT_AFFECTING)))
def test_cached_and_uncached_agree_for_generated_specs(shipped: Renderer, spec: dict[str, Any], available: int,
                                                       change: str) -> None:
    cache = DesiredCache()
    raw = mc.request(mc.parent(spec), [deployment("llama3-stable", available), deployment("llama3-canary", available)])
    assert answer(raw, shipped, cache) == answer(raw, shipped, None)
    if change in ("spec field", "nested spec field") and "canary" not in spec:
        return
    changed = {**AFFECTING, **NOT_AFFECTING}[change](raw)
    assert answer(changed, shipped, cache) == answer(changed, shipped, None)
