"""Rendering: sandboxed, strict, injection-proof, and loud about broken templates."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

from hooks.errors import SpecError, TemplateError
from hooks.hookapi import KubeObject
from hooks.naming import Names
from hooks.rendering import CHILD_TEMPLATES, Renderer
from hooks.selfcheck import check_templates
from hooks.settings import Settings, shipped_templates_dir
from hooks.validation import validate_resource
from hooks.view import Availability, View, build_view

PARENT = KubeObject.model_validate({"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                    "metadata": {"name": "llama3", "namespace": "ml"}})
PAYLOAD = 'x"\n  injected: true\nkind: Secret\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: pwned}\n# '

# Every string a resource can carry, each in a place where it renders.
ALL_STRINGS: dict[str, Any] = {
    "model": {"uri": "hf://org/model", "revision": "rev", "servedName": "served", "credentialsSecret": "secret"},
    "engine": {"image": "image:tag", "args": ["--arg"], "env": [{"name": "NAME", "value": "value"}]},
    "resources": {"gpu": {"product": "product", "resourceName": "vendor.com/gpu"}},
    "autoscaling": {"metrics": [{"type": "pods", "name": "metric", "target": 1},
                                {"type": "external", "name": "ext", "target": 2,
                                 "selector": {"matchLabels": {"k": "selector"}}}]},
    "canary": {"model": {"revision": "canary-rev"}, "engine": {"image": "canary:tag"},
               "match": [{"headers": {"h": {"exact": "header"}}, "uri": {"prefix": "/prefix"},
                          "queryParams": {"q": {"regex": "re.*"}}, "method": {"exact": "POST"}}]},
    "traffic": {"hosts": ["host.example.com"], "gateways": ["ns/gateway"], "retries": {"retryOn": "5xx"}},
    "pod": {"nodeSelector": {"k": "node"}, "labels": {"team": "label"}, "annotations": {"a": "annotation"},
            "tolerations": [{"key": "tkey", "operator": "Equal", "value": "tvalue"}],
            "affinity": {"nodeAffinity": {"x": "affinity"}},
            "serviceAccountName": "account", "priorityClassName": "priority",
            "imagePullSecrets": [{"name": "pull"}]},
}


def render(renderer: Renderer, spec: dict[str, Any]) -> list[dict[str, Any]]:
    view = build_view(validate_resource("llama3", spec), PARENT, Names("llama3", "ml"), Availability(1, 1), Settings())
    return renderer.render_children(view)


def string_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, str):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in string_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in string_paths(v, (*path, i))]
    return []


def shape(value: Any) -> Any:
    """The structure of rendered objects with every string replaced by a placeholder."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return "<str>" if isinstance(value, str) else value


def with_value(spec: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    changed = copy.deepcopy(spec)
    target: Any = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def test_no_string_field_can_inject_structure(renderer: Renderer) -> None:
    baseline = shape(render(renderer, ALL_STRINGS))
    injected = 0
    for path in string_paths(ALL_STRINGS):
        spec = with_value(ALL_STRINGS, path, PAYLOAD)
        try:
            children = render(renderer, spec)
        except SpecError:
            continue  # the field's own rules refuse such a value: nothing to inject through
        injected += 1
        assert shape(children) == baseline, f"spec.{'.'.join(map(str, path))} changed the output's structure"
        assert not any(c["kind"] == "Secret" or "injected" in str(shape(c)) for c in children)
    assert injected >= 25, "too few fields took the payload for this test to mean much"


def copy_templates(settings: Settings, tmp_path: Path) -> Path:
    """An override folder holding a copy of every shipped template."""
    target = tmp_path / "templates"
    shutil.copytree(shipped_templates_dir(), target)
    return target


def test_templates_are_sandboxed(settings: Settings, tmp_path: Path) -> None:
    folder = copy_templates(settings, tmp_path)
    (folder / "service.yaml").write_text(
        "{{ view.__class__.__mro__[1].__subclasses__() }}\napiVersion: v1\nkind: Service\n")
    with pytest.raises(TemplateError, match="service.yaml:1: SecurityError"):
        check_templates(settings, folder)


def test_templates_cannot_read_files(settings: Settings, tmp_path: Path) -> None:
    folder = copy_templates(settings, tmp_path)
    (tmp_path / "secret.txt").write_text("s3cr3t")
    (folder / "service.yaml").write_text('{% include "../secret.txt" %}')
    with pytest.raises(TemplateError, match="service.yaml"):
        check_templates(settings, folder)


def test_undefined_variables_are_errors_with_file_and_line(settings: Settings, tmp_path: Path) -> None:
    folder = copy_templates(settings, tmp_path)
    text = (folder / "pdb.yaml").read_text().replace("{{ view.names.disruption_budget }}", "{{ view.nmes.x }}")
    (folder / "pdb.yaml").write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "nmes" in t)
    with pytest.raises(TemplateError, match=f"pdb.yaml:{line}: UndefinedError"):
        check_templates(settings, folder)


def test_syntax_errors_name_file_and_line(settings: Settings, tmp_path: Path) -> None:
    folder = copy_templates(settings, tmp_path)
    (folder / "hpa.yaml").write_text("apiVersion: autoscaling/v2\n{% if %}\n")
    with pytest.raises(TemplateError, match="hpa.yaml:2: "):
        Renderer.load(shipped_templates_dir(), folder)


def test_missing_template_is_reported(settings: Settings, tmp_path: Path) -> None:
    incomplete = copy_templates(settings, tmp_path)
    (incomplete / "virtualservice.yaml").unlink()
    with pytest.raises(TemplateError, match="virtualservice.yaml: template is missing"):
        Renderer.load(incomplete)
    with pytest.raises(TemplateError, match="does not exist"):
        Renderer.load(shipped_templates_dir(), tmp_path / "absent")


@pytest.mark.parametrize(("text", "message"), [
    ("- just\n- a list\n", "must be a mapping"),
    ("apiVersion: v1\nkind: Service\n", "needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: other}\n", "must stay in the LLMDeployment"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: [unclosed\n", "invalid YAML"),
])
def test_rendered_documents_must_be_well_formed_children(settings: Settings, tmp_path: Path,
                                                         text: str, message: str) -> None:
    folder = copy_templates(settings, tmp_path)
    (folder / "service.yaml").write_text(text)
    with pytest.raises(TemplateError, match=message):
        check_templates(settings, folder)


def test_a_child_rendered_twice_is_an_error(settings: Settings, tmp_path: Path) -> None:
    folder = copy_templates(settings, tmp_path)
    (folder / "pdb.yaml").write_text((folder / "service.yaml").read_text())
    with pytest.raises(TemplateError, match="Service selfcheck is rendered twice"):
        check_templates(settings, folder)


def test_children_come_in_a_fixed_order(renderer: Renderer) -> None:
    kinds = [c["kind"] + "/" + c["metadata"]["name"] for c in render(renderer, ALL_STRINGS)]
    assert kinds == ["Deployment/llama3-stable", "Deployment/llama3-canary", "Service/llama3",
                     "HorizontalPodAutoscaler/llama3-stable", "PodDisruptionBudget/llama3-stable",
                     "DestinationRule/llama3", "VirtualService/llama3"]


def test_every_child_template_is_shipped(settings: Settings) -> None:
    assert sorted(p.name for p in shipped_templates_dir().glob("*.yaml")) == sorted(CHILD_TEMPLATES)


def test_view_is_what_templates_see(renderer: Renderer) -> None:
    view: View = build_view(validate_resource("llama3", {"model": {"uri": "hf://o/m"}}), PARENT,
                            Names("llama3", "ml"), Availability(), Settings())
    (deployment,) = renderer.render("deployment.yaml", view=view, track=view.tracks[0])
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"] == view.tracks[0].args
