"""How the golden tests ask the hook: one request in, (HTTP status, body bytes) out, through
the same path the web layer takes after it has read the body.

The recorded answers were made when the hook took "now" from the newest timestamp in the
request; replaying them gives the sync that same moment as its clock, so that the bytes can
be compared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from hooks.canonical import dumps
from hooks.contract.observed import parse_time
from hooks.core.facts import Facts
from hooks.edge.templates import read_sources
from hooks.settings import ROUTERS, Settings
from hooks.web.hook import Hook
from hooks.web.metrics import Metrics
from hooks.workers.renderer import LocalRenderer

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@lru_cache(maxsize=1)
def hook() -> Hook:
    return new_hook()


def new_hook() -> Hook:
    """The hook of an install with every router and a Prometheus named default (never asked:
    no recorded rollout has a measurement due)."""
    settings = Settings.with_prometheus({"default": "http://127.0.0.1:9"})
    settings = dataclasses.replace(settings, children=dataclasses.replace(settings.children, routers=ROUTERS))
    renderer = LocalRenderer(settings.children)
    hook = Hook(settings, renderer, Metrics())
    hook.install(renderer.load(read_sources(None)))
    return hook


def newest_timestamp(request: dict[str, Any]) -> datetime:
    """The newest moment the request's objects record (metadata, managed fields, conditions)."""
    found = [t for t in map(parse_time, _timestamps(request)) if t is not None]
    return max(found, default=EPOCH)


def _timestamps(request: dict[str, Any]) -> Iterator[Any]:
    children = [c for group in (request.get("children") or {}).values() for c in group.values()]
    for obj in [request["parent"], *children]:
        meta = obj.get("metadata") or {}
        yield meta.get("creationTimestamp")
        yield meta.get("deletionTimestamp")
        for entry in meta.get("managedFields") or []:
            yield entry.get("time")
        for condition in (obj.get("status") or {}).get("conditions") or []:
            yield condition.get("lastTransitionTime")
            yield condition.get("lastUpdateTime")


def answer(request: dict[str, Any], by: Hook | None = None) -> tuple[int, bytes]:
    result = (by or hook()).respond(dumps(request), Facts(newest_timestamp(request)))
    return result.status_code, result.body
