"""Rollouts through the web layer: `llmdeploy serve` measuring on a real Prometheus over HTTP,
and a Prometheus that hangs delaying no other resource's sync."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from hooks.edge.gather import FactGatherer
from hooks.edge.prometheus import Prometheus
from hooks.settings import Settings
from hooks.web.app import create_app
from hooks.workers.renderer import LocalRenderer

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.promserver import PrometheusServer, counter, histogram
from tests.rollouts import START, canary_spec

JSON = dict[str, Any]
STEPS = [{"weight": 50, "pauseSeconds": 0}]
ANALYSIS = {"intervalSeconds": 10, "windowSeconds": 60}
SPEC, NEXT = canary_spec("1", steps=STEPS, analysis=ANALYSIS), canary_spec("2", steps=STEPS, analysis=ANALYSIS)


class Cluster:
    """Metacontroller's side of a few syncs: apply the answer, keep the status."""

    def __init__(self, sync: Any) -> None:
        self.sync = sync
        self.cluster = mc.Cluster()
        self.status: JSON | None = None
        self.spec = SPEC

    def once(self, generation: int = 1) -> JSON:
        parent = mc.parent(self.spec, generation=generation, status=self.status)
        body: JSON = self.sync(mc.request(parent, self.cluster.observed()))
        self.cluster.apply(body["children"])
        self.cluster.roll_out()
        self.status = body["status"]
        return body


@pytest.fixture
def prometheus_now() -> Iterator[PrometheusServer]:
    """Healthy vLLM metrics for both tracks, from an hour ago to a few minutes from now."""
    begin, end = time.time() - 3600, time.time() + 300
    series = []
    for track in ("stable", "canary"):
        workload = {"reporter": "destination", "destination_workload_namespace": "ml",
                    "destination_workload": f"llama3-{track}"}
        pod = {"namespace": "ml", "pod": f"llama3-{track}-5d8f7c9b4-abcde"}
        series += [counter("istio_requests_total", {**workload, "response_code": "200"}, begin, end, 5, 10.0),
                   *histogram("vllm:time_to_first_token_seconds", pod, [0.1, 0.5, 1, 5], begin, end, 5, [0.2, 0.3])]
    with PrometheusServer(series) as server:
        yield server


def test_the_server_measures_on_prometheus_and_promotes(prometheus_now: PrometheusServer) -> None:
    hook = HookServer(env={"LLMDEPLOY_PROMETHEUS_URL": prometheus_now.url})
    try:
        hook.wait_ready("/readyz")
        with httpx.Client(base_url=hook.url, timeout=15) as client:
            def sync(request: JSON) -> JSON:
                response = client.post("/sync", json=request)
                assert response.status_code == 200, response.text
                body: JSON = response.json()
                return body

            cluster = Cluster(sync)
            cluster.once()
            cluster.once()
            cluster.spec = NEXT
            started = cluster.once(generation=2)
            assert started["status"]["rollout"]["phase"] == "Progressing"
            in_force = cluster.once(generation=2)
            assert in_force["status"]["traffic"]["canary"] == 50
            assert 9 <= in_force["resyncAfterSeconds"] <= 10, "called back for the first measurement"
            time.sleep(in_force["resyncAfterSeconds"])
            measured = cluster.once(generation=2)
    finally:
        hook.stop()
    rollout = measured["status"]["rollout"]
    assert rollout["phase"] == "Promoting", rollout
    checks = {c["name"]: c for c in rollout["analysis"]["checks"]}
    assert checks["error-rate"]["value"] == 0 and checks["error-rate"]["result"] == "Passed"
    assert checks["ttft-p95"]["stableValue"] > 0
    assert checks["ttft-p95"]["value"] == pytest.approx(checks["ttft-p95"]["stableValue"])


class Hanging:
    """A 'Prometheus' that accepts connections and never answers."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.held:
            connection.close()


async def timed_sync(client: httpx.AsyncClient, request: JSON) -> tuple[float, JSON]:
    """One sync through the app: its seconds and its 200 answer."""
    started = time.monotonic()
    response = await client.post("/sync", content=json.dumps(request))
    assert response.status_code == 200, response.text
    return time.monotonic() - started, response.json()


def test_a_hanging_prometheus_delays_no_other_resource() -> None:
    hanging = Hanging()
    clock = [START]
    settings = Settings.with_prometheus({"default": hanging.url}, timeout_seconds=2.0)
    facts = FactGatherer(clock=lambda: clock[0], prometheus=Prometheus(settings.analysis))
    app = create_app(settings, renderer=LocalRenderer(settings.children), facts=facts)

    async def scenario() -> tuple[tuple[float, JSON], list[tuple[float, JSON]]]:
        try:
            return await measured()
        finally:  # what the app's lifespan does on shutdown (ASGITransport runs no lifespan)
            await facts.aclose()

    async def measured() -> tuple[tuple[float, JSON], list[tuple[float, JSON]]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hook", timeout=15) as client:
            async def sync(request: JSON) -> JSON:
                return (await timed_sync(client, request))[1]

            cluster = mc.Cluster()
            status: JSON | None = None
            for generation, spec in ((1, SPEC), (1, SPEC), (2, NEXT), (2, NEXT)):
                body = await sync(mc.request(mc.parent(spec, generation=generation, status=status),
                                             cluster.observed()))
                cluster.apply(body["children"])
                cluster.roll_out()
                status = body["status"]
            assert status is not None and status["rollout"]["weight"] == 50
            clock[0] = START + timedelta(seconds=11)  # a measurement is due
            due = mc.request(mc.parent(NEXT, generation=2, status=status), cluster.observed())
            others = [mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, name=f"other-{i}")) for i in range(5)]
            slow = asyncio.ensure_future(timed_sync(client, due))
            await asyncio.sleep(0.05)
            fast = await asyncio.gather(*(timed_sync(client, r) for r in others))
            return await slow, fast

    try:
        (slow_seconds, slow_body), fast = asyncio.run(scenario())
    finally:
        hanging.close()
    assert all(seconds < 1.5 for seconds, _ in fast), [s for s, _ in fast]
    assert 1.5 <= slow_seconds < 8, "bounded by the Prometheus timeout, well inside Metacontroller's 10 s"
    analysis = slow_body["status"]["rollout"]["analysis"]
    assert analysis["result"] == "Inconclusive" and analysis["failures"] == 0
    assert all("no answer within" in c["message"] or "unreachable" in c["message"] for c in analysis["checks"])
