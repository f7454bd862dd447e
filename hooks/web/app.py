"""The FastAPI app around the hook: routes, admission, and facts gathered between decoding
and syncing.

`create_app(settings)` builds the app; nothing happens at import time. A sync request is
admitted (or answered 429 when too many are in flight, 413 when too large), answered again at
once when it is byte for byte a request whose answer holds at any time, else decoded, given
its facts on the event loop, given its desired state from the cache or a render worker
(waited for on a thread that holds nothing else), then synced and encoded: on the loop for an
ordinary body, on a worker thread for a large one. The loop stays free to accept, read, count
and refuse requests (and to drain them on shutdown) while syncs wait for renders or facts,
and a slow render delays only its own resource.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hooks.canonical import dumps
from hooks.core.registry import Resolution
from hooks.core.rollout import NO_ROLLOUT
from hooks.edge.gather import FactGatherer
from hooks.edge.prometheus import Prometheus
from hooks.edge.registry import MLflowRegistry
from hooks.edge.templates import read_sources
from hooks.errors import TemplateError
from hooks.settings import Settings
from hooks.web.admission import BodyBudget, Held, HeldResponse, Refused
from hooks.web.answer import Answer, error
from hooks.web.hook import Hook
from hooks.web.logs import FIELDS
from hooks.web.metrics import CONTENT_TYPE, Metrics
from hooks.web.reload import TemplateReloader
from hooks.workers.pool import worker_pool
from hooks.workers.renderer import Renderer

log = logging.getLogger("llmdeploy")
T = TypeVar("T")
RETRY_AFTER_SECONDS = 1
# A measurement ends this long before the sync's deadline: the rollout's render and the
# answer still fit after it.
MEASUREMENT_RESERVE_SECONDS = 3.0
# Decoding and answering a body this small takes less time than handing it to a thread and
# back (the hop and the GIL hand-over cost more than the work): it runs on the event loop.
# A larger body is decoded and answered on a worker thread, so the loop keeps serving.
INLINE_BODY_BYTES = 256 << 10

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


class HookApp(FastAPI):
    """FastAPI, with /sync answered by `sync_endpoint` as plain ASGI, before routing and
    middleware: the path Metacontroller calls pays for neither (about as much as the sync
    itself). The OpenAPI schema documents it as if it were a route."""

    sync_endpoint: ASGIApp  # set by create_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _route_path(scope) in SYNC_PATHS:
            await self.sync_endpoint(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()
            schema["paths"]["/sync"] = {"post": {
                "summary": "Metacontroller CompositeController sync hook", "operationId": "sync",
                "requestBody": {"required": True, "content": {"application/json": {"schema": SYNC_REQUEST_SCHEMA}}},
                "responses": {"200": {"description": "The desired children and the parent's status",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}}}}
        return super().openapi()


SYNC_PATHS = ("/sync", "/sync/")  # FastAPI redirected the second to the first; Go's client follows


def _route_path(scope: Scope) -> str:
    """The path below the app's root path (set when it is mounted under a prefix)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def json_response(body: Any, status_code: int = 200) -> Response:
    return Response(dumps(body), status_code=status_code, media_type="application/json")


def create_app(settings: Settings, metrics: Metrics | None = None, facts: FactGatherer | None = None,
               renderer: Renderer | None = None) -> FastAPI:
    """The app, with its own render workers unless given a renderer; nothing is served until
    a template set loads (readiness says so), and a broken one never serves."""
    metrics = metrics or Metrics()
    facts = facts or FactGatherer(prometheus=Prometheus(settings.analysis), registry=MLflowRegistry(settings.registry))
    renderer = renderer or worker_pool(settings)
    hook = Hook(settings, renderer, metrics)
    try:
        hook.install(renderer.load(read_sources(settings.templates.folder)))
    except TemplateError as e:
        log.error("templates are broken, not ready: %s", e)
    # Large bodies' decodes and syncs, one at a time on a thread (pure CPU under one GIL); they
    # may overlap with ordinary syncs on the loop, which share only locked state (the cache).
    cpu = anyio.CapacityLimiter(1)
    in_flight = 0  # touched only on the event loop
    server = settings.server
    bodies = BodyBudget(server.max_body_bytes, server.max_bodies_bytes, server.body_timeout_seconds)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # What start-up made (modules, models, templates: most of the heap) lives as long as
        # the process: out of the collector's sight, a full collection takes microseconds
        # instead of tens of milliseconds, which every sync in flight would wait out.
        gc.collect()  # start-up's garbage first: frozen, it would never be freed
        gc.freeze()
        task = None
        if settings.templates.folder is not None:
            reloader = TemplateReloader(settings.templates, renderer, hook.install, metrics.reloaded)
            task = asyncio.create_task(reloader.run())
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
            renderer.close()
            await facts.aclose()
            gc.unfreeze()

    app = HookApp(title="llmdeploy sync hook", version="0.1.0", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.hook = hook

    async def on_cpu(size: int, step: Callable[..., T], *args: Any) -> T:
        if size <= INLINE_BODY_BYTES:
            return step(*args)
        return await anyio.to_thread.run_sync(step, *args, limiter=cpu)

    async def admitted(body: bytes, deadline: float) -> Answer:
        templates = hook.templates  # one set for the whole request, whatever a reload does
        key = None
        if templates is not None:  # the same request again, answered with what holds at any time
            key, replayed = await on_cpu(len(body), hook.replayed, body, templates)
            if replayed is not None:
                return replayed
        decoded = await on_cpu(len(body), hook.decode, body)
        if isinstance(decoded, Answer):
            return decoded
        if templates is None:
            return error(503, "not_ready", "NotReady", "templates are not loaded; see the hook's log")
        direct = None
        resolutions: dict[str, Resolution] = {}
        if not decoded.finalizing:
            try:  # the registry's answers first: the pod templates pin what they say
                resolutions = await facts.resolve(decoded, deadline - MEASUREMENT_RESERVE_SECONDS)
            except Exception as e:  # noqa: BLE001 - without its facts no answer is safe
                log.exception("resolving the registry references of a sync failed")
                return error(500, "error", "InternalError", f"resolving: {type(e).__name__}: {e}")
            direct = hook.remembered(decoded, templates, resolutions=resolutions)
            if direct is None:
                # The render pool queues callers itself, up to the sync's deadline.
                rendered = await anyio.to_thread.run_sync(hook.render, decoded, templates, deadline, None,
                                                          resolutions)
                if isinstance(rendered, Answer):
                    return rendered
                direct = rendered
        try:
            gathered = await facts.gather(decoded, direct, deadline - MEASUREMENT_RESERVE_SECONDS, resolutions)
        except Exception as e:  # noqa: BLE001 - without its facts no answer is safe
            log.exception("gathering the facts of a sync failed")
            return error(500, "error", "InternalError", f"gathering facts: {type(e).__name__}: {e}")
        if direct is None:
            return await on_cpu(len(body), hook.answer, decoded, gathered, None)
        rollout = NO_ROLLOUT
        if direct.policy is not None:  # the Canary strategy: its move, and the children for it
            rolled = await anyio.to_thread.run_sync(hook.roll, decoded, direct, gathered, templates, deadline)
            if isinstance(rolled, Answer):
                return rolled
            direct, rollout = rolled
        return await on_cpu(len(body), hook.answer, decoded, gathered, direct, rollout, key)

    async def sync_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal in_flight
        started = time.perf_counter()
        request = Request(scope, receive)
        request_id = request.headers.get("x-request-id") or os.urandom(16).hex()
        if scope["method"] != "POST":
            refusal = error(405, "bad_request", "MethodNotAllowed", "the sync hook takes POST only")
            await Response(refusal.body, 405, headers={"Allow": "POST", "x-request-id": request_id},
                           media_type="application/json")(scope, receive, send)
            return
        held: Held | None = None
        try:
            if not hook.authorized(request.headers.get("authorization")):
                raise Refused(error(401, "unauthorized", "Unauthorized",
                                    "a valid Authorization: Bearer token is required"))
            body, held = await bodies.receive(request)
            if in_flight >= settings.server.max_in_flight:
                raise Refused(error(429, "overloaded", "TooManyRequests",
                                    f"{in_flight} syncs in flight; retry in {RETRY_AFTER_SECONDS}s"))
            in_flight += 1
            metrics.in_flight.inc()
            try:
                answer = await admitted(body, time.monotonic() + settings.render.sync_deadline_seconds)
            finally:
                in_flight -= 1
                metrics.in_flight.dec()
        except Refused as refused:
            answer = refused.answer
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("answering a sync failed")
            answer = error(500, "error", "InternalError", f"{type(e).__name__}: {e}")
        except BaseException:
            if held is not None:
                held.release()
            raise
        elapsed = time.perf_counter() - started
        metrics.observe("sync", answer.outcome, elapsed)
        fields = {**answer.fields, "outcome": answer.outcome, "status": answer.status_code,
                  "duration_ms": round(elapsed * 1000, 2), "request_id": request_id}
        log.log(logging.ERROR if answer.status_code >= 500 else logging.INFO, "sync", extra={FIELDS: fields})
        headers = {"x-request-id": request_id}
        if answer.status_code == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if answer.status_code == 429:
            headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        # The body's bytes stay held until the answer has been sent (the response releases them).
        await HeldResponse(answer.body, answer.status_code, headers, held, server.body_timeout_seconds)(
            scope, receive, send)

    app.sync_endpoint = sync_endpoint

    @app.get("/healthz", summary="Alive")
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", summary="Templates loaded")
    async def readyz() -> Response:
        if hook.templates is None:
            return json_response({"error": "NotReady", "message": "templates are not loaded"}, 503)
        return json_response({"status": "ready"})

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics_route() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return app


def create_app_from_env() -> FastAPI:
    """The app of one worker process (`llmdeploy serve --workers N`): settings from the
    environment the CLI prepared."""
    return create_app(Settings.from_env())
