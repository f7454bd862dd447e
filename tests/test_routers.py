"""Every router and every door: what each renders, checked against the upstream schemas and
Gateway API's own CEL rules; the split; Linkerd's annotations; a router the install lacks;
convergence; and switching a running resource from one router to another."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import pytest
import yaml
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ROUTERS, ChildSettings

from tests import metacontroller as mc
from tests.crdschema import cel_problems
from tests.manifests import SHARED, require_shared_validator, schema_errors
from tests.syncing import run_sync

ALL = ChildSettings(routers=ROUTERS)
CANARY_UP = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama3-canary", "namespace": "ml"},
              "status": {"availableReplicas": 1}}]
GATEWAY = {"name": "public", "namespace": "gateways", "sectionName": "https"}
EXPOSURES: dict[str, dict[str, Any] | None] = {
    "internal": None,
    "ingress": {"host": "llama3.example.com", "className": "nginx", "tls": {"secretName": "llama3-tls"},
                "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600"}},
    "gateway": {"host": "llama3.example.com", "via": "gateway", "gateway": GATEWAY},
    "istio": {"host": "llama3.example.com", "via": "istio", "gateway": {"name": "public", "namespace": "gateways"}},
}
CASES = [(r, e) for r in ("istio", "gateway-api", "linkerd", "none") for e in EXPOSURES if e != "istio" or r == "istio"]


def spec_for(router: str, exposure: str, canary: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "traffic": {"router": router}}
    if canary:
        spec["canary"] = {"weight": 20, "mirror": router != "linkerd", "mirrorPercent": 10,
                          "match": [{"headers": {"x-canary": {"exact": "1"}}, "uri": {"prefix": "/v1"}},
                                    {"method": {"exact": "POST"}, "queryParams": {"beta": {"regex": "y.*"}}}]}
    if EXPOSURES[exposure] is not None:
        spec["expose"] = copy.deepcopy(EXPOSURES[exposure])
    return spec


def answer(spec: dict[str, Any], templates: TemplateSet, observed: list[dict[str, Any]] | None = None,
           settings: ChildSettings = ALL) -> Any:
    return run_sync(mc.request(mc.parent(spec), CANARY_UP if observed is None else observed), templates, settings)


def find(children: Any, kind: str, name: str) -> dict[str, Any]:
    (found,) = [c for c in children if c["kind"] == kind and c["metadata"]["name"] == name]
    return dict(found)


@lru_cache(maxsize=1)
def httproute_schema() -> dict[str, Any]:
    require_shared_validator()
    crd = yaml.safe_load((SHARED / "schemas" / "gateway-api-httproutes.yaml").read_text())
    return dict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


# Rules of the HTTPRoute CRD the CEL library here cannot evaluate (Kubernetes' CEL extensions).
UNEVALUABLE = ("duration(", "__namespace__")


def gateway_api_cel_problems(route: dict[str, Any]) -> list[str]:
    return [p for p in cel_problems(httproute_schema(), route)
            if not ("cannot be evaluated" in p and any(u in p for u in UNEVALUABLE))]


@pytest.mark.parametrize(("router", "exposure"), CASES)
@pytest.mark.parametrize("canary_up", [True, False])
def test_every_child_is_valid_upstream(router: str, exposure: str, canary_up: bool, templates: TemplateSet) -> None:
    result = answer(spec_for(router, exposure), templates, CANARY_UP if canary_up else [])
    assert result.outcome == "ok", result.status
    assert schema_errors(result.children) == []
    for route in (c for c in result.children if c["kind"] == "HTTPRoute"):
        assert gateway_api_cel_problems(route) == []
    assert result.status.as_json()["traffic"]["router"] == router


@pytest.mark.parametrize("router", ["gateway-api", "linkerd"])
def test_httproute_splits_like_the_istio_routes(router: str, templates: TemplateSet) -> None:
    children = answer(spec_for(router, "internal"), templates).children
    route = find(children, "HTTPRoute", "llama3")
    assert route["spec"]["parentRefs"] == [{"group": "", "kind": "Service", "name": "llama3", "port": 8000}]
    ab, default = route["spec"]["rules"]
    assert [(b["name"], b["weight"]) for b in ab["backendRefs"]] == [("llama3-canary", 100)]
    assert ab["matches"] == [
        {"path": {"type": "PathPrefix", "value": "/v1"}, "headers": [{"type": "Exact", "value": "1", "name": "x-canary"}]},
        {"path": {"type": "PathPrefix", "value": "/"}, "method": "POST",
         "queryParams": [{"type": "RegularExpression", "value": "y.*", "name": "beta"}]}]
    assert [(b["name"], b["weight"]) for b in default["backendRefs"]] == [("llama3-stable", 80), ("llama3-canary", 20)]
    assert all(rule["timeouts"] == {"request": "600s"} for rule in route["spec"]["rules"])
    mirror = [f["requestMirror"] for f in default.get("filters", [])]
    assert mirror == ([{"backendRef": {"group": "", "kind": "Service", "name": "llama3-canary", "port": 8000},
                        "percent": 10}] if router == "gateway-api" else [])
    for track in ("stable", "canary"):
        service = find(children, "Service", f"llama3-{track}")
        assert service["spec"]["selector"] == {"serving.llmdeploy.io/llmdeployment": "llama3",
                                               "serving.llmdeploy.io/track": track}
    assert not [c for c in children if c["kind"] in ("VirtualService", "DestinationRule")]


@pytest.mark.parametrize("router", ["gateway-api", "linkerd"])
def test_a_canary_that_cannot_serve_gets_no_backend_and_no_match(router: str, templates: TemplateSet) -> None:
    route = find(answer(spec_for(router, "internal"), templates, []).children, "HTTPRoute", "llama3")
    (default,) = route["spec"]["rules"]
    assert [b["name"] for b in default["backendRefs"]] == ["llama3-stable"]
    assert "filters" not in default


def test_a_full_canary_leaves_the_stable_out(templates: TemplateSet) -> None:
    spec = spec_for("gateway-api", "internal")
    spec["canary"]["weight"] = 100
    route = find(answer(spec, templates).children, "HTTPRoute", "llama3")
    assert [(b["name"], b["weight"]) for b in route["spec"]["rules"][-1]["backendRefs"]] == [("llama3-canary", 100)]


@pytest.mark.parametrize(("retry_on", "expected"), [
    ("connect-failure,refused-stream,unavailable,503", "503"),
    ("5xx,gateway-error,504", "5xx,gateway-error,504"),
    ("reset,connect-failure", None),
])
def test_linkerd_reads_retries_and_timeouts_from_annotations(retry_on: str, expected: str | None,
                                                             templates: TemplateSet) -> None:
    spec = spec_for("linkerd", "internal")
    spec["traffic"].update(timeoutSeconds=900, retries={"attempts": 3, "perTryTimeoutSeconds": 120, "retryOn": retry_on})
    annotations = find(answer(spec, templates).children, "HTTPRoute", "llama3")["metadata"]["annotations"]
    retries = {"retry.linkerd.io/http": expected, "retry.linkerd.io/limit": "3", "retry.linkerd.io/timeout": "120s"}
    assert annotations == {"timeout.linkerd.io/request": "900s", **(retries if expected else {})}
    spec["traffic"]["retries"]["attempts"] = 0
    annotations = find(answer(spec, templates).children, "HTTPRoute", "llama3")["metadata"]["annotations"]
    assert annotations == {"timeout.linkerd.io/request": "900s"}


def test_gateway_api_v1beta1_by_setting(templates: TemplateSet) -> None:
    settings = ChildSettings(routers=ROUTERS, gateway_api_version="gateway.networking.k8s.io/v1beta1")
    children = answer(spec_for("linkerd", "gateway"), templates, settings=settings).children
    routes = [c for c in children if c["kind"] == "HTTPRoute"]
    assert len(routes) == 2 and {r["apiVersion"] for r in routes} == {"gateway.networking.k8s.io/v1beta1"}
    assert schema_errors(routes) == []


@pytest.mark.parametrize("router", ["istio", "gateway-api", "linkerd", "none"])
def test_external_gateway_route(router: str, templates: TemplateSet) -> None:
    route = find(answer(spec_for(router, "gateway"), templates).children, "HTTPRoute", "llama3-external")
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", **GATEWAY}]
    assert route["spec"]["hostnames"] == ["llama3.example.com"]
    backends = [(b["name"], b["weight"]) for b in route["spec"]["rules"][-1]["backendRefs"]]
    # Split exactly like the internal route; without a router the Service spreads requests.
    assert backends == ([("llama3", 100)] if router == "none" else [("llama3-stable", 80), ("llama3-canary", 20)])
    assert route["spec"]["rules"][-1]["timeouts"] == {"request": "600s"}


def test_ingress_streams(templates: TemplateSet) -> None:
    ingress = find(answer(spec_for("none", "ingress"), templates).children, "Ingress", "llama3")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": ["llama3.example.com"], "secretName": "llama3-tls"}]
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "llama3.example.com"
    assert rule["http"]["paths"] == [{"path": "/", "pathType": "Prefix",
                                      "backend": {"service": {"name": "llama3", "port": {"name": "http"}}}}]
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"] == "600"
    assert annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] == "3600", "the user's annotation wins"


@pytest.mark.parametrize("router", ["istio", "gateway-api", "linkerd", "none"])
def test_ingress_sends_to_the_service_address_so_the_router_splits(router: str, templates: TemplateSet) -> None:
    """ingress-nginx picks pod endpoints itself unless told otherwise, which would bypass the
    mesh's split and A/B matches; with no router there is no split to keep."""
    ingress = find(answer(spec_for(router, "ingress"), templates).children, "Ingress", "llama3")
    upstream = ingress["metadata"]["annotations"].get("nginx.ingress.kubernetes.io/service-upstream")
    assert upstream == (None if router == "none" else "true")


def test_istio_exposure_adds_the_gateway_and_host(templates: TemplateSet) -> None:
    vs = find(answer(spec_for("istio", "istio"), templates).children, "VirtualService", "llama3")
    assert vs["spec"]["hosts"] == ["llama3", "llama3.example.com"]
    assert vs["spec"]["gateways"] == ["gateways/public", "mesh"]


@pytest.mark.parametrize(("spec", "installed", "message"), [
    (spec_for("linkerd", "internal"), ("istio",), "spec.traffic.router: router linkerd is not installed"),
    ({"model": {"uri": "hf://org/model"}}, (),
     "spec.traffic.router: router istio (traffic.router unset means istio) is not installed with this hook "
     "(installed: none; LLMDEPLOY_ROUTERS and the CompositeController's child types say which): set "
     "traffic.router to none"),
    (spec_for("istio", "gateway"), ("istio",), "spec.expose.via: gateway needs Gateway API HTTPRoutes"),
])
def test_a_router_the_install_lacks_is_refused_and_children_are_kept(
        spec: dict[str, Any], installed: tuple[str, ...], message: str, templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    served = {"model": {"uri": "hf://org/model"}, "traffic": {"router": "none"}}
    cluster.apply(answer(served, templates, []).children)
    before = copy.deepcopy(cluster.objects)
    result = run_sync(mc.request(mc.parent(spec, generation=2), cluster.observed()), templates,
                      ChildSettings(routers=installed))
    assert result.outcome == "invalid"
    spec_valid = next(c for c in result.status.as_json()["conditions"] if c["type"] == "SpecValid")
    assert spec_valid["status"] == "False" and spec_valid["message"].startswith(message)
    cluster.apply(result.children)
    assert cluster.objects == before
    new = run_sync(mc.request(mc.parent(spec)), templates, ChildSettings(routers=installed))
    assert new.outcome == "invalid" and new.children == ()


def reconcile(cluster: mc.Cluster, spec: dict[str, Any], templates: TemplateSet, generation: int) -> Any:
    result = run_sync(mc.request(mc.parent(spec, generation=generation), cluster.observed()), templates, ALL)
    assert result.outcome == "ok", result.status
    cluster.apply(result.children)
    cluster.roll_out()
    return result


@pytest.mark.parametrize(("router", "exposure"), CASES)
def test_every_router_converges(router: str, exposure: str, templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    spec = spec_for(router, exposure)
    reconcile(cluster, spec, templates, 1)
    reconcile(cluster, spec, templates, 1)  # the canary serves: routes change once
    writes = cluster.writes
    reconcile(cluster, spec, templates, 1)
    assert cluster.writes == writes


def routes_to_the_service(cluster: mc.Cluster) -> set[str]:
    """Which routers route the Service `llama3` in the cluster now."""
    found = set()
    if ("VirtualService", "llama3") in cluster.objects:
        found.add("istio")
    route = cluster.objects.get(("HTTPRoute", "llama3"))
    if route is not None:
        linkerd = "timeout.linkerd.io/request" in route["metadata"].get("annotations", {})
        found.add("linkerd" if linkerd else "gateway-api")
    return found


ORDER = ["istio", "gateway-api", "linkerd", "none", "linkerd", "istio", "none", "gateway-api", "istio"]


def test_switching_routers_never_leaves_the_service_without_a_route(templates: TemplateSet) -> None:
    """Each switch takes one sync: the new router's route is applied and the old one deleted in
    the same answer, so the Service is routed by exactly the new router after it."""
    cluster = mc.Cluster()
    generation = 1
    pods: dict[str, Any] = {}
    for router in ORDER:
        spec = spec_for(router, "internal")
        result = reconcile(cluster, spec, templates, generation)
        for track in ("stable", "canary"):  # a switch restarts no model pod
            template = cluster.objects["Deployment", f"llama3-{track}"]["spec"]["template"]
            assert pods.setdefault(track, template) == template
        assert routes_to_the_service(cluster) == (set() if router == "none" else {router})
        assert result.status.as_json()["traffic"]["router"] == router
        assert ("Service", "llama3") in cluster.objects
        if router in ("gateway-api", "linkerd"):
            assert {("Service", "llama3-stable"), ("Service", "llama3-canary")} <= set(cluster.objects)
        reconcile(cluster, spec, templates, generation)
        generation += 1


@pytest.mark.parametrize("router", ["gateway-api", "linkerd", "none"])
def test_render_previews_any_router_offline(router: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from hooks.tools.cli import main

    resource = tmp_path / "llama3.yaml"
    resource.write_text(yaml.safe_dump({"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                        "metadata": {"name": "llama3"},
                                        "spec": {"model": {"uri": "hf://org/model"}, "traffic": {"istio": False}}}))
    assert main(["render", "-f", str(resource), "--router", router]) == 0
    out = capsys.readouterr()
    kinds = [d["kind"] for d in yaml.safe_load_all(out.out) if d]
    assert ("HTTPRoute" in kinds) == (router != "none")
    assert f"router: {router}" in out.err
