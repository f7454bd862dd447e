"""The web layer: FastAPI wiring around the pure `sync` function, and nothing else.

`create_app(settings)` builds the app; nothing happens at import time. Routes decode, call
`sync`, encode. Errors become JSON: 4xx for the caller, non-200 whenever an answer could make
Metacontroller delete or change a serving child.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from hooks.encoding import dumps, loads
from hooks.errors import ConfigError, RequestError, TemplateError
from hooks.hookapi import parse_request
from hooks.reload import TemplateReloader
from hooks.rendering import Renderer
from hooks.selfcheck import check_templates
from hooks.settings import Settings
from hooks.sync import sync

log = logging.getLogger("llmdeploy")


def json_response(body: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(body), status_code=status_code, media_type="application/json", headers=headers)


def error_response(status_code: int, error: str, message: str) -> Response:
    return json_response({"error": error, "message": message}, status_code)


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


class Hook:
    """The state a running hook keeps: its settings, token and loaded template set."""

    def __init__(self, settings: Settings, renderer: Renderer | None) -> None:
        self.settings = settings
        self.renderer = renderer
        self.token = read_token(settings.auth_token_file)

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credential = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip(), self.token)

    def install(self, renderer: Renderer) -> None:
        """Serve with a new, checked template set from now on (one assignment: atomic)."""
        self.renderer = renderer

    def handle_sync(self, body: bytes) -> Response:
        renderer = self.renderer  # one set for the whole request, whatever a reload does
        if renderer is None:
            return error_response(503, "NotReady", "templates are not loaded; see the hook's log")
        try:
            request = parse_request(loads(body))
        except RequestError as e:
            return error_response(e.status_code, type(e).__name__, str(e))
        except ValueError as e:
            return error_response(400, "InvalidJSON", f"the request body is not valid JSON: {e}")
        parent = f"{request.parent.metadata.namespace}/{request.parent.metadata.name}"
        try:
            result = sync(request, renderer, self.settings)
        except RequestError as e:
            log.warning("sync %s refused: %s", parent, e)
            return error_response(e.status_code, type(e).__name__, str(e))
        except TemplateError as e:
            log.error("sync %s: template error: %s", parent, e)
            return error_response(500, "TemplateError", str(e))
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("sync %s failed", parent)
            return error_response(500, "InternalError", f"{type(e).__name__}: {e}")
        return json_response(result.body())


def create_app(settings: Settings) -> FastAPI:
    try:
        renderer: Renderer | None = check_templates(settings)
    except TemplateError as e:
        log.error("templates are broken, not ready: %s", e)
        renderer = None
    hook = Hook(settings, renderer)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.templates_dir is None:
            yield
            return
        reloader = TemplateReloader(settings, hook.install)
        task = asyncio.create_task(reloader.run())
        try:
            yield
        finally:
            task.cancel()

    app = FastAPI(title="llmdeploy sync hook", version="0.1.0", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.hook = hook

    @app.post("/sync", summary="Metacontroller CompositeController sync hook")
    async def sync_route(request: Request) -> Response:
        if not hook.authorized(request.headers.get("authorization")):
            return json_response({"error": "Unauthorized", "message": "a valid Authorization: Bearer token "
                                  "is required"}, 401, headers={"WWW-Authenticate": "Bearer"})
        return hook.handle_sync(await request.body())

    @app.get("/healthz", summary="Alive")
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", summary="Templates loaded")
    async def readyz() -> Response:
        if hook.renderer is None:
            return error_response(503, "NotReady", "templates are not loaded")
        return json_response({"status": "ready"})

    return app
