"""Every example resource renders, and what it renders passes the upstream schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.hookapi import parse_request
from hooks.rendering import Renderer
from hooks.settings import Settings
from hooks.sync import sync
from hooks.validation import validate_resource
from tests import metacontroller as mc
from tests.conftest import EXAMPLES
from tests.manifests import builtin_errors, schema_errors


def render_example(path: Path, renderer: Renderer, settings: Settings) -> list[dict[str, Any]]:
    resource = yaml.safe_load(path.read_text())
    validate_resource(resource["metadata"]["name"], resource["spec"])
    parent = mc.parent(resource["spec"], name=resource["metadata"]["name"],
                       namespace=resource["metadata"]["namespace"])
    result = sync(parse_request(mc.request(parent)), renderer, settings)
    assert result.outcome == "ok"
    return result.children


def test_there_are_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {"minimal.yaml", "canary-ab.yaml", "autoscaled.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_renders_valid_builtin_objects(path: Path, renderer: Renderer, settings: Settings) -> None:
    children = render_example(path, renderer, settings)
    assert [e for c in children if not c["apiVersion"].startswith("networking.istio.io")
            for e in builtin_errors(c)] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_renders_valid_istio_objects(path: Path, renderer: Renderer, settings: Settings) -> None:
    assert schema_errors(render_example(path, renderer, settings)) == []


def test_samples_render_schema_valid_children(renderer: Renderer, settings: Settings) -> None:
    from tests.conftest import load_sample

    for name in ("sync-new.json", "sync-existing.json"):
        children = sync(parse_request(load_sample(name)), renderer, settings).children
        assert schema_errors(children) == []
