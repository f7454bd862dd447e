"""The template contract: every value a template places, decided here, as plain data.

`build_view` turns a validated spec, the effective settings of each track and the traffic in
force into frozen dataclasses of strings, numbers, tuples and dicts: no spec object and no
method ever reaches a template (every method there is an attack surface, and every spec field
a template reads is a contract a rename breaks). docs/templates.md documents each field; a
test holds the two together. Called by `desired`; pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hooks.api.quantity import canonical_quantity
from hooks.api.spec import (
    HTTP_ROUTE_ROUTERS,
    EngineType,
    EnvVar,
    HTTPMatch,
    LLMDeploymentSpec,
    Metric,
    Pod,
    Resources,
    StringMatch,
)
from hooks.core.engines import GPU_UTILIZATION_METRIC, PROFILES, EngineArgs, tracing
from hooks.core.naming import PORT_NAME, Names, Track
from hooks.core.sources import MODEL_CACHE_PATH, locate
from hooks.core.tracks import TrackSpec
from hooks.core.traffic import TrafficSplit
from hooks.settings import ChildSettings

STARTUP_PROBE_PERIOD_SECONDS = 10
PROBE_TIMEOUT_SECONDS = 5
PROGRESS_DEADLINE_MARGIN_SECONDS = 600  # the Deployment gives up only after the probe has
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

JSON = dict[str, Any]


@dataclass(frozen=True)
class ProbeView:
    path: str
    port: str  # the container port's name
    period_seconds: int
    timeout_seconds: int
    failure_threshold: int


@dataclass(frozen=True)
class ProbesView:
    startup: ProbeView  # allows the whole startupTimeoutSeconds for download and load
    readiness: ProbeView
    liveness: ProbeView


@dataclass(frozen=True)
class ResourcesView:
    requests: dict[str, str]  # canonical quantities, GPUs included
    limits: dict[str, str]


@dataclass(frozen=True)
class DownloadView:
    """An init container that fetches the model into the cache before the engine starts."""

    image: str
    command: tuple[str, ...]
    resources: ResourcesView
    env: tuple[JSON, ...]  # HOME on a writable emptyDir: the cloud CLIs keep their config there


@dataclass(frozen=True)
class SourceView:
    """How the model reaches the engine: kind hub (the engine loads it), download (init
    container into the cache), pvc (a claim mounted read-only) or oci (an image volume)."""

    kind: str
    mount_path: str  # where pvc and oci sources are mounted; "" otherwise
    claim_name: str
    image_reference: str
    download: DownloadView | None


@dataclass(frozen=True)
class CacheView:
    """The model cache volume: an emptyDir (size limit or none) or a claim."""

    mount_path: str
    size: str | None
    claim_name: str | None


@dataclass(frozen=True)
class PodView:
    service_account_name: str  # "" for the namespace's default
    priority_class_name: str
    image_pull_secrets: tuple[str, ...]
    node_selector: dict[str, str]
    tolerations: tuple[JSON, ...]
    affinity: JSON
    termination_grace_period_seconds: int
    security_context: JSON  # pod level: non-root, seccomp RuntimeDefault, with the spec's overrides
    automount_service_account_token: bool


@dataclass(frozen=True)
class RollingUpdateView:
    max_surge: int | str
    max_unavailable: int | str


@dataclass(frozen=True)
class TrackView:
    """One Deployment (stable or canary) with its effective settings."""

    track: Track
    deployment: str
    labels: dict[str, str]
    selector: dict[str, str]  # fixed forever: a Deployment's selector is immutable
    replicas: int | None  # None under an HPA: then do not write replicas
    progress_deadline_seconds: int
    rolling_update: RollingUpdateView
    pod_labels: dict[str, str]
    pod_annotations: dict[str, str]
    pod: PodView
    model: str  # uri[@revision] the pods serve (a registry alias pinned to its version)
    image: str
    command: tuple[str, ...]  # empty: the image's entrypoint
    args: tuple[str, ...]
    env: tuple[JSON, ...]
    credentials_secret: str | None
    port: int
    port_name: str
    probes: ProbesView
    resources: ResourcesView
    source: SourceView
    cache: CacheView
    container_security_context: JSON  # every container: no privilege escalation, no capabilities, read-only root
    writable: tuple[JSON, ...]  # emptyDir mounts a read-only root needs: name, mount_path


@dataclass(frozen=True)
class ServiceView:
    name: str
    selector: dict[str, str]  # both tracks
    port: int
    port_name: str
    target_port: str  # the engine container's port name


@dataclass(frozen=True)
class MetricView:
    """One HPA metric: kind is Pods, Resource or External."""

    kind: str
    name: str
    target: str | int  # averageValue quantity, or averageUtilization percent for Resource
    selector: JSON | None


@dataclass(frozen=True)
class AutoscalerView:
    name: str
    target: str  # the stable Deployment
    min_replicas: int
    max_replicas: int
    metrics: tuple[MetricView, ...]
    scale_down_stabilization_seconds: int


@dataclass(frozen=True)
class DisruptionBudgetView:
    name: str
    max_unavailable: int | str
    selector: dict[str, str]  # the stable Deployment's


@dataclass(frozen=True)
class SubsetView:
    name: str
    labels: dict[str, str]


@dataclass(frozen=True)
class DestinationView:
    subset: str
    weight: int


@dataclass(frozen=True)
class MirrorView:
    subset: str
    percent: int


@dataclass(frozen=True)
class RouteView:
    name: str
    match: tuple[JSON, ...]  # Istio HTTPMatchRequests; empty: every request
    destinations: tuple[DestinationView, ...]  # weights sum to 100
    mirror: MirrorView | None


@dataclass(frozen=True)
class RetriesView:
    attempts: int
    per_try_timeout: str | None  # None with no retries (Istio refuses them then)
    retry_on: str | None


@dataclass(frozen=True)
class RoutingView:
    """Istio routing, with the weights in force (the canary's only once it can serve)."""

    api_version: str
    destination_rule: str
    virtual_service: str
    host: str
    hosts: tuple[str, ...]
    gateways: tuple[str, ...]
    load_balancer: str
    subsets: tuple[SubsetView, ...]
    routes: tuple[RouteView, ...]  # A/B matches first, the weighted default route last
    timeout: str
    retries: RetriesView


@dataclass(frozen=True)
class BackendView:
    service: str
    port: int
    weight: int  # a proportion of the rule's traffic; for a mirror, the percent mirrored


@dataclass(frozen=True)
class RouteRuleView:
    matches: tuple[JSON, ...]  # Gateway API HTTPRouteMatches (path always written)
    backends: tuple[BackendView, ...]  # a weight-0 backend is left out
    mirror: BackendView | None  # RequestMirror (not with Linkerd, which refuses it)


@dataclass(frozen=True)
class ParentView:
    """What an HTTPRoute attaches to: the Service (GAMMA, inside the mesh) or a Gateway."""

    group: str  # "" for a Service
    kind: str
    name: str
    namespace: str | None
    port: int | None
    section_name: str | None


@dataclass(frozen=True)
class HTTPRouteView:
    """A Gateway API HTTPRoute: the mesh route `N` on the Service, or `N-external` on a Gateway."""

    api_version: str
    name: str
    annotations: dict[str, str]  # Linkerd's retries and timeout; the user's on N-external
    parent: ParentView
    hostnames: tuple[str, ...]  # empty on the mesh route
    rules: tuple[RouteRuleView, ...]  # the canary's matches first (more specific), then the default rule
    timeout: str


@dataclass(frozen=True)
class IngressView:
    name: str
    class_name: str | None
    host: str
    tls_secret: str | None
    annotations: dict[str, str]  # streaming defaults for ingress-nginx, then the user's
    service: str
    port_name: str


@dataclass(frozen=True)
class PeersView:
    """Who a NetworkPolicy rule admits: these namespaces, on these ports."""

    namespaces: tuple[str, ...]
    ports: tuple[int | str, ...]  # numbers, or the engine port's name


@dataclass(frozen=True)
class NetworkPolicyView:
    name: str
    selector: dict[str, str]  # both tracks' pods
    callers: PeersView | None  # the listed namespaces and those of the listed identities and of the exposure path
    scrapers: PeersView  # the Prometheus scraper, on the metrics ports (the mesh's too)


@dataclass(frozen=True)
class IstioAccessView:
    """PeerAuthentication and AuthorizationPolicy `N` (security.istio.io)."""

    api_version: str
    name: str
    selector: dict[str, str]
    mtls: str  # STRICT or PERMISSIVE
    principals: tuple[str, ...]  # <trust domain>/ns/<namespace>/sa/<name>
    namespaces: tuple[str, ...]  # listed and exposure path: every request
    scrapers: tuple[str, ...]  # the Prometheus namespaces: GET of the metrics paths only
    metrics_paths: tuple[str, ...]
    plaintext: bool  # PERMISSIVE: callers without a mesh identity are admitted too


@dataclass(frozen=True)
class LinkerdAccessView:
    """Server, AuthorizationPolicy and MeshTLSAuthentication `N` (policy.linkerd.io)."""

    name: str
    selector: dict[str, str]
    port_name: str
    access_policy: str  # the Server's default for what the policy does not admit: deny, or audit (PERMISSIVE)
    identity_refs: tuple[JSON, ...]  # ServiceAccount (name, namespace) and Namespace (name) references


@dataclass(frozen=True)
class AccessView:
    """`spec.access`: a NetworkPolicy always, and the router's mesh policies."""

    network_policy: NetworkPolicyView
    istio: IstioAccessView | None  # router istio
    linkerd: LinkerdAccessView | None  # router linkerd


@dataclass(frozen=True)
class TrafficView:
    router: str  # istio, gateway-api, linkerd or none
    stable: int  # percent in force
    canary: int


@dataclass(frozen=True)
class View:
    """Everything the templates see."""

    name: str
    namespace: str
    parent_labels: dict[str, str]
    parent_annotations: dict[str, str]
    labels: dict[str, str]  # of children that belong to no track (extra children too)
    common_labels: dict[str, str]  # on every child and pod, without controller-uid: selectors
    url: str
    tracks: tuple[TrackView, ...]  # stable, then canary when there is one
    service: ServiceView
    autoscaler: AutoscalerView | None
    disruption_budget: DisruptionBudgetView | None
    routing: RoutingView | None  # Istio's
    track_services: tuple[ServiceView, ...]  # one per track, for HTTPRoute backends
    http_routes: tuple[HTTPRouteView, ...]  # the mesh route and/or the external one
    ingress: IngressView | None
    access: AccessView | None
    traffic: TrafficView


def build_view(spec: LLMDeploymentSpec, tracks: Sequence[TrackSpec], traffic: TrafficSplit, canary_serving: bool,
               names: Names, parent_labels: dict[str, str], parent_annotations: dict[str, str],
               settings: ChildSettings) -> View:
    router = spec.traffic.router_in_use
    split_by_route = router in HTTP_ROUTE_ROUTERS or (
        router != "none" and spec.expose is not None and spec.expose.via == "gateway")
    return View(
        name=names.parent,
        namespace=names.namespace,
        parent_labels=dict(parent_labels),
        parent_annotations=dict(parent_annotations),
        labels=names.child_labels(),
        common_labels=names.common_labels(),
        url=f"http://{names.host}:{spec.engine.port}",
        tracks=tuple(_track_view(t, spec, names, settings) for t in tracks),
        service=ServiceView(names.service, names.service_selector(), spec.engine.port, PORT_NAME, PORT_NAME),
        autoscaler=_autoscaler(spec, names),
        disruption_budget=DisruptionBudgetView(names.disruption_budget, spec.disruption_budget.max_unavailable,
                                               names.selector("stable")) if spec.disruption_budget else None,
        routing=_routing(spec, tuple(t.track for t in tracks), names, traffic, canary_serving, settings)
        if router == "istio" else None,
        track_services=tuple(ServiceView(names.track_service(t.track), names.selector(t.track), spec.engine.port,
                                         PORT_NAME, PORT_NAME) for t in tracks) if split_by_route else (),
        http_routes=_http_routes(spec, tuple(t.track for t in tracks), names, traffic, canary_serving, settings),
        ingress=_ingress(spec, names) if spec.expose is not None and spec.expose.via == "ingress" else None,
        access=_access(spec, tuple(t.engine.type for t in tracks), names, settings),
        traffic=TrafficView(traffic.router, traffic.stable, traffic.canary),
    )


def _track_view(t: TrackSpec, spec: LLMDeploymentSpec, names: Names, settings: ChildSettings) -> TrackView:
    model, engine, resources = t.model, t.engine, t.resources
    profile = PROFILES[engine.type]
    source = locate(model.uri, model.revision, settings.downloader_images)
    args = profile.build_args(EngineArgs(
        model=source.engine_model,
        revision=model.revision if source.pass_revision else None,
        served_name=model.served_name or names.parent,
        tensor_parallel_size=engine.tensor_parallel_size or max(resources.gpu.count, 1),
        quantization=model.quantization,
        max_model_len=engine.max_model_len,
        port=engine.port,
    ))
    pod = spec.pod
    trace_args, trace_env = _tracing(spec, engine.type, names.deployment(t.track))
    return TrackView(
        track=t.track,
        deployment=names.deployment(t.track),
        labels=names.deployment_labels(t.track),
        selector=names.selector(t.track),
        replicas=t.replicas,
        progress_deadline_seconds=spec.startup_timeout_seconds + PROGRESS_DEADLINE_MARGIN_SECONDS,
        rolling_update=RollingUpdateView(spec.rollout.max_surge, spec.rollout.max_unavailable),
        pod_labels={**pod.labels, **names.pod_labels(t.track)},
        pod_annotations={
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(profile.metrics_port or engine.port),
            "prometheus.io/path": profile.metrics_path,
            **pod.annotations,
        },
        pod=PodView(
            service_account_name=pod.service_account_name,
            priority_class_name=pod.priority_class_name,
            image_pull_secrets=tuple(s.name for s in pod.image_pull_secrets),
            node_selector=_node_selector(spec, resources),
            tolerations=_tolerations(spec, resources),
            affinity=pod.affinity.model_dump(exclude_none=True),
            termination_grace_period_seconds=spec.traffic.timeout_seconds,
            security_context=_pod_security_context(pod),
            automount_service_account_token=pod.automount_service_account_token,
        ),
        model=f"{model.uri}@{model.revision}" if model.revision else model.uri,
        image=engine.image or settings.engine_images[engine.type],
        command=profile.command,
        args=(*args, *trace_args, *engine.args),
        env=_env(engine.env, trace_env),
        credentials_secret=model.credentials_secret,
        port=engine.port,
        port_name=PORT_NAME,
        probes=ProbesView(
            startup=ProbeView(profile.health_path, PORT_NAME, STARTUP_PROBE_PERIOD_SECONDS, PROBE_TIMEOUT_SECONDS,
                              math.ceil(spec.startup_timeout_seconds / STARTUP_PROBE_PERIOD_SECONDS)),
            readiness=ProbeView(profile.health_path, PORT_NAME, 5, PROBE_TIMEOUT_SECONDS, 3),
            liveness=ProbeView(profile.health_path, PORT_NAME, 10, PROBE_TIMEOUT_SECONDS, 6),
        ),
        resources=ResourcesView(_quantities(resources, cpu=True), _quantities(resources, cpu=False)),
        source=SourceView(
            kind=source.kind,
            mount_path=source.mount_path,
            claim_name=source.claim_name,
            image_reference=source.image_reference,
            download=DownloadView(source.download.image, source.download.command,
                                  ResourcesView(dict(DOWNLOAD_REQUESTS), dict(DOWNLOAD_LIMITS)),
                                  ({"name": "HOME", "value": HOME_PATH},))
            if source.download else None,
        ),
        cache=CacheView(MODEL_CACHE_PATH,
                        canonical_quantity(model.cache.size) if model.cache.size is not None else None,
                        model.cache.claim_name),
        container_security_context=CONTAINER_SECURITY_CONTEXT,
        writable=tuple({"name": name, "mount_path": path} for name, path in WRITABLE_PATHS),
    )


# Every engine's default image runs as this user once HOME and /tmp are writable; the group
# owns the volumes, so a shared cache claim is writable too. (README: "Security".)
ENGINE_USER = 10001  # above 10000: no clash with a host user (checkov CKV_K8S_40)
CONTAINER_SECURITY_CONTEXT: JSON = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True}
HOME_PATH = "/home/engine"
WRITABLE_PATHS = (("tmp", "/tmp"), ("home", HOME_PATH))  # emptyDirs: compile caches, JIT kernels, sockets
DOWNLOAD_REQUESTS = {"cpu": "250m", "memory": "512Mi"}  # bounded: a download neither starves the node
DOWNLOAD_LIMITS = {"cpu": "2", "memory": "4Gi"}  # nor is the first evicted


def _pod_security_context(pod: Pod) -> JSON:
    """The hardened defaults, with the spec's overrides laid over them."""
    overrides = pod.security_context
    user = overrides.run_as_user if overrides.run_as_user is not None else ENGINE_USER
    out: JSON = {
        "runAsNonRoot": overrides.run_as_non_root if overrides.run_as_non_root is not None else user != 0,
        "runAsUser": user,
        "runAsGroup": overrides.run_as_group if overrides.run_as_group is not None else ENGINE_USER,
        "fsGroup": overrides.fs_group if overrides.fs_group is not None else ENGINE_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if overrides.supplemental_groups:
        out["supplementalGroups"] = list(overrides.supplemental_groups)
    return out


def _tracing(spec: LLMDeploymentSpec, engine: EngineType, service: str) -> tuple[list[str], list[tuple[str, str]]]:
    found = spec.observability.tracing
    return tracing(engine, found.endpoint.rstrip("/"), service, found.sample_ratio) if found else ([], [])


def _env(extra: Sequence[EnvVar], ours: Sequence[tuple[str, str]] = ()) -> tuple[JSON, ...]:
    base = {"HF_HOME": {"name": "HF_HOME", "value": MODEL_CACHE_PATH}, "HOME": {"name": "HOME", "value": HOME_PATH}}
    base |= {name: {"name": name, "value": value} for name, value in ours}
    for var in extra:
        base[var.name] = var.model_dump(exclude_none=True)
    return tuple(base.values())


def _quantities(resources: Resources, cpu: bool) -> dict[str, str]:
    # Memory is requested and limited; CPU only requested: throttling a tokenizer or a
    # scheduler loop costs latency and saves nothing.
    out: dict[str, str] = {"cpu": canonical_quantity(resources.cpu)} if cpu else {}
    out["memory"] = canonical_quantity(resources.memory)
    if resources.gpu.count > 0:
        out[resources.gpu.resource_name] = str(resources.gpu.count)
    return out


def _node_selector(spec: LLMDeploymentSpec, resources: Resources) -> dict[str, str]:
    selector = dict(spec.pod.node_selector)
    if resources.gpu.count > 0 and resources.gpu.product:
        selector[GPU_PRODUCT_LABEL] = resources.gpu.product
    return selector


def _tolerations(spec: LLMDeploymentSpec, resources: Resources) -> tuple[JSON, ...]:
    tolerations: list[JSON] = []
    if resources.gpu.count > 0:
        tolerations.append({"key": resources.gpu.resource_name, "operator": "Exists", "effect": "NoSchedule"})
    for toleration in spec.pod.tolerations:
        entry = toleration.model_dump(exclude_none=True)
        if entry not in tolerations:
            tolerations.append(entry)
    return tuple(tolerations)


def _autoscaler(spec: LLMDeploymentSpec, names: Names) -> AutoscalerView | None:
    scaling = spec.autoscaling
    if scaling is None:
        return None
    queue_metric = PROFILES[spec.engine.type].queue_metric
    return AutoscalerView(
        name=names.autoscaler,
        target=names.deployment("stable"),
        min_replicas=scaling.min_replicas,
        max_replicas=scaling.max_replicas,
        metrics=tuple(_metric(m, queue_metric) for m in scaling.metrics),
        scale_down_stabilization_seconds=scaling.scale_down_stabilization_seconds,
    )


def _metric(metric: Metric, queue_metric: str) -> MetricView:
    value = canonical_quantity(metric.target)
    if metric.type == "queue-length":
        return MetricView("Pods", queue_metric, value, None)
    if metric.type == "gpu-utilization":
        return MetricView("Pods", GPU_UTILIZATION_METRIC, value, None)
    if metric.type in ("cpu", "memory"):
        return MetricView("Resource", metric.type, metric.target, None)
    assert metric.name is not None  # the CEL rule on Metric guarantees it
    kind = "Pods" if metric.type == "pods" else "External"
    selector = metric.selector.model_dump(exclude_none=True) if metric.selector else None
    return MetricView(kind, metric.name, value, selector)


def _routing(spec: LLMDeploymentSpec, tracks: tuple[Track, ...], names: Names, traffic: TrafficSplit,
             canary_serving: bool, settings: ChildSettings) -> RoutingView:
    """Routes in order: one per A/B match to the canary, then the weighted default route;
    A/B matches and mirroring (spec.canary's) start only once the canary can serve."""
    canary = spec.canary
    weights = {"stable": traffic.stable, "canary": traffic.canary}
    routes: list[RouteView] = []
    mirror: MirrorView | None = None
    if canary is not None and canary_serving:
        to_canary = (DestinationView("canary", 100),)
        routes += [RouteView(f"canary-match-{i}", (m.model_dump(exclude_none=True),), to_canary, None)
                   for i, m in enumerate(canary.match)]
        mirror = MirrorView("canary", canary.mirror_percent) if canary.mirror else None
    routes.append(RouteView("default", (), tuple(DestinationView(t, weights[t]) for t in tracks), mirror))
    retries = spec.traffic.retries
    expose = spec.expose if spec.expose is not None and spec.expose.via == "istio" else None
    expose_hosts = [expose.host] if expose is not None else []
    gateways = list(spec.traffic.gateways)
    if expose is not None and expose.gateway is not None:
        gateways.append(f"{expose.gateway.namespace or names.namespace}/{expose.gateway.name}")
    return RoutingView(
        api_version=settings.istio_api_version,
        destination_rule=names.routing,
        virtual_service=names.routing,
        host=names.host,
        hosts=tuple(dict.fromkeys([names.service, *spec.traffic.hosts, *expose_hosts])),
        gateways=tuple(dict.fromkeys([*gateways, "mesh"])) if gateways else (),
        load_balancer=spec.traffic.load_balancer,
        subsets=tuple(SubsetView(t, names.subset_labels(t)) for t in tracks),
        routes=tuple(routes),
        timeout=f"{spec.traffic.timeout_seconds}s",
        retries=RetriesView(retries.attempts, f"{retries.per_try_timeout_seconds}s" if retries.attempts else None,
                            retries.retry_on if retries.attempts else None),
    )


# ingress-nginx buffers responses and gives up after 60 s by default: a streamed generation
# needs neither. Other controllers ignore these; the README says what they need.
INGRESS_STREAMING_ANNOTATIONS = ("nginx.ingress.kubernetes.io/proxy-buffering", "nginx.ingress.kubernetes.io/"
                                 "proxy-request-buffering", "nginx.ingress.kubernetes.io/proxy-read-timeout",
                                 "nginx.ingress.kubernetes.io/proxy-send-timeout",
                                 "nginx.ingress.kubernetes.io/proxy-body-size")
INGRESS_BODY_SIZE = "32m"  # long prompts; ingress-nginx refuses more than 1m by default
# ingress-nginx sends to pod endpoints itself, past any mesh route; to the Service's address
# instead, a meshed controller's requests get the router's split and A/B matches.
INGRESS_SERVICE_UPSTREAM = "nginx.ingress.kubernetes.io/service-upstream"
GATEWAY_GROUP = "gateway.networking.k8s.io"
# Envoy retry conditions Linkerd has an HTTP status for; the others have no Linkerd equivalent.
_LINKERD_RETRIES = {"5xx": "5xx", "gateway-error": "gateway-error"}


def _ingress(spec: LLMDeploymentSpec, names: Names) -> IngressView:
    expose = spec.expose
    assert expose is not None
    timeout = str(spec.traffic.timeout_seconds)
    defaults = dict(zip(INGRESS_STREAMING_ANNOTATIONS, ("off", "off", timeout, timeout, INGRESS_BODY_SIZE),
                        strict=True))
    if spec.traffic.router_in_use != "none":
        defaults[INGRESS_SERVICE_UPSTREAM] = "true"
    return IngressView(names.ingress, expose.class_name, expose.host,
                       expose.tls.secret_name if expose.tls else None, {**defaults, **expose.annotations},
                       names.service, PORT_NAME)


def _http_routes(spec: LLMDeploymentSpec, tracks: tuple[Track, ...], names: Names, traffic: TrafficSplit,
                 canary_serving: bool, settings: ChildSettings) -> tuple[HTTPRouteView, ...]:
    """The mesh route `N` (routers gateway-api and linkerd) and the external route `N-external`
    (expose via gateway), with the same rules: the split in force, matches and mirroring once
    the canary serves."""
    router = spec.traffic.router_in_use
    expose = spec.expose
    if router not in HTTP_ROUTE_ROUTERS and (expose is None or expose.via != "gateway"):
        return ()
    timeout = f"{spec.traffic.timeout_seconds}s"
    port = spec.engine.port
    if router == "none":  # no split to make: the Service spreads requests itself
        rules: tuple[RouteRuleView, ...] = (RouteRuleView(_EVERY_REQUEST, (BackendView(names.service, port, 100),),
                                                          None),)
    else:
        rules = _route_rules(spec, tracks, names, traffic, canary_serving, mirror=router != "linkerd")
    routes = []
    if router in HTTP_ROUTE_ROUTERS:
        routes.append(HTTPRouteView(
            settings.gateway_api_version, names.routing,
            _linkerd_annotations(spec) if router == "linkerd" else {},
            ParentView("", "Service", names.service, None, port, None), (), rules, timeout))
    if expose is not None and expose.via == "gateway" and expose.gateway is not None:
        gateway = expose.gateway
        routes.append(HTTPRouteView(
            settings.gateway_api_version, names.external_route, dict(expose.annotations),
            ParentView(GATEWAY_GROUP, "Gateway", gateway.name, gateway.namespace, None, gateway.section_name),
            (expose.host,), rules, timeout))
    return tuple(routes)


_EVERY_REQUEST: tuple[JSON, ...] = ({"path": {"type": "PathPrefix", "value": "/"}},)


def _route_rules(spec: LLMDeploymentSpec, tracks: tuple[Track, ...], names: Names, traffic: TrafficSplit,
                 canary_serving: bool, mirror: bool) -> tuple[RouteRuleView, ...]:
    port = spec.engine.port
    canary = spec.canary
    rules = []
    mirrored: BackendView | None = None
    if canary is not None and canary_serving:
        if canary.match:
            rules.append(RouteRuleView(tuple(_route_match(m) for m in canary.match),
                                       (BackendView(names.track_service("canary"), port, 100),), None))
        if canary.mirror and mirror:
            mirrored = BackendView(names.track_service("canary"), port, canary.mirror_percent)
    weights = {"stable": traffic.stable, "canary": traffic.canary}
    backends = tuple(BackendView(names.track_service(t), port, weights[t]) for t in tracks if weights[t] > 0)
    rules.append(RouteRuleView(_EVERY_REQUEST, backends, mirrored))
    return tuple(rules)


def _route_match(match: HTTPMatch) -> JSON:
    """An A/B match as Gateway API writes it (the CRD refused what it cannot say)."""
    out: JSON = {}
    if match.uri is not None:
        kind, value = _string_match(match.uri, {"exact": "Exact", "prefix": "PathPrefix", "regex": "RegularExpression"})
        out["path"] = {"type": kind, "value": value}
    else:
        out["path"] = {"type": "PathPrefix", "value": "/"}
    for field_name, entries in (("headers", match.headers), ("queryParams", match.query_params)):
        if entries:
            out[field_name] = [dict(zip(("type", "value"), _string_match(m, _EXACT_OR_REGEX), strict=True), name=k)
                               for k, m in sorted(entries.items())]
    if match.method is not None and match.method.exact is not None:
        out["method"] = match.method.exact
    return out


_EXACT_OR_REGEX = {"exact": "Exact", "regex": "RegularExpression"}


def _string_match(match: StringMatch, types: dict[str, str]) -> tuple[str, str]:
    for key, kind in types.items():
        value = getattr(match, key)
        if value is not None:
            return kind, value
    raise AssertionError("the CRD rules allow no other match")


def _linkerd_annotations(spec: LLMDeploymentSpec) -> dict[str, str]:
    """Linkerd's retries and timeout, which it reads from route annotations."""
    traffic = spec.traffic
    out = {"timeout.linkerd.io/request": f"{traffic.timeout_seconds}s"}
    retries = traffic.retries
    codes = [_LINKERD_RETRIES.get(c, c) for c in retries.retry_on.split(",") if c in _LINKERD_RETRIES or c.isdigit()]
    if retries.attempts and codes:
        out["retry.linkerd.io/http"] = ",".join(dict.fromkeys(codes))
        out["retry.linkerd.io/limit"] = str(retries.attempts)
        out["retry.linkerd.io/timeout"] = f"{retries.per_try_timeout_seconds}s"
    return out


# Ports the mesh's own metrics are scraped on: Istio's merged metrics (the engine's included)
# and Envoy's; Linkerd's proxy admin port. Linkerd's inbound proxy port takes opaque connections.
ISTIO_METRICS_PORTS = (15020, 15090)
LINKERD_METRICS_PORTS = (4191,)
LINKERD_INBOUND_PORT = 4143
# Where an exposure's proxies usually run, when LLMDEPLOY_INGRESS_NAMESPACES is unset: the
# ingress defaults are ingress-nginx's; Gateway API implementations mostly run a Gateway's
# proxies beside it; Istio's ingress gateway runs in istio-system, or beside its Gateway.
DEFAULT_INGRESS_NAMESPACE = "ingress-nginx"
ISTIO_NAMESPACE = "istio-system"


def _exposure_namespaces(spec: LLMDeploymentSpec, namespace: str, settings: ChildSettings) -> tuple[str, ...]:
    """The namespaces the exposure path's proxies call the model from: of `expose`, and of
    the Istio Gateways in `traffic.gateways` (with router istio); none without either."""
    expose = spec.expose
    istio_gateways = [g for g in spec.traffic.gateways if g != "mesh"] if spec.traffic.router_in_use == "istio" else []
    if expose is None and not istio_gateways:
        return ()
    if settings.ingress_namespaces is not None:
        return settings.ingress_namespaces
    found = [ISTIO_NAMESPACE] if istio_gateways else []
    found += [g.rpartition("/")[0] or namespace for g in istio_gateways]
    if expose is not None and expose.via == "ingress":
        found.append(DEFAULT_INGRESS_NAMESPACE)
    elif expose is not None and expose.gateway is not None:
        found += [ISTIO_NAMESPACE] if expose.via == "istio" else []
        found.append(expose.gateway.namespace or namespace)
    return _unique(found)


def _access(spec: LLMDeploymentSpec, engines: tuple[EngineType, ...], names: Names,
            settings: ChildSettings) -> AccessView | None:
    access = spec.access
    if access is None:
        return None
    router = spec.traffic.router_in_use
    namespace = names.namespace
    accounts = tuple(dict.fromkeys(_account(c.service_account, namespace) for c in access.from_
                                   if c.service_account is not None))
    listed = tuple(c.namespace for c in access.from_ if c.namespace is not None)
    exposure = _exposure_namespaces(spec, namespace, settings)
    scrapers = _unique(settings.monitoring_namespaces)
    callers = _unique((*listed, *(ns for ns, _ in accounts), *exposure))
    profiles = [PROFILES[e] for e in engines]
    # The engine port for the scraper only where an engine serves its metrics there (not Triton).
    metrics_ports: list[int | str] = [PORT_NAME] if any(p.metrics_port is None for p in profiles) else []
    metrics_ports += sorted({p.metrics_port for p in profiles if p.metrics_port is not None})
    metrics_ports += ISTIO_METRICS_PORTS if router == "istio" else LINKERD_METRICS_PORTS if router == "linkerd" else ()
    caller_ports: tuple[int | str, ...] = (PORT_NAME, LINKERD_INBOUND_PORT) if router == "linkerd" else (PORT_NAME,)
    selector = names.service_selector()
    admitted = _unique((*listed, *exposure))  # the namespaces the mesh policies admit whole
    return AccessView(
        network_policy=NetworkPolicyView(names.access, selector,
                                         PeersView(callers, caller_ports) if callers else None,
                                         PeersView(scrapers, tuple(metrics_ports))),
        istio=IstioAccessView(
            settings.istio_security_api_version, names.access, selector, access.mtls,
            tuple(f"{settings.trust_domain}/ns/{ns}/sa/{sa}" for ns, sa in accounts), admitted, scrapers,
            _unique([p.metrics_path for p in profiles]), plaintext=access.mtls == "PERMISSIVE")
        if router == "istio" else None,
        # Linkerd authorizes a Server's callers whole (paths need routes of its own, which
        # would also end its default authorization of probes): the scraper is one of them.
        linkerd=LinkerdAccessView(
            names.access, selector, PORT_NAME, "audit" if access.mtls == "PERMISSIVE" else "deny",
            (*({"kind": "ServiceAccount", "name": sa, "namespace": ns} for ns, sa in accounts),
             *({"kind": "Namespace", "name": ns} for ns in _unique((*admitted, *scrapers)))))
        if router == "linkerd" else None,
    )


def _account(reference: str, namespace: str) -> tuple[str, str]:
    """(namespace, name) of `<namespace>/<name>`, or of a bare name in the resource's namespace."""
    found, _, name = reference.rpartition("/")
    return found or namespace, name


def _unique(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(set(names)))
