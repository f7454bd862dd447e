"""The desired state of one LLMDeployment, computed once per distinct input and remembered.

Validating the spec and rendering the children is most of a sync's cost, and it depends on
few inputs: the parent's name, namespace, controller uid, labels, annotations and spec, the
available replicas of its two Deployments, and the template set. `DesiredCache` keys on all
of them (and on nothing else), so an entry is never stale; everything else in a request only
feeds the status, which is computed fresh every time. Entries hold canonical bytes, not
objects, compressed, to keep a whole fleet in memory (about 3 KiB a resource).
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hooks.encoding import dumps
from hooks.errors import SpecError
from hooks.hookapi import SyncRequest
from hooks.naming import Names, Track
from hooks.rendering import Renderer
from hooks.settings import DEFAULT_CACHE_SIZE, Settings
from hooks.validation import validate_resource
from hooks.view import Availability, TrafficSplit, build_view

@dataclass(frozen=True)
class TrackPlan:
    """What status needs to know of a Deployment the hook wants."""

    track: Track
    deployment: str
    model: str
    replicas: int | None  # None: the HPA owns it
    digest: bytes  # of the Deployment's canonical JSON, to tell whether the live one differs
    applied_digest: bytes  # of the same as Metacontroller writes it into last-applied (Go's encoding)


@dataclass(frozen=True)
class DesiredState:
    outcome: Literal["ok", "invalid", "paused"]
    spec_errors: tuple[str, ...] = ()
    children_zlib: bytes = zlib.compress(b"[]")  # compressed: a whole fleet's entries stay small
    children_count: int = 0
    tracks: tuple[TrackPlan, ...] = ()
    url: str | None = None
    traffic: TrafficSplit | None = None

    @property
    def children_json(self) -> bytes:
        """The children, canonical JSON (when outcome is ok)."""
        return zlib.decompress(self.children_zlib)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


_GO_ESCAPES = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def go_json(canonical: bytes) -> bytes:
    """Canonical JSON as Go's json.Marshal writes the same map (which Metacontroller uses for
    its last-applied annotation): sorted keys like ours, but HTML characters escaped. The
    characters only occur inside strings, so replacing them everywhere is exact."""
    for raw, escaped in _GO_ESCAPES:
        canonical = canonical.replace(raw, escaped)
    return canonical


def compute_desired(request: SyncRequest, names: Names, availability: Availability, renderer: Renderer,
                    settings: Settings) -> DesiredState:
    """Validate and render; TemplateError propagates."""
    try:
        spec = validate_resource(names.parent, request.parent.spec)
    except SpecError as e:
        return DesiredState("invalid", spec_errors=tuple(e.errors))
    if spec.paused:
        return DesiredState("paused")
    view = build_view(spec, request.parent, names, availability, settings)
    children = renderer.render_children(view)
    deployments = {c["metadata"]["name"]: c for c in children if c["kind"] == "Deployment"}
    tracks = tuple(
        TrackPlan(t.track, t.deployment, t.model, deployments[t.deployment]["spec"].get("replicas"),
                  digest(dumps(deployments[t.deployment])), digest(go_json(dumps(deployments[t.deployment]))))
        for t in view.tracks
    )
    return DesiredState("ok", children_zlib=zlib.compress(dumps(children), 1), children_count=len(children),
                        tracks=tracks, url=view.url, traffic=view.traffic)


def cache_key(request: SyncRequest, names: Names, availability: Availability, renderer: Renderer) -> bytes | None:
    """A digest of every input of `compute_desired`; None when they cannot be encoded."""
    meta = request.parent.metadata
    try:
        encoded = dumps([renderer.serial, names.parent, names.namespace, names.controller_uid, meta.labels,
                         meta.annotations, availability.stable, availability.canary, request.parent.spec])
    except TypeError:
        return None
    return digest(encoded)


class DesiredCache:
    """A bounded, thread-safe LRU map from `cache_key` to DesiredState."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, DesiredState] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_compute(self, key: bytes | None, compute: Callable[[], DesiredState]) -> DesiredState:
        if key is not None:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return found
        state = compute()
        if key is not None:
            with self._lock:
                self.misses += 1
                self._entries[key] = state
                if len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return state
