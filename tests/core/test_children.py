"""The children of a resource: the fixed order, the checks every answer passes, and no
resource value that can inject YAML structure through any template."""

from __future__ import annotations

import copy
from typing import Any

from hooks.api.validation import validate_resource
from hooks.core.children import CHILD_TEMPLATES, render_children
from hooks.core.naming import Names
from hooks.core.tracks import track_specs
from hooks.core.traffic import Availability, split_in_force
from hooks.core.view import build_view
from hooks.errors import SpecError
from hooks.rendering.templateset import TemplateSet, shipped_templates_dir
from hooks.settings import ROUTERS, ChildSettings

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
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["affinity"]}]}]}}},
            "serviceAccountName": "account", "priorityClassName": "priority",
            "imagePullSecrets": [{"name": "pull"}]},
}


def render(templates: TemplateSet, spec: dict[str, Any]) -> list[dict[str, Any]]:
    valid = validate_resource("llama3", spec)
    view = build_view(valid, track_specs(valid), split_in_force(valid, Availability(1, 1)), True,
                      Names("llama3", "ml"), {}, {}, ChildSettings())
    return render_children(view, templates)


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


def test_no_string_field_can_inject_structure(templates: TemplateSet) -> None:
    baseline = shape(render(templates, ALL_STRINGS))
    injected = 0
    for path in string_paths(ALL_STRINGS):
        spec = with_value(ALL_STRINGS, path, PAYLOAD)
        try:
            children = render(templates, spec)
        except SpecError:
            continue  # the field's own rules refuse such a value: nothing to inject through
        injected += 1
        assert shape(children) == baseline, f"spec.{'.'.join(map(str, path))} changed the output's structure"
        assert not any(c["kind"] == "Secret" or "injected" in str(shape(c)) for c in children)
    assert injected >= 12, "too few fields took the payload for this test to mean much"


def test_children_come_in_a_fixed_order(templates: TemplateSet) -> None:
    kinds = [c["kind"] + "/" + c["metadata"]["name"] for c in render(templates, ALL_STRINGS)]
    assert kinds == ["Deployment/llama3-stable", "Deployment/llama3-canary", "Service/llama3",
                     "HorizontalPodAutoscaler/llama3-stable", "PodDisruptionBudget/llama3-stable",
                     "DestinationRule/llama3", "VirtualService/llama3"]


def test_every_child_template_is_shipped() -> None:
    shipped = shipped_templates_dir().glob("*.yaml")
    assert sorted(p.name for p in shipped if not p.name.startswith("_")) == sorted(CHILD_TEMPLATES)


def test_view_is_what_templates_see(templates: TemplateSet) -> None:
    valid = validate_resource("llama3", {"model": {"uri": "hf://o/m"}})
    view = build_view(valid, track_specs(valid), split_in_force(valid, Availability()), False,
                      Names("llama3", "ml"), {}, {}, ChildSettings())
    (deployment,) = templates.render("deployment.yaml", "ml", view=view, track=view.tracks[0])
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"] == list(view.tracks[0].args)


def test_every_shipped_template_renders_from_a_view_alone(templates: TemplateSet) -> None:
    """No template needs anything but the view (and the part of it it is given), for every router."""
    from hooks.core.exercise import EVERY_BRANCH, VARIANTS

    used: set[str] = set()
    for spec in (EVERY_BRANCH, *VARIANTS):
        valid = validate_resource("llama3", spec)
        view = build_view(valid, track_specs(valid), split_in_force(valid, Availability(1, 1)), True,
                          Names("llama3", "ml"), {}, {}, ChildSettings(routers=ROUTERS))
        contexts: dict[str, list[dict[str, Any]]] = {
            "deployment.yaml": [{"track": t} for t in view.tracks], "service.yaml": [{}],
            "track-service.yaml": [{"service": s} for s in view.track_services],
            "hpa.yaml": [{"autoscaler": view.autoscaler}] if view.autoscaler else [],
            "pdb.yaml": [{}] if view.disruption_budget else [],
            "destinationrule.yaml": [{"routing": view.routing}] if view.routing else [],
            "virtualservice.yaml": [{"routing": view.routing}] if view.routing else [],
            "httproute.yaml": [{"route": r} for r in view.http_routes],
            "ingress.yaml": [{"ingress": view.ingress}] if view.ingress else [],
            "access-networkpolicy.yaml": [{"policy": view.access.network_policy}] if view.access else [],
        }
        istio = view.access.istio if view.access else None
        linkerd = view.access.linkerd if view.access else None
        for name in ("access-peerauthentication.yaml", "access-authorizationpolicy.yaml"):
            contexts[name] = [{"access": istio}] if istio else []
        for name in ("access-linkerd-server.yaml", "access-linkerd-authorizationpolicy.yaml", "access-linkerd-meshtlsauthentication.yaml"):
            contexts[name] = [{"access": linkerd}] if linkerd else []
        assert set(contexts) == set(CHILD_TEMPLATES)
        used |= {name for name, given in contexts.items() if given}
        rendered = [obj for name in CHILD_TEMPLATES for context in contexts[name]
                    for obj in templates.render(name, "ml", view=view, **context)]
        assert rendered == render_children(view, templates)
    assert used == set(CHILD_TEMPLATES)
