"""`spec.access`: who reaches a model, per router. The rendered policies are checked against
the upstream schemas, then evaluated as the CNI and the meshes would (small models of their
rules, written here, not taken from the hook): the listed callers get through, the exposure
path and Prometheus keep working, everyone else is refused. Convergence, refusals, settings."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hooks.errors import ConfigError
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings, Settings

from tests import metacontroller as mc
from tests.manifests import schema_errors
from tests.syncing import run_sync
from tests.test_routers import ALL, CASES, reconcile, spec_for

ACCESS = {"from": [{"namespace": "apps"}, {"serviceAccount": "batch/nightly"}, {"serviceAccount": "evals"}]}
ENGINE_PORT = 8000
PORTS = {"http": ENGINE_PORT}  # the engine container's named port
JSON = dict[str, Any]


def with_access(router: str, exposure: str = "internal", mtls: str | None = None,
                access: JSON | None = None) -> JSON:
    spec = spec_for(router, exposure)
    spec["access"] = copy.deepcopy(ACCESS if access is None else access)
    if mtls is not None:
        spec["access"]["mtls"] = mtls
    return spec


def children(spec: JSON, templates: TemplateSet, settings: ChildSettings = ALL) -> list[JSON]:
    result = run_sync(mc.request(mc.parent(spec), []), templates, settings)
    assert result.outcome == "ok", result.status
    return list(result.children)


def one(objects: list[JSON], kind: str, group: str = "") -> JSON | None:
    found = [o for o in objects if o["kind"] == kind and o["apiVersion"].startswith(group)]
    assert len(found) <= 1
    return found[0] if found else None


# --- what the CNI and the meshes would decide --------------------------------------------

@dataclasses.dataclass(frozen=True)
class Caller:
    namespace: str
    account: str
    meshed: bool = True  # has a mesh identity (a sidecar), so it talks mutual TLS


def network_admits(policy: JSON | None, caller: Caller, port: int) -> bool:
    """A NetworkPolicy selecting the pods: a rule admits when a peer's namespace selector
    matches the caller's namespace (its kubernetes.io/metadata.name label) and a port matches."""
    if policy is None:
        return True
    for rule in policy["spec"].get("ingress", []):
        peers = rule.get("from", [])
        ports = rule.get("ports", [])
        if peers and not any(_namespace_matches(p.get("namespaceSelector"), caller.namespace) and "podSelector" not in p
                             for p in peers):
            continue
        if ports and not any(PORTS.get(p["port"], p["port"]) == port for p in ports):
            continue
        return True
    return False


def _namespace_matches(selector: JSON | None, namespace: str) -> bool:
    if selector is None:
        return False
    labels = {"kubernetes.io/metadata.name": namespace}
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In"
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


# Ports the sidecars do not intercept: Istio's agent (merged metrics, rewritten probes) and
# Envoy's stats. Linkerd's Server covers the engine port alone; its proxy port 4191 is not one.
ISTIO_UNINTERCEPTED = {15020, 15090}
API_CALL = ("POST", "/v1/chat/completions")
SCRAPE = ("GET", "/metrics")


def istio_admits(peer: JSON | None, policy: JSON | None, caller: Caller, port: int = ENGINE_PORT,
                 request: tuple[str, str] = API_CALL, trust_domain: str = "cluster.local") -> bool:
    """PeerAuthentication (STRICT refuses plaintext), then an ALLOW AuthorizationPolicy: some
    rule matches, that is one of its `from` sources and one of its `to` operations (a field
    absent or empty constrains nothing, as in Istio's API)."""
    if (peer is None and policy is None) or port in ISTIO_UNINTERCEPTED:
        return True
    assert peer is not None and policy is not None
    if not caller.meshed and peer["spec"]["mtls"]["mode"] == "STRICT":
        return False
    assert policy["spec"]["action"] == "ALLOW"
    principal = f"{trust_domain}/ns/{caller.namespace}/sa/{caller.account}" if caller.meshed else None
    namespace = caller.namespace if caller.meshed else None  # source.namespaces needs mTLS too
    method, path = request

    def source_matches(source: JSON) -> bool:
        assert set(source) <= {"principals", "notPrincipals", "namespaces"}
        if source.get("principals") and not (principal is not None and ({principal, "*"} & set(source["principals"]))):
            return False
        if source.get("notPrincipals"):
            assert source["notPrincipals"] == ["*"]
            if principal is not None:
                return False
        return not source.get("namespaces") or namespace in source["namespaces"]

    def operation_matches(operation: JSON) -> bool:
        assert set(operation) <= {"methods", "paths"}
        return ((not operation.get("methods") or method in operation["methods"])
                and (not operation.get("paths") or path in operation["paths"]))

    def rule_matches(rule: JSON) -> bool:
        sources = [entry["source"] for entry in rule.get("from", [])]
        operations = [entry["operation"] for entry in rule.get("to", [])]
        return ((not sources or any(source_matches(src) for src in sources))
                and (not operations or any(operation_matches(op) for op in operations)))

    return any(rule_matches(rule) for rule in policy["spec"].get("rules", []))


def linkerd_admits(server: JSON | None, policy: JSON | None, authentication: JSON | None, caller: Caller,
                   port: int = ENGINE_PORT) -> bool:
    """A Server on the engine port: an AuthorizationPolicy whose MeshTLSAuthentication names the
    caller's identity (its ServiceAccount, or its namespace) admits; otherwise the Server's
    accessPolicy decides (deny; audit admits and logs). Other ports are no Server's: the
    cluster's default policy (all-unauthenticated) admits."""
    if server is None or PORTS.get(server["spec"]["port"], server["spec"]["port"]) != port:
        return True
    assert policy is not None and authentication is not None
    assert policy["spec"]["targetRef"] == {"group": "policy.linkerd.io", "kind": "Server",
                                           "name": server["metadata"]["name"]}
    assert policy["spec"]["requiredAuthenticationRefs"] == [
        {"group": "policy.linkerd.io", "kind": "MeshTLSAuthentication", "name": authentication["metadata"]["name"]}]
    if caller.meshed:
        for ref in authentication["spec"]["identityRefs"]:
            if ref["kind"] == "ServiceAccount" and (ref["namespace"], ref["name"]) == (caller.namespace, caller.account):
                return True
            if ref["kind"] == "Namespace" and ref["name"] == caller.namespace:
                return True
    return bool(server["spec"].get("accessPolicy", "deny") == "audit")


def reaches(objects: list[JSON], caller: Caller, port: int = ENGINE_PORT, request: tuple[str, str] = API_CALL) -> bool:
    """Whether `caller`'s request gets through to the model pods on `port`."""
    network = network_admits(one(objects, "NetworkPolicy"), caller, port)
    mesh = istio_admits(one(objects, "PeerAuthentication"), one(objects, "AuthorizationPolicy", "security.istio.io"),
                        caller, port, request)
    mesh = mesh and linkerd_admits(one(objects, "Server"), one(objects, "AuthorizationPolicy", "policy.linkerd.io"),
                                   one(objects, "MeshTLSAuthentication"), caller, port)
    return network and mesh


def scrapes(objects: list[JSON], caller: Caller, port: int = ENGINE_PORT) -> bool:
    return reaches(objects, caller, port, SCRAPE)


APPS = Caller("apps", "web")
NIGHTLY = Caller("batch", "nightly")
BATCH_OTHER = Caller("batch", "other")
EVALS = Caller("ml", "evals")  # a bare serviceAccount: the resource's namespace
NEIGHBOUR = Caller("ml", "other")
STRANGER = Caller("elsewhere", "web")
INGRESS = Caller("ingress-nginx", "ingress-nginx")
GATEWAY = Caller("gateways", "public-istio")
ISTIO_GATEWAY = Caller("istio-system", "istio-ingressgateway-service-account")
PROMETHEUS = Caller("monitoring", "prometheus")
# Who calls for each exposure: the Istio ingress gateway runs in istio-system or beside its Gateway.
EXPOSURE_PATHS = {"ingress": (INGRESS,), "gateway": (GATEWAY,), "istio": (ISTIO_GATEWAY, GATEWAY)}
MESHES = ("istio", "linkerd")


@pytest.mark.parametrize(("router", "exposure"), CASES)
def test_the_listed_callers_the_exposure_path_and_prometheus_reach_the_model(
        router: str, exposure: str, templates: TemplateSet) -> None:
    objects = children(with_access(router, exposure), templates)
    assert reaches(objects, APPS) and reaches(objects, NIGHTLY) and reaches(objects, EVALS)
    assert scrapes(objects, PROMETHEUS)  # the engine serves /metrics on its port
    assert reaches(objects, PROMETHEUS) == (router != "istio")  # only Istio's policy tells paths apart
    assert not reaches(objects, STRANGER)
    # Another identity in a namespace admitted for one identity: only a mesh can tell them apart.
    assert reaches(objects, BATCH_OTHER) == reaches(objects, NEIGHBOUR) == (router not in MESHES)
    admitted = EXPOSURE_PATHS.get(exposure, ())
    for caller in (INGRESS, GATEWAY, ISTIO_GATEWAY):
        assert reaches(objects, caller) == (caller in admitted), caller
    assert not reaches(objects, APPS, port=9999)


@pytest.mark.parametrize("router", MESHES)
def test_strict_refuses_callers_outside_the_mesh_and_permissive_admits_them_from_admitted_namespaces(
        router: str, templates: TemplateSet) -> None:
    strict = children(with_access(router), templates)
    permissive = children(with_access(router, mtls="PERMISSIVE"), templates)
    outside = Caller("apps", "legacy", meshed=False)
    assert not reaches(strict, outside)
    assert reaches(permissive, outside)
    assert not reaches(permissive, dataclasses.replace(STRANGER, meshed=False))  # the NetworkPolicy still holds
    assert reaches(permissive, APPS) and not reaches(strict, Caller("batch", "other", meshed=False))


def test_istio_permissive_still_refuses_a_meshed_identity_it_does_not_list(templates: TemplateSet) -> None:
    permissive = children(with_access("istio", mtls="PERMISSIVE"), templates)
    assert not reaches(permissive, BATCH_OTHER)
    assert one(permissive, "PeerAuthentication")["spec"]["mtls"] == {"mode": "PERMISSIVE"}  # type: ignore[index]


@pytest.mark.parametrize(("router", "exposure", "mtls"), [
    (r, e, m) for r, e in CASES for m in ("STRICT", "PERMISSIVE") if m == "STRICT" or r in MESHES])
def test_every_access_child_is_valid_upstream(router: str, exposure: str, mtls: str, templates: TemplateSet) -> None:
    objects = children(with_access(router, exposure, mtls), templates)
    kinds = {(o["apiVersion"], o["kind"]) for o in objects}
    expected = {("networking.k8s.io/v1", "NetworkPolicy")}
    if router == "istio":
        expected |= {("security.istio.io/v1", "PeerAuthentication"), ("security.istio.io/v1", "AuthorizationPolicy")}
    if router == "linkerd":
        expected |= {("policy.linkerd.io/v1beta3", "Server"), ("policy.linkerd.io/v1alpha1", "AuthorizationPolicy"),
                     ("policy.linkerd.io/v1alpha1", "MeshTLSAuthentication")}
    access_kinds = {k for k in kinds if k[1] in {"NetworkPolicy", "PeerAuthentication", "AuthorizationPolicy",
                                                 "Server", "MeshTLSAuthentication"}}
    assert access_kinds == expected
    assert schema_errors(objects) == []


def test_istio_v1beta1_installs_get_v1beta1_security_policies(templates: TemplateSet) -> None:
    settings = dataclasses.replace(ALL, istio_api_version="networking.istio.io/v1beta1")
    objects = children(with_access("istio"), templates, settings)
    assert {o["apiVersion"] for o in objects if o["kind"] in ("PeerAuthentication", "AuthorizationPolicy")} == {
        "security.istio.io/v1beta1"}
    assert schema_errors(objects) == []


def test_istio_principals_use_the_trust_domain(templates: TemplateSet) -> None:
    settings = dataclasses.replace(ALL, trust_domain="prod.example.com")
    objects = children(with_access("istio"), templates, settings)
    policy = one(objects, "AuthorizationPolicy")
    assert policy is not None
    assert istio_admits(one(objects, "PeerAuthentication"), policy, NIGHTLY, trust_domain="prod.example.com")
    assert not istio_admits(one(objects, "PeerAuthentication"), policy, NIGHTLY)
    principals = [s["source"]["principals"] for s in policy["spec"]["rules"][0]["from"] if "principals" in s["source"]]
    assert principals == [["prod.example.com/ns/batch/sa/nightly", "prod.example.com/ns/ml/sa/evals"]]


def test_the_policies_select_both_tracks_and_nothing_else(templates: TemplateSet) -> None:
    for router in MESHES:
        objects = children(with_access(router), templates)
        pods = [o["spec"]["template"]["metadata"]["labels"] for o in objects if o["kind"] == "Deployment"]
        assert len(pods) == 2
        selectors = [one(objects, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"]]  # type: ignore[index]
        selectors += [o["spec"]["selector"]["matchLabels"] for o in objects if o["kind"] in ("PeerAuthentication",)]
        selectors += [o["spec"]["selector"]["matchLabels"] for o in objects
                      if o["kind"] == "AuthorizationPolicy" and "selector" in o["spec"]]
        selectors += [o["spec"]["podSelector"]["matchLabels"] for o in objects if o["kind"] == "Server"]
        for selector in selectors:
            assert all(selector.items() <= labels.items() for labels in pods)
            assert selector == {"serving.llmdeploy.io/llmdeployment": "llama3"}  # not another resource's pods


def test_prometheus_reaches_the_metrics_ports_of_each_mesh_and_engine(templates: TemplateSet) -> None:
    istio = children(with_access("istio"), templates)
    assert scrapes(istio, PROMETHEUS, 15020) and scrapes(istio, PROMETHEUS, 15090)  # merged metrics, Envoy's
    assert not scrapes(istio, APPS, 15020)
    linkerd = children(with_access("linkerd"), templates)
    assert scrapes(linkerd, PROMETHEUS, 4191)  # the proxy's metrics
    assert not scrapes(linkerd, PROMETHEUS, 15020)
    triton = with_access("none", access={"from": []})
    triton.update(model={"uri": "s3://models/llama"}, engine={"type": "triton"})
    triton.pop("canary")
    objects = children(triton, templates)
    assert scrapes(objects, PROMETHEUS, 8002) and not scrapes(objects, PROMETHEUS, 9999)
    assert not scrapes(objects, PROMETHEUS)  # Triton serves no metrics on its API port: not opened to them
    assert not reaches(objects, APPS)  # nobody listed: only the scraper


@pytest.mark.parametrize("router", ["istio", "linkerd", "gateway-api"])
def test_with_nobody_listed_only_the_scraper_gets_in(router: str, templates: TemplateSet) -> None:
    objects = children(with_access(router, access={"from": []}), templates)
    assert scrapes(objects, PROMETHEUS)
    for caller in (APPS, NEIGHBOUR, STRANGER, dataclasses.replace(NEIGHBOUR, meshed=False)):
        assert not reaches(objects, caller), caller


def test_istio_admits_the_monitoring_namespaces_to_the_metrics_alone(templates: TemplateSet) -> None:
    objects = children(with_access("istio"), templates)
    grafana = Caller("monitoring", "grafana")
    assert scrapes(objects, grafana) and not reaches(objects, grafana)
    assert not scrapes(objects, STRANGER)


def test_what_strict_asks_of_the_scraper_and_the_ingress_controller_outside_the_mesh(templates: TemplateSet) -> None:
    """As the README says: under STRICT, a Prometheus outside the mesh scrapes Istio's merged
    metrics (15020) or Linkerd's proxy (4191), not the engine port; an unmeshed ingress
    controller is refused; PERMISSIVE lets both through."""
    prometheus = dataclasses.replace(PROMETHEUS, meshed=False)
    nginx = dataclasses.replace(INGRESS, meshed=False)
    for router, port in (("istio", 15020), ("linkerd", 4191)):
        strict = children(with_access(router, "ingress"), templates)
        assert scrapes(strict, prometheus, port) and not scrapes(strict, prometheus)
        assert not reaches(strict, nginx)
        permissive = children(with_access(router, "ingress", "PERMISSIVE"), templates)
        assert scrapes(permissive, prometheus) and reaches(permissive, nginx)


def test_without_access_there_is_no_policy(templates: TemplateSet) -> None:
    for router, exposure in CASES:
        objects = children(spec_for(router, exposure), templates)
        assert not {o["kind"] for o in objects} & {"NetworkPolicy", "PeerAuthentication", "AuthorizationPolicy",
                                                  "Server", "MeshTLSAuthentication"}
        assert reaches(objects, STRANGER)


# --- where the exposure path and the scraper come from ----------------------------------

@pytest.mark.parametrize(("exposure", "namespace"), [("ingress", "ingress-nginx"), ("gateway", "gateways"),
                                                     ("istio", "istio-system"), ("istio", "gateways")])
def test_each_exposure_admits_its_usual_namespace_unless_configured(exposure: str, namespace: str,
                                                                    templates: TemplateSet) -> None:
    objects = children(with_access("istio", exposure, access={"from": []}), templates)
    assert reaches(objects, Caller(namespace, "proxy"))
    configured = dataclasses.replace(ALL, ingress_namespaces=("edge", "edge-2"))
    objects = children(with_access("istio", exposure, access={"from": []}), templates, configured)
    assert reaches(objects, Caller("edge", "proxy")) and reaches(objects, Caller("edge-2", "proxy"))
    assert not reaches(objects, Caller(namespace, "proxy"))


def test_a_gateway_in_the_resources_namespace_admits_that_namespace(templates: TemplateSet) -> None:
    spec = with_access("gateway-api", "gateway", access={"from": []})
    del spec["expose"]["gateway"]["namespace"]
    objects = children(spec, templates)
    assert reaches(objects, NEIGHBOUR) and not reaches(objects, APPS)


def test_istio_gateways_of_the_virtualservice_are_an_exposure_path_too(templates: TemplateSet) -> None:
    spec = with_access("istio", access={"from": []})
    spec["traffic"]["gateways"] = ["istio-ingress/public", "internal-gateway", "mesh"]
    objects = children(spec, templates)
    for namespace in ("istio-system", "istio-ingress", "ml"):
        assert reaches(objects, Caller(namespace, "gateway")), namespace
    assert not reaches(objects, Caller("mesh", "x")) and not reaches(objects, APPS)
    spec["traffic"]["router"] = "none"  # gateways are Istio's: another router has none
    spec["traffic"]["gateways"] = []
    assert not reaches(children(spec, templates), Caller("istio-system", "gateway"))
    configured = dataclasses.replace(ALL, ingress_namespaces=("edge",))
    spec["traffic"].update(router="istio", gateways=["istio-ingress/public"])
    objects = children(spec, templates, configured)
    assert reaches(objects, Caller("edge", "gateway")) and not reaches(objects, Caller("istio-ingress", "gateway"))


def test_the_monitoring_namespaces_are_a_setting(templates: TemplateSet) -> None:
    settings = dataclasses.replace(ALL, monitoring_namespaces=("observability",))
    for router in ("istio", "linkerd", "none"):
        objects = children(with_access(router), templates, settings)
        assert scrapes(objects, Caller("observability", "prometheus")) and not scrapes(objects, PROMETHEUS)


def test_settings_from_the_environment() -> None:
    children_settings = Settings.from_env({
        "LLMDEPLOY_INGRESS_NAMESPACES": " ingress-nginx, gateways ,,ingress-nginx",
        "LLMDEPLOY_MONITORING_NAMESPACES": "observability",
        "LLMDEPLOY_TRUST_DOMAIN": "prod.example.com",
    }).children
    assert children_settings.ingress_namespaces == ("ingress-nginx", "gateways")
    assert children_settings.monitoring_namespaces == ("observability",)
    assert children_settings.trust_domain == "prod.example.com"
    defaults = Settings.from_env({"LLMDEPLOY_INGRESS_NAMESPACES": "", "LLMDEPLOY_MONITORING_NAMESPACES": " "}).children
    assert defaults.ingress_namespaces is None and defaults.monitoring_namespaces == ("monitoring",)
    assert defaults.trust_domain == "cluster.local"


@pytest.mark.parametrize(("name", "value", "message"), [
    ("LLMDEPLOY_INGRESS_NAMESPACES", "Ingress_Nginx", "LLMDEPLOY_INGRESS_NAMESPACES must list namespaces"),
    ("LLMDEPLOY_MONITORING_NAMESPACES", "monitoring,a/b", "LLMDEPLOY_MONITORING_NAMESPACES must list namespaces"),
    ("LLMDEPLOY_TRUST_DOMAIN", "cluster local", "LLMDEPLOY_TRUST_DOMAIN must be a trust domain"),
    ("LLMDEPLOY_TRUST_DOMAIN", "td/ns/x", "LLMDEPLOY_TRUST_DOMAIN must be a trust domain"),
])
def test_bad_settings_are_refused_at_start(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({name: value})


# --- refusals -----------------------------------------------------------------------------

@pytest.mark.parametrize(("access", "router", "message"), [
    ({"from": [{"namespace": "apps", "serviceAccount": "apps/web"}]}, "istio",
     "spec.access.from[0]: set exactly one of namespace and serviceAccount"),
    ({"from": [{}]}, "istio", "spec.access.from[0]: set exactly one of namespace and serviceAccount"),
    ({"from": [{"serviceAccount": "Apps/web"}]}, "istio", "spec.access.from[0].serviceAccount: must match"),
    ({"from": [{"serviceAccount": "a/b/c"}]}, "istio", "spec.access.from[0].serviceAccount: must match"),
    ({"from": [{"namespace": "apps/web"}]}, "istio", "spec.access.from[0].namespace: must match"),
    ({"from": [{"pod": "x"}]}, "istio", "spec.access.from[0].pod: unknown field"),
    ({"from": [{"serviceAccount": "apps/" + "a" * 254}]}, "linkerd",
     "spec.access.from[0].serviceAccount: a ServiceAccount's name is at most 253 characters"),
    ({"mtls": "DISABLE"}, "istio", "spec.access.mtls: must be one of 'STRICT' or 'PERMISSIVE'"),
    ({"mtls": "PERMISSIVE"}, "gateway-api", "spec.access.mtls: mtls PERMISSIVE relaxes the mesh policies"),
    ({"mtls": "PERMISSIVE"}, "none", "spec.access.mtls: mtls PERMISSIVE relaxes the mesh policies"),
    ({"from": [{"namespace": f"n{i}"} for i in range(65)]}, "none", "spec.access.from: must have at most 64 items"),
])
def test_a_bad_access_is_refused_and_the_children_kept(access: JSON, router: str, message: str,
                                                      templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    served = spec_for(router, "internal")
    cluster.apply(children(served, templates))
    cluster.roll_out()
    before = copy.deepcopy(cluster.objects)
    result = run_sync(mc.request(mc.parent({**served, "access": access}, generation=2), cluster.observed()),
                      templates, ALL)
    assert result.outcome == "invalid"
    spec_valid = next(c for c in result.status.as_json()["conditions"] if c["type"] == "SpecValid")
    assert spec_valid["status"] == "False" and message in spec_valid["message"], spec_valid["message"]
    cluster.apply(result.children)
    assert cluster.objects == before


def test_an_invalid_edit_keeps_the_policies_in_force(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    served = with_access("linkerd")
    cluster.apply(children(served, templates))
    before = copy.deepcopy(cluster.objects)
    broken = {**served, "access": {"from": [{"namespace": "apps", "serviceAccount": "apps/web"}]}}
    result = run_sync(mc.request(mc.parent(broken, generation=2), cluster.observed()), templates, ALL)
    assert result.outcome == "invalid"
    cluster.apply(result.children)
    assert cluster.objects == before
    assert {"NetworkPolicy", "Server", "MeshTLSAuthentication"} <= {k[0] for k in cluster.objects}


@pytest.mark.parametrize(("access", "router", "problem"), [
    ({"from": [{"namespace": "apps", "serviceAccount": "apps/web"}]}, "istio", "spec.access.from.0: {'namespace': "
     "'apps', 'serviceAccount': 'apps/web'} has too many properties"),
    ({"from": [{}]}, "istio", "spec.access.from.0: {} should be non-empty"),
    ({"mtls": "PERMISSIVE"}, "none", "spec.access.mtls: mtls PERMISSIVE relaxes the mesh policies"),
])
def test_the_api_server_refuses_what_the_hook_refuses(access: JSON, router: str, problem: str) -> None:
    """The committed CRD, as the API server applies it: the schema (a caller has exactly one
    property: CEL reserves `namespace`, so it is a schema bound) and the CEL rules."""
    from tests.crdschema import admission_problems, committed_crd

    resource = mc.parent({**spec_for(router, "internal", canary=False), "access": access})
    assert any(p.startswith(problem) for p in admission_problems(resource)), admission_problems(resource)
    if "properties" in problem or "non-empty" in problem:  # the upstream validator agrees
        assert schema_errors([resource], extra_crds=[committed_crd()]) != []
    good = mc.parent({**spec_for(router, "internal", canary=False), "access": ACCESS})
    assert admission_problems(good) == [] and schema_errors([good], extra_crds=[committed_crd()]) == []


# --- in the cluster -------------------------------------------------------------------------

@pytest.mark.parametrize(("router", "exposure"), CASES)
def test_access_converges_and_comes_and_goes_without_restarting_a_model_pod(
        router: str, exposure: str, templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    plain = spec_for(router, exposure)
    reconcile(cluster, plain, templates, 1)
    reconcile(cluster, plain, templates, 1)
    pods = {k: o["spec"]["template"] for k, o in cluster.objects.items() if k[0] == "Deployment"}
    for generation, spec in enumerate((with_access(router, exposure), plain), start=2):
        reconcile(cluster, spec, templates, generation)
        reconcile(cluster, spec, templates, generation)
        writes = cluster.writes
        reconcile(cluster, spec, templates, generation)
        assert cluster.writes == writes  # converged: nothing left to write
        assert {k: o["spec"]["template"] for k, o in cluster.objects.items() if k[0] == "Deployment"} == pods
        kinds = {k[0] for k in cluster.objects}
        assert ("NetworkPolicy" in kinds) == (spec is not plain)
        assert reaches(cluster.observed(), STRANGER) == (spec is plain)


def test_switching_mesh_routers_swaps_the_policies_in_one_sync(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    for generation, router in enumerate(("istio", "linkerd", "gateway-api", "istio"), start=1):
        reconcile(cluster, with_access(router), templates, generation)
        kinds = {k[0] for k in cluster.objects}
        assert ("PeerAuthentication" in kinds) == (router == "istio")
        assert ("AuthorizationPolicy.security.istio.io" in kinds) == (router == "istio")
        assert ({"Server", "AuthorizationPolicy.policy.linkerd.io", "MeshTLSAuthentication"} <= kinds) == (
            router == "linkerd")
        assert "NetworkPolicy" in kinds
        objects = cluster.observed()
        assert reaches(objects, APPS) and not reaches(objects, STRANGER)

