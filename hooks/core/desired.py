"""The desired state of one LLMDeployment: validate, decide, render.

`desire(inputs, templates)` is pure. `DesiredInputs` holds everything it reads besides the
template set, and nothing else: the parent's identity and metadata, its spec as written, what
the observed Deployments can serve, the hook's child settings. A cache that keys on the
template set's serial and the inputs' digest (see `hooks.web.cache`) therefore never serves
a stale answer. Its result is what `sync` is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hooks.api.validation import validate_resource
from hooks.canonical import digest, dumps
from hooks.contract.lastapplied import Fingerprint
from hooks.contract.request import SyncRequest
from hooks.core.children import render_children
from hooks.core.naming import Names
from hooks.core.plans import Plan, TrackPlan
from hooks.core.tracks import track_specs
from hooks.core.traffic import Availability, canary_serving, split_in_force
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

    def digest(self) -> bytes | None:
        """A digest of every field (orjson encodes dataclasses field by field); None when the
        spec holds what JSON cannot encode."""
        try:
            return digest(dumps(self))
        except TypeError:
            return None


@dataclass(frozen=True)
class Desired:
    outcome: Literal["ok", "invalid", "paused"]
    spec_errors: tuple[str, ...] = ()
    children: tuple[JSON, ...] = ()
    plan: Plan | None = None  # with outcome ok


def desired_inputs(request: SyncRequest, settings: ChildSettings) -> DesiredInputs:
    parent = request.parent
    names = Names(parent.name, parent.namespace)
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
    )


def desire(inputs: DesiredInputs, templates: TemplateSet) -> Desired:
    """Validate, decide and render; TemplateError propagates (the hook must not answer)."""
    try:
        spec = validate_resource(inputs.name, inputs.spec)
    except SpecError as e:
        return Desired("invalid", spec_errors=tuple(e.errors))
    if spec.paused:
        return Desired("paused")
    names = Names(inputs.name, inputs.namespace, inputs.controller_uid)
    tracks = track_specs(spec)
    traffic = split_in_force(spec, inputs.availability)
    view = build_view(spec, tracks, traffic, canary_serving(spec, inputs.availability), names, inputs.labels,
                      inputs.annotations, inputs.settings)
    children = render_children(view, templates)
    deployments = {c["metadata"]["name"]: c for c in children if c["kind"] == "Deployment"}
    plans = tuple(
        TrackPlan(t.track, t.deployment, t.model, deployments[t.deployment]["spec"].get("replicas"),
                  Fingerprint.of(deployments[t.deployment]), spec.startup_timeout_seconds)
        for t in view.tracks
    )
    return Desired("ok", children=tuple(children), plan=Plan(plans, view.url, traffic))
