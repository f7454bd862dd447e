"""Whatever spec the hook accepts renders children the API server accepts: specs generated
near every bound and with hostile strings are either rejected by the hook, naming a field, or
pass Kubernetes' rules (tests/kubernetes_rules.py) in every child."""

from __future__ import annotations

import copy
from typing import Any

from hooks.api.validation import validate_resource
from hooks.errors import SpecError
from hooks.rendering.templateset import TemplateSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import metacontroller as mc
from tests.kubernetes_rules import problems
from tests.syncing import run_sync
from tests.test_spec_coverage import BASE, changed

EDGE_INTS = [0, 1, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 10**20]
EDGE_STRINGS = ["", "a", "a b", "A", "a\nb", "x" * 63, "x" * 64, "x" * 254, "a/b", "a//b", "-a", "a-", "é",
                "a.b", "0%", "00%", "05%", "100%", "101%", "a=b", "---", "*.example.com", "*", "UPPER", "_x"]
EDGE_PERCENTS = ["0%", "00%", "1%", "100%", "101%", "250%", "%", "1.5%"]
# (path, values) pairs where edge values land: every field that reaches a child as is.
PLACES: list[tuple[str, list[Any]]] = [
    ("replicas", EDGE_INTS), ("canary.replicas", EDGE_INTS), ("autoscaling.minReplicas", EDGE_INTS),
    ("autoscaling.maxReplicas", EDGE_INTS), ("startupTimeoutSeconds", EDGE_INTS),
    ("traffic.timeoutSeconds", EDGE_INTS), ("engine.maxModelLen", EDGE_INTS), ("engine.port", EDGE_INTS),
    ("traffic.retries.attempts", EDGE_INTS), ("autoscaling.metrics[0].target", EDGE_INTS),
    ("rollout.maxSurge", EDGE_INTS + EDGE_PERCENTS), ("rollout.maxUnavailable", EDGE_INTS + EDGE_PERCENTS),
    ("disruptionBudget.maxUnavailable", EDGE_INTS + EDGE_PERCENTS),
    ("pod.labels", [{k: "v"} for k in EDGE_STRINGS] + [{"k": v} for v in EDGE_STRINGS]),
    ("pod.annotations", [{k: "v"} for k in EDGE_STRINGS]),
    ("pod.nodeSelector", [{k: "v"} for k in EDGE_STRINGS] + [{"k": v} for v in EDGE_STRINGS]),
    ("pod.serviceAccountName", EDGE_STRINGS), ("pod.priorityClassName", EDGE_STRINGS),
    ("pod.imagePullSecrets[0].name", EDGE_STRINGS), ("pod.tolerations[0].key", EDGE_STRINGS),
    ("pod.tolerations[0].value", EDGE_STRINGS), ("pod.tolerations[0].tolerationSeconds", EDGE_INTS),
    ("engine.env[0].name", EDGE_STRINGS), ("model.credentialsSecret", EDGE_STRINGS),
    ("model.cache.claimName", EDGE_STRINGS), ("resources.gpu.product", EDGE_STRINGS),
    ("traffic.hosts", [[s] for s in EDGE_STRINGS]), ("traffic.gateways", [[s] for s in EDGE_STRINGS]),
]


@st.composite
def edge_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec["model"]["cache"] = {"size": "50Gi"}
    for _ in range(draw(st.integers(1, 3))):
        path, values = draw(st.sampled_from(PLACES))
        value = draw(st.sampled_from(values))
        if path == "model.cache.claimName":
            path, value = "model.cache", {"claimName": value}
        spec = changed(path, value) if spec == BASE else _apply(spec, path, value)
    return spec


def _apply(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    from tests.test_spec_coverage import segments

    *parents, last = segments(path)
    target: Any = spec
    for key in parents:
        target = target[key]
    target[last] = value
    return spec


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(edge_specs())
def test_accepted_specs_render_children_kubernetes_accepts(templates: TemplateSet, spec: dict[str, Any]) -> None:
    try:
        validate_resource("llama3", spec)
    except SpecError as e:
        assert all(err.startswith("spec.") for err in e.errors)
        return
    canary = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama3-canary", "namespace": "ml"},
              "status": {"availableReplicas": 1}}
    children = run_sync(mc.request(mc.parent(spec), [canary]), templates).children
    found = [p for child in children for p in problems(child)]
    assert found == [], found


def test_the_rules_catch_what_they_should() -> None:
    bad_label = {"kind": "Service", "metadata": {"name": "s", "labels": {"a b": "v"}}, "spec": {}}
    assert list(problems(bad_label)) == ["Service label 'a b': 'v'"]
    budget = {"kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {"maxUnavailable": "250%"}}
    assert list(problems(budget)) == ["PDB maxUnavailable '250%'"]
