"""The desired state of one LLMDeployment: validate, decide, render.

`desire(inputs, templates)` is pure. `DesiredInputs` holds everything it reads besides the
template set, and nothing else: the parent's identity and metadata, its spec as written, what
the observed Deployments can serve, the hook's child settings. A cache that keys on the
template set's serial and the inputs' digest (see `hooks.web.cache`) therefore never serves
a stale answer. Its result is what `sync` is given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hooks.api.spec import LLMDeploymentSpec
from hooks.api.validation import validate_resource
from hooks.canonical import digest, dumps
from hooks.contract.lastapplied import Fingerprint
from hooks.contract.observed import RESOLVED_ANNOTATION
from hooks.contract.request import SyncRequest
from hooks.core.children import render_children
from hooks.core.naming import Names, Track
from hooks.core.plans import Plan, TrackPlan
from hooks.core.registry import (
    Pin,
    Reference,
    Resolution,
    pin_annotation,
    pins,
    pins_running,
    reference_of,
    references,
)
from hooks.core.revision import labelled, pod_template, revision_of
from hooks.core.strategy import RolloutPolicy, RolloutRender
from hooks.core.tracks import TrackSpec, track_specs
from hooks.core.traffic import Availability, TrafficSplit, canary_serving, replica_split, split_in_force
from hooks.core.view import build_view
from hooks.errors import SpecError
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings

JSON = dict[str, Any]


@dataclass(frozen=True)
class DesiredInputs:
    """Everything the children depend on."""

    name: str
    namespace: str
    controller_uid: str  # "" unless Metacontroller selects children by controller-uid
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: Any  # as written: validation is part of the step
    availability: Availability
    settings: ChildSettings
    rollout: RolloutRender | None = None  # what the Canary strategy decided this sync
    pins: dict[str, Pin] = field(default_factory=dict)  # registry references: the version each runs

    def digest(self) -> bytes | None:
        """A digest of every field (orjson encodes dataclasses field by field); None when the
        spec holds what JSON cannot encode."""
        try:
            return digest(dumps(self))
        except TypeError:
            return None


@dataclass(frozen=True)
class Desired:
    outcome: Literal["ok", "invalid", "paused", "unresolved"]  # unresolved: a registry reference has no version yet
    spec_errors: tuple[str, ...] = ()
    children: Sequence[JSON] = ()  # a tuple, or from the cache a CanonicalArray
    plan: Plan | None = None  # with outcome ok
    revision: str | None = None  # of the pod template the spec renders for the stable
    policy: RolloutPolicy | None = None  # with the Canary strategy


def desired_inputs(request: SyncRequest, settings: ChildSettings, rollout: RolloutRender | None = None,
                   resolutions: Mapping[str, Resolution] | None = None) -> DesiredInputs:
    """The inputs of `request`'s desired state, with the registry's `resolutions` (a fact)."""
    parent = request.parent
    names = Names(parent.name, parent.namespace)
    running = pins_running(request.observed, names)
    return DesiredInputs(
        name=parent.name,
        namespace=parent.namespace,
        controller_uid=parent.uid if request.generate_selector else "",
        labels=parent.labels,
        annotations=parent.annotations,
        spec=parent.spec,
        availability=Availability(request.observed.available(names.deployment("stable")),
                                  request.observed.available(names.deployment("canary"))),
        settings=settings,
        rollout=rollout,
        pins=pins(references(parent.spec), resolutions or {}, running),
    )


def desire(inputs: DesiredInputs, templates: TemplateSet) -> Desired:
    """Validate, decide and render; TemplateError propagates (the hook must not answer)."""
    try:
        spec = validate_resource(inputs.name, inputs.spec)
    except SpecError as e:
        return Desired("invalid", spec_errors=tuple(e.errors))
    if spec.paused:
        return Desired("paused")
    unknown = [e for e in (router_missing(spec, inputs.settings), _unknown_provider(spec, inputs.settings)) if e]
    if unknown:
        return Desired("invalid", spec_errors=tuple(unknown))
    names = Names(inputs.name, inputs.namespace, inputs.controller_uid)
    policy = RolloutPolicy.of(spec)
    rollout = inputs.rollout if policy is not None else None
    written = track_specs(spec)
    if any(_reference(t) is not None and t.model.uri not in inputs.pins for t in written):
        return Desired("unresolved")  # the sync says why, from the registry's answers
    tracks = [_pinned(t, inputs.pins) for t in written]
    if rollout is None:
        traffic = split_in_force(spec, inputs.availability)
        ab_serving = canary_serving(spec, inputs.availability)
    else:  # the Canary strategy's canary: the spec's own settings, as the track canary
        stable = tracks[0]
        tracks = [stable, TrackSpec("canary", stable.model, stable.engine, stable.resources, rollout.canary_replicas)]
        router = spec.traffic.router_in_use
        traffic = (TrafficSplit(router, 100 - rollout.canary_weight, rollout.canary_weight) if router != "none"
                   else replica_split(inputs.availability.stable, inputs.availability.canary))
        ab_serving = False
    view = build_view(spec, tracks, traffic, ab_serving, names, inputs.labels, inputs.annotations, inputs.settings)
    children = render_children(view, templates)
    template = pod_template(children[0])
    assert template is not None  # render_children checked the Deployment's pod labels
    revision = revision_of(template)
    plans = []
    for i, track in enumerate(view.tracks):  # the Deployments come first, one per track
        if policy is not None:
            children[i] = _revised(children[i], track.track, revision, rollout)
        kept = rollout is not None and rollout.stable_template is not None and track.track == "stable"
        source = written[0] if policy is not None else written[i]  # the Canary strategy's canary is the spec's
        model: str | None = _written(source)
        pin = inputs.pins.get(source.model.uri)
        if kept and rollout is not None:
            model, pin = rollout.stable_model, rollout.stable_pin
        if pin is not None:
            children[i] = _pinned_on(children[i], pin)
        plans.append(TrackPlan(track.track, track.deployment, model, children[i]["spec"].get("replicas"),
                               Fingerprint.of(children[i]), spec.startup_timeout_seconds, pin))
    return Desired("ok", children=tuple(children), plan=Plan(tuple(plans), view.url, traffic), revision=revision,
                   policy=policy)


def _reference(track: TrackSpec) -> Reference | None:
    return reference_of(track.model.uri, track.model.revision)


def _pinned(track: TrackSpec, pinned: Mapping[str, Pin]) -> TrackSpec:
    """The track with its registry reference replaced by the version it runs."""
    reference = _reference(track)
    if reference is None:
        return track
    model = track.model.model_copy(update={"uri": reference.pinned(pinned[track.model.uri].version)})
    return dataclasses.replace(track, model=model)


def _pinned_on(child: JSON, pin: Pin) -> JSON:
    """The Deployment, annotated with the registry version its pods run (its metadata, not its
    pod template: no pod restarts for it)."""
    metadata = child["metadata"]
    annotations = {**(metadata.get("annotations") or {}), RESOLVED_ANNOTATION: pin_annotation(pin)}
    return {**child, "metadata": {**metadata, "annotations": annotations}}


def _written(track: TrackSpec) -> str:
    """The track's model as the spec writes it, as the status reports it: uri[@revision]."""
    model = track.model
    return f"{model.uri}@{model.revision}" if model.revision else model.uri


def router_missing(spec: LLMDeploymentSpec, settings: ChildSettings) -> str | None:
    """A router (or an exposure) whose child types this install does not declare: answering
    with one would make Metacontroller fail, so the spec is refused and its children kept."""
    installed = ", ".join(settings.routers) or "none"
    router = spec.traffic.router_in_use
    if router != "none" and router not in settings.routers:
        unset = " (traffic.router unset means istio)" if spec.traffic.router is None else ""
        return (f"spec.traffic.router: router {router}{unset} is not installed with this hook (installed: "
                f"{installed}; LLMDEPLOY_ROUTERS and the CompositeController's child types say which): set "
                f"traffic.router to {' or '.join((*settings.routers, 'none'))}")
    if spec.expose is not None and spec.expose.via == "gateway" and not settings.http_routes:
        return (f"spec.expose.via: gateway needs Gateway API HTTPRoutes, which this install does not declare "
                f"(installed routers: {installed}; install the gateway-api or linkerd part)")
    return None


def _unknown_provider(spec: LLMDeploymentSpec, settings: ChildSettings) -> str | None:
    """The one rule only the hook can check: the analysis names a Prometheus it knows."""
    analysis = spec.rollout.analysis
    if analysis is None or spec.rollout.strategy != "Canary" or analysis.provider in settings.analysis_providers:
        return None
    known = ", ".join(settings.analysis_providers) or "none: set LLMDEPLOY_PROMETHEUS_URL"
    return (f"spec.rollout.analysis.provider: {analysis.provider!r} is not a Prometheus this hook is configured "
            f"with (configured: {known})")


def _revised(child: JSON, track: Track, revision: str, rollout: RolloutRender | None) -> JSON:
    """A Deployment of the Canary strategy with its revision label: the stable's pod template
    as last applied while it is kept, the canary's labelled with the revision it tries. (Only
    this strategy labels: a label added to every resource would restart every model pod on an
    upgrade of the hook; switching a resource to Canary restarts its pods once instead.)"""
    if rollout is not None and track == "stable" and rollout.stable_template is not None:
        return {**child, "spec": {**child["spec"], "template": rollout.stable_template}}
    return labelled(child, rollout.revision if rollout is not None and track == "canary" else revision)
