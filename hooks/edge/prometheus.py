"""Measurements for canary analysis, from Prometheus' HTTP API, bounded in time.

A measurement runs its queries at once (instant queries at the hook's clock), each with the
same short timeout, and never fails: what Prometheus does not answer with data becomes an
error the core judges Inconclusive. Per resource, at most one measurement is in flight (a
sync that finds one running goes on without), and a finished one is remembered by its key,
so that a sync repeated before the status caught up judges the very same answers.

The addresses are the hook's configuration, by provider name; a resource only names one.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from datetime import datetime
from typing import Any

import httpx

from hooks.core.facts import Measurement, QueryResult
from hooks.core.rollout import MeasurementPlan
from hooks.settings import AnalysisSettings

REMEMBERED = 4096  # finished measurements kept (one per resource rolling out is what matters)
MAX_SERIES = 100  # more than this is not "one number" by far: keep the error short


class Prometheus:
    def __init__(self, settings: AnalysisSettings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._in_flight: set[str] = set()  # resources with a measurement running
        self._done: OrderedDict[tuple[str, str], Measurement] = OrderedDict()
        self.queries = 0  # sent, for tests and metrics

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(transport=self._transport, follow_redirects=False,
                                             limits=httpx.Limits(max_connections=32, max_keepalive_connections=8))
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def measure(self, resource: str, plan: MeasurementPlan, deadline: float | None = None) -> Measurement | None:
        """The answers to `plan`'s queries, or None when this resource already has a
        measurement in flight. Waits at most the configured timeout (less when `deadline`,
        a time.monotonic(), comes sooner)."""
        remembered = self._done.get((resource, plan.key))
        if remembered is not None:
            return remembered
        if resource in self._in_flight:
            return None
        self._in_flight.add(resource)
        try:
            timeout = self.settings.timeout_seconds
            if deadline is not None:
                timeout = max(0.0, min(timeout, deadline - time.monotonic()))
            results = await self._run(plan, timeout)
        finally:
            self._in_flight.discard(resource)
        measurement = Measurement(plan.key, plan.at, results)
        self._done[(resource, plan.key)] = measurement
        while len(self._done) > REMEMBERED:
            self._done.popitem(last=False)
        return measurement

    async def _run(self, plan: MeasurementPlan, timeout: float) -> dict[str, QueryResult]:
        base = self.settings.providers.get(plan.provider)
        if base is not None:
            base = base.rstrip("/")
        if base is None:
            return {q: QueryResult(error=f"provider {plan.provider!r} is not configured") for q in plan.queries}
        queries = plan.queries
        tasks = [asyncio.ensure_future(self._query(base, q, plan.at, timeout)) for q in queries]
        done, pending = await asyncio.wait(tasks, timeout=timeout) if tasks else (set(), set())
        for task in pending:
            task.cancel()
        results = {}
        for query, task in zip(queries, tasks, strict=True):
            results[query] = task.result() if task in done else QueryResult(error=f"no answer within {timeout:.1f}s")
        return results

    async def _query(self, base: str, query: str, at: datetime, timeout: float) -> QueryResult:
        self.queries += 1
        # Prometheus durations are whole numbers with a unit.
        params = {"query": query, "time": f"{at.timestamp():.3f}", "timeout": f"{max(1, int(timeout * 1000))}ms"}
        try:
            response = await self.client().get(f"{base}/api/v1/query", params=params, timeout=timeout)
        except httpx.HTTPError as e:
            return QueryResult(error=f"Prometheus unreachable: {type(e).__name__}")
        try:
            body = response.json()
        except ValueError:
            return QueryResult(error=f"Prometheus answered HTTP {response.status_code} without JSON")
        return parse_answer(body, response.status_code)


def parse_answer(body: Any, status_code: int) -> QueryResult:
    """The values of an /api/v1/query answer: one per series of a vector, one for a scalar."""
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error") if isinstance(body, dict) else None
        return QueryResult(error=f"Prometheus: {str(error)[:200] if error else f'HTTP {status_code}'}")
    data = body.get("data")
    kind, result = (data.get("resultType"), data.get("result")) if isinstance(data, dict) else (None, None)
    try:
        if kind == "scalar" and isinstance(result, list) and len(result) == 2:
            return QueryResult((_number(result[1]),))
        if kind == "vector" and isinstance(result, list):
            if len(result) > MAX_SERIES:
                return QueryResult(tuple(math.nan for _ in range(MAX_SERIES + 1)))
            return QueryResult(tuple(_number(sample["value"][1]) for sample in result))
    except (KeyError, IndexError, TypeError, ValueError):
        return QueryResult(error="Prometheus answered a result it does not document")
    if kind in ("matrix", "string"):
        return QueryResult(error=f"the query returned a {kind}, not one number")
    return QueryResult(error="Prometheus answered a result it does not document")


def _number(text: Any) -> float:
    """Prometheus writes sample values as strings: '0.5', 'NaN', '+Inf'."""
    if not isinstance(text, str):
        raise ValueError(text)
    return float(text)
