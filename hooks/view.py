"""The view model: every decision about an LLMDeployment's children, made in Python.

`build_view` turns a validated spec (plus what is observed) into tracks with their effective
settings, names, labels, engine arguments, resources, autoscaling, and the effective traffic
split. Templates receive this and only lay it out. Called by `sync`; pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hooks.engines import GPU_UTILIZATION_METRIC, PROFILES, EngineArgs
from hooks.hookapi import KubeObject
from hooks.naming import Names, Track
from hooks.quantity import canonical_quantity
from hooks.settings import Settings
from hooks.sources import MODEL_CACHE_PATH, ModelLocation, locate
from hooks.spec import (
    Canary,
    Engine,
    EnvVar,
    LLMDeploymentSpec,
    Metric,
    ModelCache,
    ModelSource,
    Resources,
)

STARTUP_PROBE_PERIOD_SECONDS = 10
PROGRESS_DEADLINE_MARGIN_SECONDS = 600  # the Deployment gives up only after the probe has
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

JSON = dict[str, Any]


@dataclass(frozen=True)
class TrackView:
    """One Deployment (stable or canary) with its effective settings."""

    track: Track
    deployment: str
    labels: dict[str, str]
    pod_labels: dict[str, str]
    pod_annotations: dict[str, str]
    selector: dict[str, str]
    replicas: int | None  # None under an HPA: Kubernetes keeps whatever the HPA set
    model: str  # uri[@revision], as status reports it
    image: str
    command: list[str]
    args: list[str]
    env: list[JSON]
    credentials_secret: str | None
    port: int
    health_path: str
    source: ModelLocation
    cache_path: str
    cache_size: str | None
    cache_claim: str | None
    requests: dict[str, str]
    limits: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[JSON]
    startup_failure_threshold: int
    progress_deadline_seconds: int
    termination_grace_period_seconds: int


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
    target: str
    min_replicas: int
    max_replicas: int
    metrics: list[MetricView]
    scale_down_stabilization_seconds: int


@dataclass(frozen=True)
class RouteView:
    name: str
    match: list[JSON]
    weights: list[tuple[str, int]]  # (subset, weight)
    mirror_percent: int | None  # None: no mirroring


@dataclass(frozen=True)
class RoutingView:
    api_version: str
    host: str
    hosts: list[str]
    gateways: list[str]
    subsets: list[tuple[str, dict[str, str]]]
    routes: list[RouteView]
    timeout: str
    retries: JSON
    load_balancer: str


@dataclass(frozen=True)
class TrafficSplit:
    router: Literal["istio", "service"]
    stable: int
    canary: int


@dataclass(frozen=True)
class Availability:
    """The only thing the view reads from observed children: available replicas per track."""

    stable: int = 0
    canary: int = 0


def observed_availability(observed: Sequence[KubeObject], names: Names) -> Availability:
    return Availability(_available(observed, names.deployment("stable")),
                        _available(observed, names.deployment("canary")))


@dataclass(frozen=True)
class View:
    """Everything the templates see."""

    name: str
    namespace: str
    parent_labels: dict[str, str]
    parent_annotations: dict[str, str]
    spec: LLMDeploymentSpec
    names: Names
    labels: dict[str, str]  # of children that belong to no track
    tracks: list[TrackView]
    service_port: int
    autoscaler: AutoscalerView | None
    disruption_budget: JSON | None
    routing: RoutingView | None
    traffic: TrafficSplit

    @property
    def url(self) -> str:
        return f"http://{self.names.host}:{self.service_port}"


def build_view(
    spec: LLMDeploymentSpec, parent: KubeObject, names: Names, availability: Availability, settings: Settings
) -> View:
    stable = _track_view("stable", spec, spec.model, spec.engine, spec.resources, names, settings)
    tracks = [stable]
    if spec.canary is not None:
        c = spec.canary
        tracks.append(_track_view(
            "canary", spec, _merge(spec.model, c.model), _merge_engine(spec.engine, c),
            _merge_resources(spec.resources, c), names, settings, replicas=c.replicas,
        ))
    canary_serving = spec.canary is not None and availability.canary > 0
    traffic = _traffic(spec, availability, canary_serving)
    return View(
        name=names.parent,
        namespace=names.namespace,
        parent_labels=dict(parent.metadata.labels),
        parent_annotations=dict(parent.metadata.annotations),
        spec=spec,
        names=names,
        labels=names.child_labels(),
        tracks=tracks,
        service_port=spec.engine.port,
        autoscaler=_autoscaler(spec, names),
        disruption_budget=(
            {"maxUnavailable": spec.disruption_budget.max_unavailable} if spec.disruption_budget else None
        ),
        routing=_routing(spec, names, traffic, canary_serving, settings) if spec.traffic.istio else None,
        traffic=traffic,
    )


def _merge(base: ModelSource, override: Any) -> ModelSource:
    """`base` with every field `override` sets replaced."""
    return base.model_copy(update={k: v for k, v in override if v is not None})


def _merge_engine(base: Engine, canary: Canary) -> Engine:
    override = canary.engine
    merged = _merge(base, override)  # type: ignore[arg-type]
    if override.env is not None:
        by_name = {e.name: e for e in base.env} | {e.name: e for e in override.env}
        merged = merged.model_copy(update={"env": list(by_name.values())})
    return merged  # type: ignore[return-value]


def _merge_resources(base: Resources, canary: Canary) -> Resources:
    override = canary.resources
    gpu = _merge(base.gpu, override.gpu) if override.gpu else base.gpu  # type: ignore[arg-type]
    merged = base.model_copy(update={k: v for k, v in override if v is not None and k != "gpu"})
    return merged.model_copy(update={"gpu": gpu})


def _track_view(
    track: Track,
    spec: LLMDeploymentSpec,
    model: ModelSource,
    engine: Engine,
    resources: Resources,
    names: Names,
    settings: Settings,
    replicas: int | None = None,
) -> TrackView:
    profile = PROFILES[engine.type]
    gpus = resources.gpu.count
    source = locate(model.uri, model.revision, settings.downloader_images)
    args = profile.build_args(EngineArgs(
        model=source.engine_model,
        revision=model.revision if source.pass_revision else None,
        served_name=model.served_name or names.parent,
        tensor_parallel_size=engine.tensor_parallel_size or max(gpus, 1),
        quantization=model.quantization,
        max_model_len=engine.max_model_len,
        port=engine.port,
    ))
    if track == "stable":
        replicas = None if spec.autoscaling else spec.replicas
    return TrackView(
        track=track,
        deployment=names.deployment(track),
        labels=names.deployment_labels(track),
        pod_labels={**spec.pod.labels, **names.pod_labels(track)},
        pod_annotations={
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(profile.metrics_port or engine.port),
            "prometheus.io/path": profile.metrics_path,
            **spec.pod.annotations,
        },
        selector=names.selector(track),
        replicas=replicas,
        model=f"{model.uri}@{model.revision}" if model.revision else model.uri,
        image=engine.image or settings.engine_images[engine.type],
        command=list(profile.command),
        args=[*args, *engine.args],
        env=_env(engine.env),
        credentials_secret=model.credentials_secret,
        port=engine.port,
        health_path=profile.health_path,
        source=source,
        cache_path=MODEL_CACHE_PATH,
        cache_size=_cache_size(model.cache),
        cache_claim=model.cache.claim_name,
        requests=_resources(resources, memory=True, cpu=True),
        limits=_resources(resources, memory=True, cpu=False),
        node_selector=_node_selector(spec, resources),
        tolerations=_tolerations(spec, resources),
        startup_failure_threshold=math.ceil(spec.startup_timeout_seconds / STARTUP_PROBE_PERIOD_SECONDS),
        progress_deadline_seconds=spec.startup_timeout_seconds + PROGRESS_DEADLINE_MARGIN_SECONDS,
        termination_grace_period_seconds=spec.traffic.timeout_seconds,
    )


def _env(extra: Sequence[EnvVar]) -> list[JSON]:
    base = {"HF_HOME": {"name": "HF_HOME", "value": MODEL_CACHE_PATH}}
    for var in extra:
        base[var.name] = var.model_dump(exclude_none=True)
    return list(base.values())


def _cache_size(cache: ModelCache) -> str | None:
    return canonical_quantity(cache.size) if cache.size is not None else None


def _resources(resources: Resources, memory: bool, cpu: bool) -> dict[str, str]:
    # No CPU limit: throttling a tokenizer or a scheduler loop costs latency and saves nothing.
    out: dict[str, str] = {}
    if cpu:
        out["cpu"] = canonical_quantity(resources.cpu)
    if memory:
        out["memory"] = canonical_quantity(resources.memory)
    if resources.gpu.count > 0:
        out[resources.gpu.resource_name] = str(resources.gpu.count)
    return out


def _node_selector(spec: LLMDeploymentSpec, resources: Resources) -> dict[str, str]:
    selector = dict(spec.pod.node_selector)
    if resources.gpu.count > 0 and resources.gpu.product:
        selector[GPU_PRODUCT_LABEL] = resources.gpu.product
    return selector


def _tolerations(spec: LLMDeploymentSpec, resources: Resources) -> list[JSON]:
    tolerations: list[JSON] = []
    if resources.gpu.count > 0:
        tolerations.append({"key": resources.gpu.resource_name, "operator": "Exists", "effect": "NoSchedule"})
    for toleration in spec.pod.tolerations:
        entry = toleration.model_dump(exclude_none=True)
        if entry not in tolerations:
            tolerations.append(entry)
    return tolerations


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
        metrics=[_metric(m, queue_metric) for m in scaling.metrics],
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
    return MetricView(kind, metric.name, value, metric.selector)


def _available(observed: Sequence[KubeObject], name: str) -> int:
    for child in observed:
        if child.kind == "Deployment" and child.metadata.name == name:
            value = child.status_map.get("availableReplicas", 0)
            return value if isinstance(value, int) else 0
    return 0


def _traffic(spec: LLMDeploymentSpec, availability: Availability, canary_serving: bool) -> TrafficSplit:
    """The split that is actually in force: a canary gets traffic only once it can serve it."""
    if spec.canary is None:
        return TrafficSplit("istio" if spec.traffic.istio else "service", 100, 0)
    if spec.traffic.istio:
        weight = spec.canary.weight if canary_serving else 0
        return TrafficSplit("istio", 100 - weight, weight)
    return replica_split(availability.stable, availability.canary)


def replica_split(stable_available: int, canary_available: int) -> TrafficSplit:
    """Without Istio the Service spreads requests over ready pods: the split is their ratio."""
    total = stable_available + canary_available
    canary = round(100 * canary_available / total) if total else 0
    return TrafficSplit("service", 100 - canary, canary)


def _routing(
    spec: LLMDeploymentSpec, names: Names, traffic: TrafficSplit, canary_serving: bool, settings: Settings
) -> RoutingView:
    """Routes in order: one per A/B match to the canary, then the weighted default route;
    A/B matches and mirroring start only once the canary can serve."""
    canary = spec.canary
    subsets = [("stable", names.subset_labels("stable"))]
    routes: list[RouteView] = []
    weights = [("stable", traffic.stable)]
    mirror: int | None = None
    if canary is not None:
        subsets.append(("canary", names.subset_labels("canary")))
        weights.append(("canary", traffic.canary))
        if canary_serving:
            routes += [
                RouteView(f"canary-match-{i}", [m.model_dump(exclude_none=True)], [("canary", 100)], None)
                for i, m in enumerate(canary.match)
            ]
            mirror = canary.mirror_percent if canary.mirror else None
    routes.append(RouteView("default", [], weights, mirror))
    retries = spec.traffic.retries
    return RoutingView(
        api_version=settings.istio_api_version,
        host=names.host,
        hosts=list(dict.fromkeys([names.service, *spec.traffic.hosts])),
        gateways=list(dict.fromkeys([*spec.traffic.gateways, "mesh"])) if spec.traffic.gateways else [],
        subsets=subsets,
        routes=routes,
        timeout=f"{spec.traffic.timeout_seconds}s",
        retries={"attempts": retries.attempts, "perTryTimeout": f"{retries.per_try_timeout_seconds}s",
                 "retryOn": retries.retry_on},
        load_balancer=spec.traffic.load_balancer,
    )

