"""Every example resource renders, and what it renders passes the upstream schemas."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hooks.api.validation import validate_resource
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ROUTERS

from tests import metacontroller as mc
from tests.conftest import EXAMPLES
from tests.manifests import BUILTIN_GROUPS, builtin_errors, schema_errors
from tests.rollouts import SETTINGS, Rollout
from tests.syncing import run_sync
from tests.test_routers import gateway_api_cel_problems

EVERY_ROUTER = dataclasses.replace(SETTINGS.children, routers=ROUTERS)


def render_example(path: Path, templates: TemplateSet) -> list[dict[str, Any]]:
    resource = yaml.safe_load(path.read_text())
    validate_resource(resource["metadata"]["name"], resource["spec"])
    parent = mc.parent(resource["spec"], name=resource["metadata"]["name"],
                       namespace=resource["metadata"]["namespace"])
    result = run_sync(mc.request(parent), templates, EVERY_ROUTER)
    assert result.outcome == "ok"
    return list(result.children)


def test_there_are_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {"minimal.yaml", "canary-ab.yaml", "autoscaled.yaml"}


def test_there_is_an_example_for_every_router_and_exposure() -> None:
    specs = [validate_resource("x", yaml.safe_load(p.read_text())["spec"]) for p in EXAMPLES]
    routers = {s.traffic.router_in_use for s in specs}
    exposures = {s.expose.via for s in specs if s.expose is not None}
    assert routers == {*ROUTERS, "none"} and exposures >= {"ingress", "gateway"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_renders_valid_builtin_objects(path: Path, templates: TemplateSet) -> None:
    children = render_example(path, templates)
    assert [e for c in children if c["apiVersion"].startswith(BUILTIN_GROUPS) for e in builtin_errors(c)] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_renders_valid_objects_of_every_api(path: Path, templates: TemplateSet) -> None:
    children = render_example(path, templates)
    assert schema_errors(children) == []
    assert [p for c in children if c["kind"] == "HTTPRoute" for p in gateway_api_cel_problems(c)] == []


def test_samples_render_schema_valid_children(templates: TemplateSet) -> None:
    from tests.conftest import load_sample

    for name in ("sync-new.json", "sync-existing.json"):
        children = list(run_sync(load_sample(name), templates).children)
        assert schema_errors(children) == []


def test_the_progressive_example_renders_valid_children_mid_rollout(templates: TemplateSet) -> None:
    resource = yaml.safe_load((Path(__file__).parent.parent / "examples" / "progressive-rollout.yaml").read_text())
    rollout = Rollout(templates, resource["spec"])
    rollout.deployed()
    rollout.new_revision("main")
    step = rollout.run(lambda s: s.rollout.get("weight") == 10)
    children = list(step.result.children)
    assert [c["metadata"]["name"] for c in children if c["kind"] == "Deployment"] == ["llama3-stable", "llama3-canary"]
    assert schema_errors(children) == []
    assert [e for c in children if c["kind"] == "Deployment" for e in builtin_errors(c)] == []
