"""Registry references resolved through MLflow's REST API, bounded in time and shared.

An answer is reused for `refresh_seconds` across every resource that names the same
reference, and at most one request per reference is in flight: a thousand resources on
`models:/llama@champion` ask the registry once a minute. A sync waits at most the timeout;
a registry that is slower keeps answering in the background for the next sync, and one that
is down costs each sync no more than the timeout, never another resource's time. The
address and credentials are the hook's configuration; a resource only names a model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx

from hooks.core.registry import Reference, Resolution, reference_of
from hooks.settings import RegistrySettings

API = "/api/2.0/mlflow"
RETRY_SECONDS = 10.0  # how soon a failed resolution is tried again (at most refresh_seconds)
REMEMBERED = 4096  # answers kept: far more references than a fleet names


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class RegistryError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MLflowRegistry:
    def __init__(self, settings: RegistrySettings, clock: Callable[[], datetime] = utc_now,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._answers: dict[str, tuple[Resolution, float]] = {}  # uri -> (answer, monotonic expiry)
        self._in_flight: dict[str, asyncio.Task[Resolution]] = {}
        self.requests = 0  # sent, for tests and metrics

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            auth: httpx.Auth | None = None
            headers = {}
            if self.settings.token:
                headers["Authorization"] = f"Bearer {self.settings.token}"
            elif self.settings.username is not None and self.settings.password is not None:
                auth = httpx.BasicAuth(self.settings.username, self.settings.password)
            self._client = httpx.AsyncClient(base_url=self.settings.tracking_uri or "", headers=headers, auth=auth,
                                             transport=self._transport, follow_redirects=False,
                                             limits=httpx.Limits(max_connections=16, max_keepalive_connections=4))
        return self._client

    async def aclose(self) -> None:
        asking = list(self._in_flight.values())
        for task in asking:
            task.cancel()
        try:
            await asyncio.gather(*asking, return_exceptions=True)  # each closes its connection as it stops
        finally:
            if self._client is not None:
                await self._client.aclose()
                self._client = None

    async def resolve(self, uris: tuple[str, ...], deadline: float | None = None) -> dict[str, Resolution]:
        """What the registry says of each reference: remembered, or asked now and waited for at
        most the timeout (less when `deadline`, a time.monotonic(), comes sooner)."""
        if not uris:
            return {}
        now = time.monotonic()
        out: dict[str, Resolution] = {}
        waiting: dict[str, asyncio.Task[Resolution]] = {}
        for uri in uris:
            remembered = self._answers.get(uri)
            if remembered is not None and remembered[1] > now:
                out[uri] = remembered[0]
            else:
                waiting[uri] = self._asking(uri)
        if waiting:
            budget = self.settings.timeout_seconds if deadline is None else \
                max(0.0, min(self.settings.timeout_seconds, deadline - now))
            await asyncio.wait(waiting.values(), timeout=budget)
            for uri, task in waiting.items():
                out[uri] = task.result() if task.done() and not task.cancelled() else self._failed(
                    "RegistryUnreachable", f"the registry did not answer within {budget:g} s", remember=False)
        return out

    def _asking(self, uri: str) -> asyncio.Task[Resolution]:
        """The one request in flight for `uri`, started if there is none."""
        task = self._in_flight.get(uri)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._ask(uri))
            self._in_flight[uri] = task
        return task

    async def _ask(self, uri: str) -> Resolution:
        try:
            # httpx bounds each read, not a response that trickles in: bound the whole exchange.
            answer = await asyncio.wait_for(self._fetch(uri), 2 * self.settings.timeout_seconds)
        except TimeoutError:
            answer = self._failed("RegistryUnreachable", f"the registry did not answer within "
                                                         f"{2 * self.settings.timeout_seconds:g} s")
        except RegistryError as e:
            answer = self._failed(e.reason, str(e))
        except Exception as e:  # noqa: BLE001 - an answer it cannot read is an error, never a crash
            answer = self._failed("RegistryError", f"{type(e).__name__}: {e}")
        seconds = self.settings.refresh_seconds if answer.version is not None else \
            min(RETRY_SECONDS, self.settings.refresh_seconds)
        if len(self._answers) >= REMEMBERED:  # references nobody names any more go first
            now = time.monotonic()
            self._answers = {k: v for k, v in self._answers.items() if v[1] > now}
            while len(self._answers) >= REMEMBERED:
                del self._answers[next(iter(self._answers))]
        self._answers[uri] = (answer, time.monotonic() + seconds)
        self._in_flight.pop(uri, None)
        return answer

    def _failed(self, reason: str, message: str, remember: bool = True) -> Resolution:
        seconds = min(RETRY_SECONDS, self.settings.refresh_seconds) if remember else 1.0
        return Resolution(error=message, reason=reason, expires_at=self.clock() + timedelta(seconds=seconds))

    async def _fetch(self, uri: str) -> Resolution:
        reference = reference_of(uri)
        if reference is None:
            raise RegistryError("NotAReference", f"{uri} is not a registry alias, latest or stage")
        if self.settings.tracking_uri is None:
            raise RegistryError("RegistryNotConfigured", "no model registry is configured for the hook "
                                                         "(LLMDEPLOY_MLFLOW_TRACKING_URI)")
        version = await self._version(reference)
        number = str(version.get("version", ""))
        if not number.isdigit():
            raise RegistryError("RegistryError", f"the registry answered {uri} without a version number")
        state = version.get("status", "READY")
        if state != "READY":
            raise RegistryError("VersionNotReady", f"{uri} is version {number}, which is {state}, not READY")
        found = await self._get("/model-versions/get-download-uri", {"name": reference.name, "version": number},
                                uri, missing_ok=True)
        artifact = found.get("artifact_uri") if found else None
        at = self.clock()
        return Resolution(number, str(artifact or version.get("source", "")), str(version.get("run_id") or ""), at,
                          expires_at=at + timedelta(seconds=self.settings.refresh_seconds))

    async def _version(self, reference: Reference) -> dict[str, Any]:
        if reference.alias is not None:
            found = await self._get("/registered-models/alias", {"name": reference.name, "alias": reference.alias},
                                    reference.uri)
            version = found.get("model_version") if found else None
            if not isinstance(version, dict):
                raise RegistryError("RegistryError", f"the registry answered {reference.uri} without a version")
            return version
        body: dict[str, Any] = {"name": reference.name}
        if reference.stage != "latest":
            body["stages"] = [reference.stage]
        found = await self._send("POST", "/registered-models/get-latest-versions", reference.uri, json=body)
        versions = [v for v in (found or {}).get("model_versions", []) if isinstance(v, dict)
                    and str(v.get("version", "")).isdigit()]
        if not versions:
            raise RegistryError("NotFound", f"{reference.uri}: the registry has no version "
                                            f"{'at all' if reference.stage == 'latest' else 'in that stage'}")
        return max(versions, key=lambda v: int(v["version"]))

    async def _get(self, path: str, params: dict[str, str], uri: str, missing_ok: bool = False) -> dict[str, Any] | None:
        return await self._send("GET", path, uri, params=params, missing_ok=missing_ok)

    async def _send(self, method: str, path: str, uri: str, missing_ok: bool = False,
                    **kwargs: Any) -> dict[str, Any] | None:
        self.requests += 1
        try:
            response = await self.client().request(method, API + path, timeout=self.settings.timeout_seconds,
                                                   **kwargs)
        except httpx.HTTPError as e:
            raise RegistryError("RegistryUnreachable", f"the registry cannot be reached: {type(e).__name__}") from e
        # An unknown model or version is a 404; MLflow answers an unknown alias with a 400.
        if response.status_code == 404 or _error_code(response) == "RESOURCE_DOES_NOT_EXIST" or (
                path == "/registered-models/alias" and _error_code(response) == "INVALID_PARAMETER_VALUE"):
            if missing_ok:
                return None
            raise RegistryError("NotFound", f"{uri}: {_message(response)}")
        if response.status_code in (401, 403):
            raise RegistryError("RegistryUnauthorized", f"the registry refused the hook's credentials "
                                                        f"({response.status_code})")
        if response.status_code != 200:
            if missing_ok:
                return None
            raise RegistryError("RegistryError", f"the registry answered {response.status_code}: {_message(response)}")
        found = response.json()
        return found if isinstance(found, dict) else {}


def _error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error_code") if isinstance(body, dict) else None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:200] if message else response.text[:200]
