"""What a platform security team checks: a real scanner (checkov) over the children of every
example and over every install, failing on any finding outside the waivers the README
documents; and the hardened pod defaults, with the spec's overrides."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ROUTERS

from tests import metacontroller as mc
from tests.conftest import EXAMPLES
from tests.rollouts import SETTINGS
from tests.scanner import findings
from tests.syncing import run_sync
from tests.test_install import INSTALLS, build

EVERY_ROUTER = dataclasses.replace(SETTINGS.children, routers=ROUTERS)
# Findings on model pods that are choices, each said in the README's "Security" section.
MODEL_WAIVERS = {
    "CKV_K8S_11": "no CPU limit on the engine: throttling a tokenizer or scheduler loop costs latency, saves nothing",
    "CKV_K8S_15": "imagePullPolicy IfNotPresent: engine images weigh tens of GB",
    "CKV_K8S_35": "the resource's credentials Secret as environment: the engines and downloaders read it so",
    "CKV_K8S_43": "images by tag: pin digests with LLMDEPLOY_<ENGINE>_IMAGE or spec.engine.image",
}
# A resource without spec.access is open to the cluster, as it always was: no NetworkPolicy.
NO_ACCESS_SET = "CKV2_K8S_6"
INSTALL_WAIVERS = {
    "CKV_K8S_11": "no CPU limit on the hook: a throttled hook answers Metacontroller late",
    "CKV_K8S_15": "imagePullPolicy IfNotPresent: the image is pinned by tag in the kustomization",
    "CKV_K8S_35": "the registry credentials as MLflow's own environment variables",
    "CKV_K8S_43": "the image by tag: `kustomize edit set image` pins a digest",
}


def children(spec: dict[str, Any], templates: TemplateSet, name: str = "llama3") -> list[dict[str, Any]]:
    canary = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{name}-canary", "namespace": "ml"},
               "status": {"availableReplicas": 1}}]
    result = run_sync(mc.request(mc.parent(spec, name=name), canary), templates, EVERY_ROUTER)
    assert result.outcome == "ok", result.status
    return list(result.children)


def example_children(templates: TemplateSet) -> list[dict[str, Any]]:
    """Each example named after its file, so that no two share pods, labels or policies."""
    out = []
    for path in EXAMPLES:
        out += children(yaml.safe_load(path.read_text())["spec"], templates, path.stem)
    return out


def test_the_scanner_finds_nothing_in_the_examples_children_but_the_waivers(templates: TemplateSet) -> None:
    found = findings(example_children(templates))
    assert found, "the scanner ran and saw the Deployments"
    open_examples = {p.stem for p in EXAMPLES if "access" not in yaml.safe_load(p.read_text())["spec"]}
    assert open_examples == {"minimal"}  # every other example sets spec.access

    def waived(check: str, resource: str) -> bool:
        if check == NO_ACCESS_SET:  # Pod.<namespace>.<name>-<track>...
            return resource.split(".")[2].rsplit("-", 1)[0] in open_examples
        return check in MODEL_WAIVERS

    assert {(c, r) for c, r in found if not waived(c, r)} == set()
    assert any(c == NO_ACCESS_SET for c, _ in found), "the scanner flags a model without a NetworkPolicy"


@pytest.mark.parametrize("install", [i for i in INSTALLS if "overlays" not in i or i.endswith("auth")])
def test_the_scanner_finds_nothing_in_the_install_but_the_waivers(install: str) -> None:
    found = findings(build(install))
    assert {check for check, _ in found} <= set(INSTALL_WAIVERS), sorted(found)


def pods(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "Deployment"]


def test_every_model_pod_and_container_is_hardened(templates: TemplateSet) -> None:
    rendered = example_children(templates)
    assert any(p.get("initContainers") for p in pods(rendered)), "an example downloads its model"
    for pod in pods(rendered):
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                          "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
        writable = {v["name"] for v in pod["volumes"] if v.get("emptyDir") == {}}
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["securityContext"] == {"allowPrivilegeEscalation": False,
                                                     "capabilities": {"drop": ["ALL"]},
                                                     "readOnlyRootFilesystem": True}
            mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounted["/tmp"] in writable and mounted["/home/engine"] in writable
            assert container["resources"]["limits"]["memory"], container["name"]
        for container in pod["containers"][:1] + pod.get("initContainers", []):
            assert {"name": "HOME", "value": "/home/engine"} in container["env"], "HOME is writable"


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"runAsUser": 0}, {"runAsNonRoot": False, "runAsUser": 0}),
    ({"runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [44]},
     {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [44]}),
    ({"runAsNonRoot": False}, {"runAsNonRoot": False, "runAsUser": 10001}),
])
def test_the_spec_overrides_the_defaults(overrides: dict[str, Any], expected: dict[str, Any],
                                         templates: TemplateSet) -> None:
    spec = {"model": {"uri": "hf://o/m"}, "pod": {"securityContext": overrides, "automountServiceAccountToken": True}}
    (pod,) = pods(children(spec, templates))
    assert pod["automountServiceAccountToken"] is True
    assert {k: pod["securityContext"][k] for k in expected} == expected
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
