"""Loading a template set and trying it before it serves: render resources that use every
child template and every optional branch, so that a template that refers to something
missing fails at start-up (or on reload) rather than on the first sync. Called by the web
layer and the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.api.validation import validate_resource
from hooks.core.children import CHILD_TEMPLATES, render_children
from hooks.core.naming import Names
from hooks.core.tracks import track_specs
from hooks.core.traffic import Availability, split_in_force
from hooks.core.view import build_view
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings

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


def load_templates(folder: Path | None, settings: ChildSettings) -> TemplateSet:
    """The shipped templates with `folder` on top, loaded and rendered end to end;
    TemplateError if the set is broken."""
    templates = TemplateSet.load(CHILD_TEMPLATES, folder)
    names = Names(parent="selfcheck", namespace="default", controller_uid="00000000-0000-0000-0000-000000000000")
    availability = Availability(stable=1, canary=1)
    for canary in (EVERY_BRANCH["canary"], SECOND_CANARY):
        spec = validate_resource(names.parent, {**EVERY_BRANCH, "canary": canary})
        view = build_view(spec, track_specs(spec), split_in_force(spec, availability), True, names, {}, {}, settings)
        render_children(view, templates)
    return templates
