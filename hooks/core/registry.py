"""Model registry references and how they are pinned: pure.

`models:/name@alias`, `models:/name/latest` and `models:/name/<stage>` name a version that
moves. The edge asks the registry which version each one names now (`Resolution`, a fact);
this module decides which version a sync pins: the registry's answer, or, while the registry
cannot answer, the version the resource already runs, so that an
outage changes nothing. A pinned reference reaches the pod template as `models:/name/<version>`:
every replica, and every restart, loads the same version; the Deployment itself carries the pin
(an annotation), so what runs is read from what runs, never from a status anyone could write. `models:/name/<version>` (or a
`models:/` uri with `model.revision`) is pinned as written and never asked about.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.contract.observed import Observed
from hooks.core.conditions import format_time
from hooks.core.naming import TRACKS, Names

SCHEME = "models:/"
STAGES = ("None", "Staging", "Production", "Archived")  # MLflow's deprecated stages


@dataclass(frozen=True)
class Reference:
    """A registry uri that names a moving version: by alias, `latest`, or a stage."""

    uri: str
    name: str
    alias: str | None = None
    stage: str | None = None  # None with alias; "latest" for the newest version of any stage

    def pinned(self, version: str) -> str:
        return f"{SCHEME}{self.name}/{version}"


def reference_of(uri: str, revision: str | None = None) -> Reference | None:
    """The moving reference `uri` is, or None (another scheme, a version, a logged model id)."""
    if not uri.startswith(SCHEME) or revision:
        return None
    path = uri[len(SCHEME):]
    if "/" not in path and "@" in path:
        name, _, alias = path.rpartition("@")  # as MLflow splits it: a name may hold "@"
        return Reference(uri, name, alias=alias) if name and alias else None
    name, _, suffix = path.partition("/")
    if not name or not suffix or "/" in suffix or suffix.isdigit():
        return None
    if suffix.lower() == "latest":
        return Reference(uri, name, stage="latest")
    stage = next((s for s in STAGES if s.lower() == suffix.lower()), None)
    return Reference(uri, name, stage=stage) if stage else None


@dataclass(frozen=True)
class Resolution:
    """What the registry said of one reference (a fact): the version it names, or why not."""

    version: str | None = None
    artifact_uri: str = ""
    run_id: str = ""
    resolved_at: datetime | None = None  # when the registry answered
    error: str | None = None  # unreachable, unknown alias, version not READY, not configured
    reason: str = ""  # the error in one CamelCase word, for the ModelResolved condition
    expires_at: datetime | None = None  # when to ask again (the answer asks for a resync then)


@dataclass(frozen=True)
class Pin:
    """The version a track runs for a reference, and what the status says of it."""

    reference: str  # the uri as written
    version: str
    artifact_uri: str
    run_id: str
    resolved_at: str  # RFC 3339: when this version was first resolved for the resource


def references(spec: Any) -> tuple[str, ...]:
    """The moving references a spec (as written, perhaps invalid) names: its model and its
    canary's model, each once; none while it is paused (its children stay as they are, so no
    sync waits on the registry for it)."""
    found: list[str] = []
    if not isinstance(spec, dict) or spec.get("paused") is True:
        return ()
    model = spec.get("model")
    for source in (model, _canary_model(spec, model)):
        if isinstance(source, dict) and isinstance(source.get("uri"), str):
            revision = source.get("revision")
            ref = reference_of(source["uri"], revision if isinstance(revision, str) else None)
            if ref is not None and ref.uri not in found:
                found.append(ref.uri)
    return tuple(found)


def _canary_model(spec: dict[str, Any], model: Any) -> dict[str, Any] | None:
    canary = spec.get("canary")
    override = canary.get("model") if isinstance(canary, dict) else None
    if not isinstance(override, dict) or not isinstance(model, dict):
        return None
    return {**model, **{k: v for k, v in override.items() if v is not None}}


def pins(refs: Iterable[str], resolutions: Mapping[str, Resolution],
         previous: Mapping[str, Pin]) -> dict[str, Pin]:
    """The version each reference runs this sync: the registry's answer when it has one, unless
    it predates the version already running (another hook replica's older memory of a moved
    alias); else the one running (an outage changes nothing); absent when neither."""
    out = {}
    for uri in refs:
        answer = resolutions.get(uri)
        before = previous.get(uri)
        at = format_time(answer.resolved_at) if answer is not None and answer.resolved_at is not None else ""
        if answer is None or answer.version is None or (
                before is not None and before.version != answer.version and at < before.resolved_at):
            if before is not None:
                out[uri] = before
            continue
        kept = before is not None and before.version == answer.version
        out[uri] = Pin(uri, answer.version, answer.artifact_uri, answer.run_id,
                       before.resolved_at if kept and before is not None else at)
    return out


def running_pins(entries: Iterable[Mapping[str, Any] | None]) -> dict[str, Pin]:
    """The pins the observed Deployments carry, by reference; the most recently resolved when
    both tracks carry one (mid-rollout, the canary runs the version being tried, whether the
    alias moved forward or back)."""
    out: dict[str, Pin] = {}
    for entry in entries:
        pin = pin_of(entry)
        if pin is not None and (pin.reference not in out or pin.resolved_at > out[pin.reference].resolved_at):
            out[pin.reference] = pin
    return out


def pins_running(observed: Observed, names: Names) -> dict[str, Pin]:
    """What the resource's observed Deployments run, by reference."""
    return running_pins(d.resolved for t in TRACKS if (d := observed.deployments.get(names.deployment(t))))


def pin_of(entry: Mapping[str, Any] | None) -> Pin | None:
    """A Deployment's pin annotation, decoded; None when absent or malformed."""
    if entry is None:
        return None
    reference, version, artifact, run, at = (entry.get(k) for k in
                                              ("reference", "version", "artifactUri", "runId", "resolvedAt"))
    if not (isinstance(reference, str) and isinstance(version, str) and version.isdigit()
            and isinstance(artifact, str) and isinstance(run, str) and isinstance(at, str)):
        return None
    return Pin(reference, version, artifact, run, at)


def pin_annotation(pin: Pin) -> str:
    return json.dumps({"reference": pin.reference, "version": pin.version, "artifactUri": pin.artifact_uri,
                       "runId": pin.run_id, "resolvedAt": pin.resolved_at}, sort_keys=True, separators=(",", ":"))

def resolved_condition(refs: Iterable[str], resolutions: Mapping[str, Resolution],
                       pinned: Mapping[str, Pin], has_children: bool) -> tuple[bool, str, str] | None:
    """ModelResolved (status, reason, message) for the references a spec names; None without one."""
    refs = list(refs)
    if not refs:
        return None
    failed = [(uri, resolutions.get(uri)) for uri in refs
              if resolutions.get(uri) is None or resolutions[uri].version is None]
    if not failed:
        return True, "Resolved", "; ".join(f"{uri} is version {pinned[uri].version}" for uri in refs if uri in pinned)
    reason = next((r.reason for _, r in failed if r is not None and r.reason), "NotResolved")
    messages = []
    for uri, answer in failed:
        why = answer.error if answer is not None and answer.error else "not asked yet"
        kept = pinned.get(uri)
        then = (f"keeps version {kept.version}" if kept is not None
                else "its children are kept as they are until it resolves" if has_children
                else "nothing is created for it until it resolves")
        messages.append(f"{uri}: {why}; {then}, and it is tried again")
    return False, reason, "; ".join(messages)
