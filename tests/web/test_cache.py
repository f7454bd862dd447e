"""The desired-state cache changes how fast the answer comes, never what it is."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hooks.contract.request import parse_request
from hooks.core.desired import Desired, DesiredInputs, desire, desired_inputs
from hooks.core.facts import Facts
from hooks.core.registry import Pin
from hooks.core.strategy import RolloutRender
from hooks.core.sync import sync
from hooks.edge.templates import load_templates
from hooks.errors import UnsafeToAnswer
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings, Settings
from hooks.web.cache import DesiredCache
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import metacontroller as mc
from tests.conftest import EXAMPLES, SAMPLES
from tests.strategies import specs
from tests.syncing import NOW, encoded, run_sync

SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "canary": {"weight": 30}, "traffic": {"istio": False}}
Raw = dict[str, Any]


def answer(raw: Raw, templates: TemplateSet, cache: DesiredCache | None,
           settings: ChildSettings | None = None) -> bytes | str:
    """The response bytes, or the refusal when the hook refuses; through `cache` as the web
    layer uses it (the key, then rendering on a miss), or straight."""
    request = parse_request(copy.deepcopy(raw))
    inputs = desired_inputs(request, settings or ChildSettings())
    if cache is None:
        desired = desire(inputs, templates)
    else:
        key = DesiredCache.key(inputs, templates.digest)
        remembered = cache.get(key)
        desired = remembered if remembered is not None else desire(inputs, templates)
        if remembered is None:
            cache.put(key, desired)
    try:
        return encoded(sync(request, Facts(NOW), desired))
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
def shipped() -> TemplateSet:
    return load_templates(None, ChildSettings())


@pytest.fixture(scope="module")
def echoing(tmp_path_factory: pytest.TempPathFactory) -> TemplateSet:
    folder = tmp_path_factory.mktemp("echo")
    (folder / "echo.yaml").write_text(ECHO)
    return load_templates(folder, ChildSettings())


@pytest.mark.parametrize("change", list(AFFECTING), ids=list(AFFECTING))
def test_every_input_that_shapes_children_misses_the_cache(echoing: TemplateSet, change: str) -> None:
    cache = DesiredCache()
    before = base_request()
    answer(before, echoing, cache)
    after = AFFECTING[change](before)
    cached = answer(after, echoing, cache)
    assert cache.misses == 2 and cache.hits == 0
    assert cached == answer(after, echoing, None)
    assert cached != answer(before, echoing, None)


@pytest.mark.parametrize("change", list(NOT_AFFECTING), ids=list(NOT_AFFECTING))
def test_status_only_inputs_hit_the_cache_and_still_show(shipped: TemplateSet, change: str) -> None:
    cache = DesiredCache()
    before = base_request()
    answer(before, shipped, cache)
    after = NOT_AFFECTING[change](before)
    assert answer(after, shipped, cache) == answer(after, shipped, None)
    assert cache.hits == 1 and cache.misses == 1


SETTINGS_CHANGES = {
    "istio API version": ChildSettings(istio_api_version="networking.istio.io/v1beta1"),
    "engine image": ChildSettings(engine_images={**ChildSettings().engine_images, "vllm": "registry.example/vllm:2"}),
    "downloader image": ChildSettings(downloader_images={**ChildSettings().downloader_images,
                                                         "s3": "registry.example/aws:2"}),
}


@pytest.mark.parametrize("change", list(SETTINGS_CHANGES), ids=list(SETTINGS_CHANGES))
def test_the_hook_settings_are_part_of_the_key(shipped: TemplateSet, change: str) -> None:
    cache = DesiredCache()
    raw = set_path(base_request(), "parent/spec/model/uri", "s3://bucket/model")
    raw = set_path(raw, "parent/spec/traffic/istio", True)
    answer(raw, shipped, cache)
    changed = SETTINGS_CHANGES[change]
    assert answer(raw, shipped, cache, changed) == answer(raw, shipped, None, changed) != answer(raw, shipped, None)
    assert cache.misses == 2


def test_every_input_field_is_in_the_digest() -> None:
    """The key is the digest of the whole inputs object: no field can be left out of it."""
    import dataclasses

    inputs = desired_inputs(parse_request(base_request()), ChildSettings())
    changed_values: dict[str, Any] = {"name": "x", "namespace": "x", "controller_uid": "x", "labels": {"x": "y"},
                      "annotations": {"x": "y"}, "spec": {"x": 1}, "availability": dataclasses.replace(
                          inputs.availability, stable=7), "settings": SETTINGS_CHANGES["engine image"],
                      "rollout": RolloutRender(2, 10, "0ce0597e", {"metadata": {}}, "hf://o/m"),
                      "pins": {"models:/m@champion": Pin("models:/m@champion", "3", "s3://b/3", "", "")}}
    assert set(changed_values) == {f.name for f in dataclasses.fields(DesiredInputs)}
    for name, value in changed_values.items():
        assert dataclasses.replace(inputs, **{name: value}).digest() != inputs.digest(), name


def test_a_new_template_set_never_reuses_entries(shipped: TemplateSet, tmp_path: Any) -> None:
    cache = DesiredCache()
    raw = base_request()
    answer(raw, shipped, cache)
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n")
    reloaded = load_templates(tmp_path, ChildSettings())
    assert answer(raw, reloaded, cache) == answer(raw, reloaded, None) != answer(raw, shipped, None)
    assert cache.misses == 2


def test_cache_is_bounded(shipped: TemplateSet) -> None:
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
    templates = load_templates(None, ChildSettings())
    for spec in (SPEC, {**SPEC, "replicas": "x"}, {**SPEC, "paused": True}):
        requests.append(mc.request(mc.parent(spec), cluster.observed()))
        cluster.apply(run_sync(requests[-1], templates).children)
    return requests


def test_cached_and_uncached_agree_across_the_corpus(shipped: TemplateSet) -> None:
    cache = DesiredCache()
    for raw in corpus() * 2:
        assert answer(raw, shipped, cache) == answer(raw, shipped, None)
    assert cache.hits >= len(corpus())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs(), st.integers(0, 2), st.sampled_from(list(AFFECTING) + list(NOT_AFFECTING)))
def test_cached_and_uncached_agree_for_generated_specs(shipped: TemplateSet, spec: dict[str, Any], available: int,
                                                       change: str) -> None:
    cache = DesiredCache()
    raw = mc.request(mc.parent(spec), [deployment("llama3-stable", available), deployment("llama3-canary", available)])
    assert answer(raw, shipped, cache) == answer(raw, shipped, None)
    if change in ("spec field", "nested spec field") and "canary" not in spec:
        return
    changed = {**AFFECTING, **NOT_AFFECTING}[change](raw)
    assert answer(changed, shipped, cache) == answer(changed, shipped, None)


def test_the_cache_is_bounded_in_bytes_too(shipped: TemplateSet) -> None:
    cache = DesiredCache(size=1000, max_bytes=256 * 1024)  # an entry here takes about 3 KiB
    for i in range(100):
        raw = set_path(base_request(), "parent/metadata/name", f"m{i}")
        answer(raw, shipped, cache)
    assert cache.bytes <= 256 * 1024 and 0 < len(cache) < 100


@pytest.mark.parametrize("memory", ["desired", "answers"])
def test_what_a_memory_holds_is_what_it_counts(memory: str) -> None:
    """Measured by the allocator: a full memory holds no more than its byte bound (with the
    Canary strategy's desired state, whose objects are several times their pickled size)."""
    import gc
    import pickle
    import tracemalloc

    from bench import corpus
    from hooks.web.answer import Answer
    from hooks.web.cache import AnswerMemory

    from tests.syncing import local_hook

    hook = local_hook(Settings.with_prometheus({"default": "http://127.0.0.1:9"}))
    body = json.dumps(corpus.rolling_resource()[0]).encode()
    answered = hook.respond(body, Facts(NOW))
    assert answered.status_code == 200
    desired = hook.cache.get(next(iter(hook.cache._entries)))
    assert desired is not None and desired.policy is not None
    bound = 1 << 20
    filled: DesiredCache | AnswerMemory = DesiredCache(100_000, bound) if memory == "desired" else AnswerMemory(
        100_000, bound)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1000):
            key = f"{i:08d}".encode() * 4
            if isinstance(filled, DesiredCache):
                filled.put(key, pickle.loads(pickle.dumps(desired)))  # as a render worker hands it over
            else:
                filled.put(key, Answer(200, answered.body.replace(b"llama3", f"m{i:06d}".encode()),
                                       answered.outcome, dict(answered.fields)))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < len(filled) < 1000 and filled.bytes <= bound  # it was full
    assert held <= bound * 1.1, f"{memory}: holds {held >> 10} KiB for a bound of {bound >> 10} KiB"


def test_a_failed_render_is_answered_from_memory(tmp_path: Any) -> None:
    from tests.syncing import local_hook

    (tmp_path / "cm.yaml").write_text('{% if view.name == "bad" %}{{ view.missing }}{% endif %}'
                                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n")
    hook = local_hook(folder=tmp_path)
    request = parse_request(mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, name="bad")))
    assert hook.templates is not None
    first = hook.render(request, hook.templates)
    assert not isinstance(first, Desired) and first.status_code == 500
    assert hook.render(request, hook.templates) is first  # not rendered again
    good = parse_request(mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, name="good")))
    assert isinstance(hook.render(good, hook.templates), Desired)
