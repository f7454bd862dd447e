"""Trying a template set before it serves: resources that use every child template and
every optional branch, through the same `desire` step as every sync, so that a template that
refers to something missing fails at start-up (or on reload) rather than on the first sync.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hooks.core.desired import DesiredInputs, desire
from hooks.core.traffic import Availability
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ROUTERS, ChildSettings

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
_GATEWAY = {"name": "public", "namespace": "gateways", "sectionName": "https"}
# Every router and exposure, and access with each mesh, so that the HTTPRoute, Ingress,
# per-track Service and access policy templates are tried too (whatever this install has: the templates are checked, not the install).
_CALLERS = [{"namespace": "apps"}, {"serviceAccount": "apps/web"}]
VARIANTS: tuple[dict[str, Any], ...] = (
    {**EVERY_BRANCH, "expose": {"host": "m.example.com", "via": "istio", "gateway": {"name": "public"}},
     "access": {"from": _CALLERS, "mtls": "PERMISSIVE"}},
    {**EVERY_BRANCH, "canary": {"model": {"uri": "oci://registry/models/llama:1"}}, "access": {}},
    {**EVERY_BRANCH, "traffic": {"router": "gateway-api"},
     "expose": {"host": "m.example.com", "via": "gateway", "gateway": _GATEWAY, "annotations": {"a": "1"}}},
    {**EVERY_BRANCH, "traffic": {"router": "linkerd"}, "canary": {**EVERY_BRANCH["canary"], "mirror": False},
     "expose": {"host": "m.example.com", "className": "nginx", "tls": {"secretName": "t"}},
     "access": {"from": _CALLERS}},
)


def exercise(templates: TemplateSet, settings: ChildSettings) -> None:
    """Render the built-in resources with `templates`; TemplateError on the first failure."""
    every_router = dataclasses.replace(settings, routers=ROUTERS)
    for spec in VARIANTS:
        inputs = DesiredInputs(name="selfcheck", namespace="default",
                               controller_uid="00000000-0000-0000-0000-000000000000", labels={}, annotations={},
                               spec=spec, availability=Availability(1, 1), settings=every_router)
        desired = desire(inputs, templates)
        if desired.outcome != "ok":
            raise RuntimeError(f"the built-in check resource is invalid: {desired.spec_errors}")
