"""One running hook: its settings, token, template set, memories, renderer and metrics, and
the steps that turn a request body into an answer.

The app runs `replayed`, `decode`, `render` and `answer` (on the event loop, or on worker
threads for large bodies and renders) and gathers facts in between; each step returns an
`Answer` instead of raising: 4xx for the caller, and non-200 whenever any 200 could make
Metacontroller delete or change a serving child.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hooks.api.validation import too_deep
from hooks.canonical import loads
from hooks.contract.request import SyncRequest, parse_request
from hooks.contract.response import encode_response
from hooks.core.desired import Desired, desired_inputs
from hooks.core.facts import Facts
from hooks.core.registry import Resolution
from hooks.core.rollout import NO_ROLLOUT, RolloutDecision, decide
from hooks.core.strategy import RolloutRender
from hooks.core.sync import sync
from hooks.errors import Busy, ConfigError, RequestError, TemplateError, UnsafeToAnswer
from hooks.settings import Settings
from hooks.web.answer import Answer, error
from hooks.web.cache import AnswerMemory, DesiredCache, FailureMemory
from hooks.web.logs import FIELDS
from hooks.web.metrics import Metrics
from hooks.workers.renderer import Renderer

log = logging.getLogger("llmdeploy")
Resolutions = Mapping[str, Resolution]


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


def _fields(request: SyncRequest) -> dict[str, Any]:
    return {"parent": f"{request.parent.namespace}/{request.parent.name}", "generation": request.parent.generation}


class Hook:
    """The state a running hook keeps."""

    def __init__(self, settings: Settings, renderer: Renderer, metrics: Metrics) -> None:
        self.settings = settings
        self.renderer = renderer
        self.metrics = metrics
        self.token = read_token(settings.server.auth_token_file)
        self.cache = DesiredCache(settings.server.cache_size, settings.server.cache_bytes)
        self.answers = AnswerMemory(settings.server.cache_size, settings.server.cache_bytes)
        self.failures = FailureMemory(settings.render.failure_memory_seconds)
        self.templates: str | None = None  # the digest of the set in use; None: not ready

    def install(self, templates: str) -> None:
        """Serve with another, checked template set from now on (one assignment: atomic)."""
        self.templates = templates

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credential = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), self.token.encode())

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

    def replayed(self, body: bytes, templates: str) -> tuple[bytes, Answer | None]:
        """The key `body` is remembered by with `templates`, and the answer it was given, when
        that answer holds at any time (then nothing needs to be decoded, gathered or synced)."""
        key = AnswerMemory.key(body, templates)
        found = self.answers.get(key)
        if found is None:
            return key, None
        self.metrics.replayed.inc()
        self.metrics.saw_phase(found.fields["parent"], found.fields["phase"])
        return key, dataclasses.replace(found, fields={**found.fields, "replayed": True})

    def remembered(self, request: SyncRequest, templates: str, rollout: RolloutRender | None = None,
                   resolutions: Resolutions | None = None) -> Desired | None:
        """The desired state of `request` from the cache, when it is there (cheap)."""
        inputs = desired_inputs(request, self.settings.children, rollout, resolutions)
        return self.cache.get(DesiredCache.key(inputs, templates))

    def desired(self, request: SyncRequest, templates: str, deadline: float | None = None,
                rollout: RolloutRender | None = None, resolutions: Resolutions | None = None) -> Desired | Answer:
        """From memory, else rendered."""
        return (self.remembered(request, templates, rollout, resolutions)
                or self.render(request, templates, deadline, rollout, resolutions))

    def roll(self, request: SyncRequest, direct: Desired, facts: Facts, templates: str,
             deadline: float | None = None) -> tuple[Desired, RolloutDecision] | Answer:
        """The Canary strategy's move, and the desired state rendered for it (`direct` when
        there is no canary to render)."""
        try:
            decision = decide(request, direct, facts)
        except UnsafeToAnswer as e:
            return error(e.status_code, "refused", type(e).__name__, str(e), _fields(request))
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("deciding the rollout failed", extra={FIELDS: _fields(request)})
            return error(500, "error", "InternalError", f"{type(e).__name__}: {e}", _fields(request))
        if decision.render is None:
            return direct, decision
        desired = self.desired(request, templates, deadline, decision.render, facts.resolutions)
        return desired if isinstance(desired, Answer) else (desired, decision)

    def render(self, request: SyncRequest, templates: str, deadline: float | None = None,
               rollout: RolloutRender | None = None, resolutions: Resolutions | None = None) -> Desired | Answer:
        """The desired state of `request`, rendered by the renderer by `deadline` (and
        remembered). A render that failed is answered from memory for a while: a runaway
        template is not run again on every retry, taking workers from other resources."""
        inputs = desired_inputs(request, self.settings.children, rollout, resolutions)
        deep = too_deep(inputs.spec)
        if deep:  # invalid, and too deep to hand to a worker
            return Desired("invalid", spec_errors=(deep,))
        key = DesiredCache.key(inputs, templates)
        failed = self.failures.get(key)
        if failed is not None:
            return failed
        try:
            started = time.perf_counter()
            desired = self.renderer.desire(inputs, templates, deadline)
            self.metrics.render.observe(time.perf_counter() - started)
        except TemplateError as e:
            log.error("template error: %s", e, extra={FIELDS: _fields(request)})
            answer = error(500, "error", "TemplateError", str(e), _fields(request))
            self.failures.put(key, answer)
            return answer
        except Busy as e:
            return error(429, "overloaded", "TooManyRequests", str(e), _fields(request))
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("rendering failed", extra={FIELDS: _fields(request)})
            return error(500, "error", "InternalError", f"{type(e).__name__}: {e}", _fields(request))
        self.cache.put(key, desired)
        return desired

    def answer(self, request: SyncRequest, facts: Facts, desired: Desired | None,
               rollout: RolloutDecision = NO_ROLLOUT, replay_key: bytes | None = None) -> Answer:
        """Sync and encode; an answer that holds at any time is remembered by `replay_key`
        (see `replayed`)."""
        fields = _fields(request)
        try:
            result = sync(request, facts, desired, rollout)
        except UnsafeToAnswer as e:
            return error(e.status_code, "refused", type(e).__name__, str(e), fields)
        except Exception as e:  # noqa: BLE001 - a bug must become a 500, never a smaller answer
            log.exception("sync failed", extra={FIELDS: fields})
            return error(500, "error", "InternalError", f"{type(e).__name__}: {e}", fields)
        try:
            body = encode_response(result.children, result.status.as_json(), result.finalized, result.resync_after)
        except (TypeError, ValueError) as e:  # a child kept as last applied that JSON cannot carry back
            return error(409 if result.outcome != "ok" else 500, "refused" if result.outcome != "ok" else "error",
                         "UnsafeToAnswer" if result.outcome != "ok" else "InternalError",
                         f"the answer cannot be encoded ({e}); nothing is changed", fields)
        self.metrics.saw_phase(fields["parent"], result.status.phase)
        fields |= {"children": len(result.children), "phase": result.status.phase}
        if result.replayable and replay_key is not None:
            self.answers.put(replay_key, Answer(200, body, result.outcome, dict(fields)))
        return Answer(200, body, result.outcome, fields)

    def respond(self, body: bytes, facts: Facts) -> Answer:
        """Every step in the calling thread, with facts already at hand: the app's path without
        the event loop (the benchmark measures it)."""
        templates = self.templates
        key, replayed = self.replayed(body, templates) if templates is not None else (None, None)
        if replayed is not None:
            return replayed
        decoded = self.decode(body)
        if isinstance(decoded, Answer):
            return decoded
        if templates is None:
            return error(503, "not_ready", "NotReady", "templates are not loaded; see the hook's log")
        if decoded.finalizing:
            return self.answer(decoded, facts, None)
        direct = self.desired(decoded, templates, resolutions=facts.resolutions)
        if isinstance(direct, Answer):
            return direct
        rolled = self.roll(decoded, direct, facts, templates)
        return rolled if isinstance(rolled, Answer) else self.answer(decoded, facts, *rolled, replay_key=key)
