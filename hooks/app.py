"""The web layer: FastAPI wiring around the pure `sync` function.

`create_app(settings)` builds the app; nothing happens at import time. A sync request is
admitted (or answered 429 when too many are in flight, 413 when too large), then decoded,
synced and encoded on one worker thread, so that the event loop stays free to accept, read,
count and refuse requests (and to drain them on shutdown) while syncs queue. Errors become JSON: 4xx for the caller, non-200
whenever an answer could make Metacontroller delete or change a serving child.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import Response

from hooks.desired import DesiredCache
from hooks.encoding import dumps, loads
from hooks.errors import ConfigError, RequestError, TemplateError, UnsafeToAnswer
from hooks.hookapi import parse_request
from hooks.logs import FIELDS
from hooks.metrics import CONTENT_TYPE, Metrics
from hooks.reload import TemplateReloader
from hooks.rendering import Renderer
from hooks.selfcheck import check_templates
from hooks.settings import Settings
from hooks.sync import sync

log = logging.getLogger("llmdeploy")
RETRY_AFTER_SECONDS = 1

SYNC_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["parent"],
    "properties": {
        "controller": {"type": "object"},
        "parent": {
            "type": "object",
            "required": ["apiVersion", "kind", "metadata"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "namespace": {"type": "string"},
                    "generation": {"type": "integer"}, "uid": {"type": "string"}}},
                "spec": {"type": "object"},
                "status": {"type": "object"},
            },
        },
        "children": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": {"type": "object"}}},
        "related": {"type": "object"},
        "finalizing": {"type": "boolean"},
    },
}


def json_response(body: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(body), status_code=status_code, media_type="application/json", headers=headers)


def error_response(status_code: int, error: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": error, "message": message}, status_code, headers)


def read_token(path: Path | None) -> str | None:
    """The bearer token the hook expects, read once at start-up."""
    if path is None:
        return None
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise ConfigError(f"cannot read the auth token file {path}: {e}") from e
    if not token:
        raise ConfigError(f"the auth token file {path} is empty")
    return token


@dataclass(frozen=True)
class Answer:
    """What the hook answers one sync request with, and what to log and count about it."""

    status_code: int
    body: bytes
    outcome: str
    fields: dict[str, Any]


class Hook:
    """The state a running hook keeps: settings, token, template set, metrics, admission."""

    def __init__(self, settings: Settings, renderer: Renderer | None, metrics: Metrics) -> None:
        self.settings = settings
        self.renderer = renderer
        self.metrics = metrics
        self.token = read_token(settings.auth_token_file)
        self.in_flight = 0  # touched only on the event loop
        self.cpu = anyio.CapacityLimiter(1)  # one sync at a time: they are pure CPU under one GIL
        self.cache = DesiredCache(settings.cache_size)

    def install(self, renderer: Renderer) -> None:
        """Serve with a new, checked template set from now on (one assignment: atomic; the
        cache keys on the set's serial, so nothing the old set rendered is served again)."""
        self.renderer = renderer

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credential = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip(), self.token)

    def answer(self, body: bytes) -> Answer:
        """Decode, sync, encode."""
        renderer = self.renderer  # one set for the whole request, whatever a reload does
        if renderer is None:
            return _error(503, "not_ready", "NotReady", "templates are not loaded; see the hook's log")
        try:
            request = parse_request(loads(body))
        except RequestError as e:
            return _error(e.status_code, "bad_request", type(e).__name__, str(e))
        except ValueError as e:
            return _error(400, "bad_request", "InvalidJSON", f"the request body is not valid JSON: {e}")
        meta = request.parent.metadata
        parent = f"{meta.namespace}/{meta.name}"
        fields: dict[str, Any] = {"parent": parent, "generation": meta.generation}
        try:
            started = time.perf_counter()
            result = sync(request, renderer, self.settings, self.cache)
            self.metrics.render.observe(time.perf_counter() - started)
        except UnsafeToAnswer as e:
            return _error(e.status_code, "refused", type(e).__name__, str(e), fields)
        except TemplateError as e:
            log.error("template error: %s", e, extra={FIELDS: fields})
            return _error(500, "error", "TemplateError", str(e), fields)
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("sync failed", extra={FIELDS: fields})
            return _error(500, "error", "InternalError", f"{type(e).__name__}: {e}", fields)
        self.metrics.saw_phase(parent, result.status.phase)
        fields |= {"children": result.children_count, "phase": result.status.phase}
        return Answer(200, result.encode(), result.outcome, fields)


def _error(code: int, outcome: str, error: str, message: str, fields: dict[str, Any] | None = None) -> Answer:
    return Answer(code, dumps({"error": error, "message": message}), outcome, {**(fields or {}), "error": message})


async def read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(settings: Settings, metrics: Metrics | None = None) -> FastAPI:
    metrics = metrics or Metrics()
    try:
        renderer: Renderer | None = check_templates(settings)
    except TemplateError as e:
        log.error("templates are broken, not ready: %s", e)
        renderer = None
    hook = Hook(settings, renderer, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.templates_dir is None:
            yield
            return
        task = asyncio.create_task(TemplateReloader(settings, hook.install, metrics.reloaded).run())
        try:
            yield
        finally:
            task.cancel()

    app = FastAPI(title="llmdeploy sync hook", version="0.1.0", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.hook = hook

    @app.post("/sync", summary="Metacontroller CompositeController sync hook", openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": SYNC_REQUEST_SCHEMA}}}})
    async def sync_route(request: Request) -> Response:
        started = time.perf_counter()
        request_id = request.headers.get("x-request-id") or os.urandom(16).hex()
        if not hook.authorized(request.headers.get("authorization")):
            answer = _error(401, "unauthorized", "Unauthorized", "a valid Authorization: Bearer token is required")
        elif hook.in_flight >= settings.max_in_flight:
            answer = _error(429, "overloaded", "TooManyRequests",
                            f"{hook.in_flight} syncs in flight; retry in {RETRY_AFTER_SECONDS}s")
        else:
            hook.in_flight += 1
            metrics.in_flight.inc()
            try:
                body = await read_limited(request, settings.max_body_bytes)
                answer = _error(413, "too_large", "RequestTooLarge",
                                f"the request body exceeds {settings.max_body_bytes} bytes") if body is None \
                    else await anyio.to_thread.run_sync(hook.answer, body, limiter=hook.cpu)
            finally:
                hook.in_flight -= 1
                metrics.in_flight.dec()
        elapsed = time.perf_counter() - started
        metrics.observe("sync", answer.outcome, elapsed)
        fields = {**answer.fields, "outcome": answer.outcome, "status": answer.status_code,
                  "duration_ms": round(elapsed * 1000, 2), "request_id": request_id}
        log.log(logging.INFO if answer.status_code < 500 else logging.ERROR, "sync", extra={FIELDS: fields})
        headers = {"x-request-id": request_id}
        if answer.status_code == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if answer.status_code == 429:
            headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return Response(answer.body, answer.status_code, media_type="application/json", headers=headers)

    @app.get("/healthz", summary="Alive")
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", summary="Templates loaded")
    async def readyz() -> Response:
        if hook.renderer is None:
            return error_response(503, "NotReady", "templates are not loaded")
        return json_response({"status": "ready"})

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics_route() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return app


def create_app_from_env() -> FastAPI:
    """The app of one worker process (`llmdeploy serve --workers N`): settings from the
    environment the CLI prepared."""
    return create_app(Settings.from_env())
