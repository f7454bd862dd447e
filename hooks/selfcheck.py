"""A start-up check of a template set: render a resource that uses every child template and
every optional branch, so a template that refers to something missing fails before the first
sync does. Called by the app and the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.hookapi import KubeObject
from hooks.naming import Names
from hooks.rendering import Renderer
from hooks.settings import Settings, shipped_templates_dir
from hooks.spec import LLMDeploymentSpec
from hooks.view import Availability, build_view

EVERY_BRANCH: dict[str, Any] = {
    "model": {"uri": "s3://models/llama", "revision": "1", "credentialsSecret": "creds", "cache": {"claimName": "c"}},
    "engine": {"args": ["--x"], "env": [{"name": "A", "value": "1"}], "maxModelLen": 4096},
    "resources": {"gpu": {"count": 2, "product": "NVIDIA-H100-80GB-HBM3"}},
    "autoscaling": {"metrics": [
        {"type": "queue-length", "target": 5}, {"type": "gpu-utilization", "target": 80},
        {"type": "cpu", "target": 70}, {"type": "pods", "name": "m", "target": 1},
        {"type": "external", "name": "q", "target": 100, "selector": {"matchLabels": {"q": "a"}}},
    ]},
    "canary": {"model": {"uri": "pvc://models/llama"}, "match": [{"headers": {"x": {"exact": "1"}}}], "mirror": True},
    "traffic": {"hosts": ["h.example.com"], "gateways": ["istio-system/gw"]},
    "pod": {"tolerations": [{"key": "k", "operator": "Exists"}], "affinity": {"nodeAffinity": {}},
            "serviceAccountName": "sa", "priorityClassName": "p", "imagePullSecrets": [{"name": "r"}]},
}
SECOND_CANARY: dict[str, Any] = {"model": {"uri": "oci://registry/models/llama:1"}}


def check_templates(settings: Settings, overrides: Path | None = None) -> Renderer:
    """Load the template set (shipped, with `overrides` or the configured folder on top) and
    render it end to end; TemplateError if it is broken."""
    renderer = Renderer.load(shipped_templates_dir(), overrides or settings.templates_dir)
    names = Names(parent="selfcheck", namespace="default", controller_uid="00000000-0000-0000-0000-000000000000")
    parent = KubeObject.model_validate({"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                        "metadata": {"name": names.parent}})
    for canary in (EVERY_BRANCH["canary"], SECOND_CANARY):
        spec = LLMDeploymentSpec.model_validate({**EVERY_BRANCH, "canary": canary})
        renderer.render_children(build_view(spec, parent, names, Availability(stable=1, canary=1), settings))
    return renderer
