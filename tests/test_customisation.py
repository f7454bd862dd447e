"""Platform teams' template folders: overrides by file name, blocks, extra children, and the
safety rules that hold for custom templates too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hooks.edge.templates import load_templates
from hooks.errors import TemplateError
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings

from tests import metacontroller as mc
from tests.conftest import ROOT
from tests.manifests import builtin_errors
from tests.syncing import run_sync

CUSTOM = ROOT / "metacontroller" / "overlays" / "custom-templates" / "templates"
SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "canary": {"weight": 10}}


def children(templates: TemplateSet, spec: dict[str, Any] = SPEC,
             name: str = "llama3") -> list[dict[str, Any]]:
    return list(run_sync(mc.request(mc.parent(spec, name=name)), templates).children)


def folder_with(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "overrides"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_one_override_keeps_the_other_templates(tmp_path: Path, templates: TemplateSet) -> None:
    service = (Path(__file__).parent.parent / "templates" / "service.yaml").read_text()
    folder = folder_with(tmp_path, {"service.yaml": service.replace(
        "spec:\n", "  annotations: {\"acme.example.com/owner\": \"ml-platform\"}\nspec:\n", 1)})
    custom = children(load_templates(folder, ChildSettings()))
    shipped = children(templates)
    changed = [c for c, s in zip(custom, shipped, strict=True) if c != s]
    assert [c["kind"] for c in changed] == ["Service"]
    assert changed[0]["metadata"]["annotations"] == {"acme.example.com/owner": "ml-platform"}


def test_the_example_overlay_adds_a_label_a_sidecar_and_a_child(templates: TemplateSet) -> None:
    custom = children(load_templates(CUSTOM, ChildSettings()))
    deployments = [c for c in custom if c["kind"] == "Deployment"]
    for d in deployments:
        pod = d["spec"]["template"]
        assert pod["metadata"]["labels"]["acme.example.com/cost-center"] == "ml-serving"
        assert [c["name"] for c in pod["spec"]["containers"]] == ["engine", "log-shipper"]
        assert builtin_errors(d) == []
    (endpoint,) = [c for c in custom if c["kind"] == "ConfigMap"]
    assert endpoint["metadata"]["name"] == "llama3-endpoint"
    assert endpoint["metadata"]["labels"]["controller-uid"] == mc.PARENT_UID
    assert endpoint["data"] == {"url": "http://llama3.ml.svc.cluster.local:8000", "name": "llama3"}
    assert builtin_errors(endpoint) == []
    assert [c["kind"] for c in custom][-1] == "ConfigMap"


def test_extra_template_may_not_add_a_managed_kind(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"second-service.yaml": (
        "apiVersion: v1\nkind: Service\nmetadata: {name: {{ view.name ~ '-x' }}}\nspec: {}\n")})
    with pytest.raises(TemplateError, match="second-service.yaml: renders a Service .* already manages"):
        load_templates(folder, ChildSettings())


def test_extra_policies_add_up_with_the_access_policies(tmp_path: Path) -> None:
    """A platform's own NetworkPolicy or AuthorizationPolicy beside `access`'s, under its own
    name; under the same name it is rendered twice, and refused when the set is loaded."""
    extra = ("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
             "{% with name=view.name ~ NAME, labels=view.labels %}{% include '_metadata.yaml' %}{% endwith %}\n"
             "spec: {podSelector: {matchLabels: {{ view.service.selector }}}, policyTypes: [Egress]}\n")
    folder = folder_with(tmp_path, {"deny-egress.yaml": extra.replace("NAME", "'-deny-egress'")})
    templates = load_templates(folder, ChildSettings())
    for spec in (SPEC, {**SPEC, "access": {"from": [{"namespace": "apps"}]}}):
        policies = sorted(c["metadata"]["name"] for c in children(templates, spec) if c["kind"] == "NetworkPolicy")
        assert policies == (["llama3", "llama3-deny-egress"] if "access" in spec else ["llama3-deny-egress"])
    (folder / "deny-egress.yaml").write_text(extra.replace("NAME", "''"))
    with pytest.raises(TemplateError, match="NetworkPolicy selfcheck is rendered twice"):
        load_templates(folder, ChildSettings())


def test_a_child_too_big_for_metacontroller_to_record_is_refused(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: {{ 'x' * 250000 }}}\n")})
    with pytest.raises(TemplateError, match="cm.yaml: renders a ConfigMap \\(big\\) of 244 KiB; .* at most 240 KiB"):
        load_templates(folder, ChildSettings())
    (folder / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: {{ 'x' * 240000 }}}\n")
    assert any(c["kind"] == "ConfigMap" for c in children(load_templates(folder, ChildSettings())))


def test_extra_template_may_not_leave_the_namespace(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: kube-system}\n"})
    with pytest.raises(TemplateError, match="cm.yaml: .* must stay in the LLMDeployment's namespace"):
        load_templates(folder, ChildSettings())


def test_override_that_breaks_the_selector_is_refused(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"deployment.yaml": (
        '{% extends "llmdeploy/deployment.yaml" %}{% block pod_labels %}{"app": "x"}{% endblock %}')})
    with pytest.raises(TemplateError, match="deployment.yaml: the Deployment's pod labels must include"):
        load_templates(folder, ChildSettings())


def test_helpers_are_not_children(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {
        "_helpers.yaml": "{% macro owner() %}ml-platform{% endmacro %}",
        "cm.yaml": ('{% import "_helpers.yaml" as h %}apiVersion: v1\nkind: ConfigMap\n'
                    "metadata: {name: {{ view.name }}, labels: {{ view.labels }}}\ndata: {owner: {{ h.owner() }}}\n"),
    })
    (config_map,) = [c for c in children(load_templates(folder, ChildSettings())) if c["kind"] == "ConfigMap"]
    assert config_map["data"] == {"owner": "ml-platform"}


def test_custom_templates_cannot_be_injected_either(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}, labels: {{ view.labels }}}\n"
        "data:\n  model: {{ view.tracks[0].model }}\n  args: {{ view.tracks[0].args | join(' ') }}\n")})
    payload = 'x"\ninjected: true\n---\nkind: Secret'
    spec = {"model": {"uri": "hf://org/model", "revision": payload}}
    (config_map,) = [c for c in children(load_templates(folder, ChildSettings()), spec) if c["kind"] == "ConfigMap"]
    assert config_map["data"]["model"] == f"hf://org/model@{payload}"
    assert set(config_map) == {"apiVersion", "kind", "metadata", "data"}
    assert payload in config_map["data"]["args"]


@pytest.mark.parametrize("body", [
    "{{ ''.__class__.__mro__ }}", "{{ view.__dict__ }}", "{{ lipsum.__globals__ }}",
    "{{ cycler.__init__.__globals__.os }}", "{{ self._TemplateReference__context }}",
    "{% set x = view.labels.update({'a': 'b'}) %}", "{{ range(10**9) | list }}",
])
def test_custom_templates_are_sandboxed(tmp_path: Path, body: str) -> None:
    folder = folder_with(tmp_path, {"cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n{body}\n"})
    with pytest.raises(TemplateError):
        load_templates(folder, ChildSettings())


def test_custom_templates_cannot_read_files(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s3cr3t")
    folder = folder_with(tmp_path, {"cm.yaml": '{% include "../secret.txt" %}'})
    with pytest.raises(TemplateError):
        load_templates(folder, ChildSettings())
    folder = folder_with(tmp_path, {"cm.yaml": '{% include "/etc/passwd" %}'})
    with pytest.raises(TemplateError):
        load_templates(folder, ChildSettings())


def test_template_error_during_sync_never_shrinks_the_answer(tmp_path: Path, templates: TemplateSet) -> None:
    folder = folder_with(tmp_path, {"cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n"
        "{% if view.tracks[0].replicas == 7 %}{{ view.missing }}{% endif %}\n")})
    custom = load_templates(folder, ChildSettings())
    with pytest.raises(TemplateError, match="cm.yaml:4"):
        children(custom, {**SPEC, "replicas": 7})
    assert json.dumps(children(custom))  # other resources still render
