"""One running hook: its settings, token, template set, cache and metrics, and how it turns
a request body into an answer.

`decode` and `answer` are plain functions of their arguments and the hook's state, run on a
worker thread by the app; between them the app gathers the sync's facts on the event loop.
Every failure becomes an `Answer`: 4xx for the caller, non-200 whenever any 200 could make
Metacontroller delete or change a serving child.
"""

from __future__ import annotations

import hmac
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.canonical import dumps, loads
from hooks.contract.request import SyncRequest, parse_request
from hooks.contract.response import encode_response
from hooks.core.desired import Desired, DesiredInputs
from hooks.core.facts import Facts
from hooks.core.sync import sync
from hooks.errors import ConfigError, RequestError, TemplateError, UnsafeToAnswer
from hooks.rendering.templateset import TemplateSet
from hooks.settings import Settings
from hooks.web.cache import DesiredCache
from hooks.web.logs import FIELDS
from hooks.web.metrics import Metrics

log = logging.getLogger("llmdeploy")


@dataclass(frozen=True)
class Answer:
    """What the hook answers one sync request with, and what to log and count about it."""

    status_code: int
    body: bytes
    outcome: str
    fields: dict[str, Any]


def error(code: int, outcome: str, kind: str, message: str, fields: dict[str, Any] | None = None) -> Answer:
    return Answer(code, dumps({"error": kind, "message": message}), outcome, {**(fields or {}), "error": message})


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
    """The state a running hook keeps."""

    def __init__(self, settings: Settings, templates: TemplateSet | None, metrics: Metrics) -> None:
        self.settings = settings
        self.templates = templates
        self.metrics = metrics
        self.token = read_token(settings.server.auth_token_file)
        self.cache = DesiredCache(settings.server.cache_size)

    def install(self, templates: TemplateSet) -> None:
        """Serve with a new, checked template set from now on (one assignment: atomic; the
        cache keys on the set's serial, so nothing the old set rendered is served again)."""
        self.templates = templates

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credential = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip(), self.token)

    def decode(self, body: bytes) -> SyncRequest | Answer:
        """The parsed request, or the answer that refuses it."""
        try:
            return parse_request(loads(body))
        except RequestError as e:
            return error(e.status_code, "bad_request", type(e).__name__, str(e))
        except ValueError as e:
            return error(400, "bad_request", "InvalidJSON", f"the request body is not valid JSON: {e}")
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("decoding the request failed")
            return error(500, "error", "InternalError", f"{type(e).__name__}: {e}")

    def answer(self, request: SyncRequest, facts: Facts) -> Answer:
        """Sync and encode."""
        templates = self.templates  # one set for the whole request, whatever a reload does
        parent = f"{request.parent.namespace}/{request.parent.name}"
        fields: dict[str, Any] = {"parent": parent, "generation": request.parent.generation}
        if templates is None:
            return error(503, "not_ready", "NotReady", "templates are not loaded; see the hook's log", fields)

        def desire(inputs: DesiredInputs) -> Desired:
            return self.cache.desire(inputs, templates)

        try:
            started = time.perf_counter()
            result = sync(request, facts, self.settings.children, desire)
            self.metrics.render.observe(time.perf_counter() - started)
        except UnsafeToAnswer as e:
            return error(e.status_code, "refused", type(e).__name__, str(e), fields)
        except TemplateError as e:
            log.error("template error: %s", e, extra={FIELDS: fields})
            return error(500, "error", "TemplateError", str(e), fields)
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("sync failed", extra={FIELDS: fields})
            return error(500, "error", "InternalError", f"{type(e).__name__}: {e}", fields)
        self.metrics.saw_phase(parent, result.status.phase)
        fields |= {"children": len(result.children), "phase": result.status.phase}
        return Answer(200, encode_response(result.children, result.status.as_json()), result.outcome, fields)
