"""Which template renders which child, with what context, and what every answer must hold.

The shipped child templates, in the order children are answered: Deployments (stable, then
canary), Service, per-track Services, HPA, PDB, DestinationRule, VirtualService, HTTPRoutes,
Ingress, then the access policies: NetworkPolicy, Istio's PeerAuthentication and
AuthorizationPolicy, Linkerd's Server, AuthorizationPolicy and MeshTLSAuthentication (each only
when the view calls for it), then a platform team's extra templates. The checks here refuse an answer Kubernetes
or Metacontroller would fail on, naming the template.
"""

from __future__ import annotations

from typing import Any

from hooks.canonical import dumps
from hooks.core.view import View
from hooks.errors import TemplateError
from hooks.rendering.templateset import TemplateSet

DEPLOYMENT = "deployment.yaml"
SERVICE = "service.yaml"
AUTOSCALER = "hpa.yaml"
DISRUPTION_BUDGET = "pdb.yaml"
DESTINATION_RULE = "destinationrule.yaml"
VIRTUAL_SERVICE = "virtualservice.yaml"
TRACK_SERVICE = "track-service.yaml"
HTTP_ROUTE = "httproute.yaml"
INGRESS = "ingress.yaml"
NETWORK_POLICY = "access-networkpolicy.yaml"
PEER_AUTHENTICATION = "access-peerauthentication.yaml"
AUTHORIZATION_POLICY = "access-authorizationpolicy.yaml"
LINKERD_SERVER = "access-linkerd-server.yaml"
LINKERD_AUTHORIZATION_POLICY = "access-linkerd-authorizationpolicy.yaml"
LINKERD_AUTHENTICATION = "access-linkerd-meshtlsauthentication.yaml"
CHILD_TEMPLATES = (DEPLOYMENT, SERVICE, TRACK_SERVICE, AUTOSCALER, DISRUPTION_BUDGET, DESTINATION_RULE,
                   VIRTUAL_SERVICE, HTTP_ROUTE, INGRESS, NETWORK_POLICY, PEER_AUTHENTICATION, AUTHORIZATION_POLICY,
                   LINKERD_SERVER, LINKERD_AUTHORIZATION_POLICY, LINKERD_AUTHENTICATION)
# What the child templates render; an extra template may not add another of these.
MANAGED_KINDS = frozenset({"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
                           "DestinationRule", "VirtualService", "HTTPRoute", "Ingress"})
# Policies add up (a platform's deny-egress NetworkPolicy, an ext-authz AuthorizationPolicy):
# an extra template may render these beside the access policies, under other names.
ADDITIVE_KINDS = frozenset({"NetworkPolicy", "PeerAuthentication", "AuthorizationPolicy", "Server",
                            "MeshTLSAuthentication"})

# Metacontroller keeps a copy of each child it applies in an annotation, and Kubernetes
# allows 256 KiB of annotations in all: a child must leave room for the others.
MAX_CHILD_BYTES = 240 * 1024

JSON = dict[str, Any]


def render_children(view: View, templates: TemplateSet) -> list[JSON]:
    """The desired children, in their fixed order; TemplateError when a template fails or
    renders something that cannot be answered."""
    rendered: list[tuple[str, JSON]] = []  # (template, child)

    def render(name: str, **context: Any) -> list[JSON]:
        children = templates.render(name, view.namespace, view=view, **context)
        rendered.extend((name, child) for child in children)
        return children

    for track in view.tracks:
        (deployment,) = render(DEPLOYMENT, track=track)
        _check_selector(deployment)
    render(SERVICE)
    for service in view.track_services:
        render(TRACK_SERVICE, service=service)
    if view.autoscaler is not None:
        render(AUTOSCALER, autoscaler=view.autoscaler)
    if view.disruption_budget is not None:
        render(DISRUPTION_BUDGET)
    if view.routing is not None:
        render(DESTINATION_RULE, routing=view.routing)
        render(VIRTUAL_SERVICE, routing=view.routing)
    for route in view.http_routes:
        render(HTTP_ROUTE, route=route)
    if view.ingress is not None:
        render(INGRESS, ingress=view.ingress)
    if view.access is not None:
        render(NETWORK_POLICY, policy=view.access.network_policy)
        if view.access.istio is not None:
            render(PEER_AUTHENTICATION, access=view.access.istio)
            render(AUTHORIZATION_POLICY, access=view.access.istio)
        if view.access.linkerd is not None:
            for name in (LINKERD_SERVER, LINKERD_AUTHORIZATION_POLICY, LINKERD_AUTHENTICATION):
                render(name, access=view.access.linkerd)
    managed = ({child["kind"] for _, child in rendered} | MANAGED_KINDS) - ADDITIVE_KINDS
    for name in templates.extras:
        for extra in render(name):
            if extra["kind"] in managed:
                raise TemplateError(
                    f"renders a {extra['kind']} ({extra['metadata']['name']}), a kind llmdeploy already "
                    f"manages: override its template instead of adding a second one", name)
    for name, child in rendered:
        _check_size(child, name)
    children = [child for _, child in rendered]
    _check_unique(children)
    return children


def _check_selector(deployment: JSON) -> None:
    """A Deployment whose pods do not carry its selector's labels is one Kubernetes rejects,
    and one a customised template can produce: refuse it here, naming the template."""
    try:
        selector = deployment["spec"]["selector"]["matchLabels"]
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        ok = isinstance(selector, dict) and isinstance(pod_labels, dict) and selector.items() <= pod_labels.items()
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise TemplateError("the Deployment's pod labels must include its selector's labels", DEPLOYMENT)


def _check_size(child: JSON, template: str) -> None:
    size = len(dumps(child))
    if size > MAX_CHILD_BYTES:
        raise TemplateError(
            f"renders a {child['kind']} ({child['metadata']['name']}) of {size // 1024} KiB; Metacontroller "
            f"keeps a copy of each child in an annotation, so a child may be at most {MAX_CHILD_BYTES // 1024} KiB",
            template)


def _check_unique(children: list[JSON]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for child in children:
        key = (child["apiVersion"], child["kind"], child["metadata"]["name"])
        if key in seen:
            raise TemplateError(f"{key[1]} {key[2]} is rendered twice")
        seen.add(key)
