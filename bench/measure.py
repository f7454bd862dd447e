"""The measurements: in-process against the JSON floor, over HTTP against /healthz, growth."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, MutableMapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
from hooks.canonical import dumps, loads
from hooks.core.facts import Facts
from hooks.edge.templates import read_sources
from hooks.settings import ServerSettings
from hooks.web.cache import AnswerMemory, DesiredCache
from hooks.web.hook import Hook as WebHook
from hooks.web.metrics import Metrics
from hooks.workers.renderer import LocalRenderer

from bench import corpus

ROOT = Path(__file__).resolve().parent.parent
RUNNING = "running: canary, A/B, HPA, 7 children"  # the resource the HTTP path is measured with (a resync)
CHANGED = "running, its Deployment's status written again"  # the same, byte for byte new: synced
VARIED = b"1242950"  # the children's resourceVersion in the running resource: what a changed sync changes
Row = dict[str, Any]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], object], iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


class Hook:
    """The web layer's own answer path (decode, read the clock, sync, encode, metrics) minus
    HTTP, with the desired-state cache, and the same without it (a cache that keeps nothing)."""

    def __init__(self) -> None:
        settings = corpus.ROLLOUT_SETTINGS  # a Prometheus named (never called: facts are given)
        renderer = LocalRenderer(settings.children)
        templates = renderer.load(read_sources(None))
        self.cached = WebHook(settings, renderer, Metrics())
        self.uncached = WebHook(dataclasses.replace(settings, server=ServerSettings(cache_size=0)), renderer,
                                Metrics())
        for hook in (self.cached, self.uncached):
            hook.install(templates)

    @property
    def cache(self) -> DesiredCache:
        return self.cached.cache

    @property
    def answers(self) -> AnswerMemory:
        return self.cached.answers

    def answer(self, body: bytes, cache: bool = True, facts: Facts | None = None) -> bytes:
        hook = self.cached if cache else self.uncached
        return hook.respond(body, facts or Facts(datetime.now(timezone.utc))).body


def in_process(iterations: int) -> list[Row]:
    hook = Hook()
    rows = []
    rolling, measured = corpus.rolling_resource()
    between = Facts(measured.now - timedelta(seconds=30))
    running = corpus.running_resource()
    for name, raw, facts in (
            ("new resource", corpus.new_resource(), None),
            (RUNNING, running, None),
            (CHANGED, running, None),
            ("invalid spec, 7 children", corpus.invalid_with_children(), None),
            ("rollout step, between measurements", rolling, between),
            ("rollout step, measurement answered", rolling, measured)):
        body = dumps(raw)
        response = loads(hook.answer(body, facts=facts))
        assert "error" not in response, response
        # A changed request is new every time (never answered again from memory).
        bodies = ([dumps(corpus.changed(raw, i)) for i in range(iterations)] if name == CHANGED
                  else [body] * iterations)
        sent = iter(bodies)
        hook_times = timed(lambda f=facts: hook.answer(next(sent), facts=f), iterations)  # type: ignore[misc]
        floor_times = timed(lambda b=body, r=response: dumps(loads(b) and r), iterations)  # type: ignore[misc]
        cold = timed(lambda b=body, f=facts: hook.answer(b, cache=False, facts=f),  # type: ignore[misc]
                     max(iterations // 20, 5))
        p50, floor = percentile(hook_times, 0.5), percentile(floor_times, 0.5)
        rows.append({"request": name, "bytes_in": len(body), "hook_p50_us": p50 * 1e6,
                     "hook_p99_us": percentile(hook_times, 0.99) * 1e6, "floor_p50_us": floor * 1e6,
                     "floor_p99_us": percentile(floor_times, 0.99) * 1e6, "ratio": p50 / floor,
                     "uncached_p50_us": percentile(cold, 0.5) * 1e6})
    return rows


def through_asgi(iterations: int) -> Row:
    """The running resource's sync through the whole app in this process, without sockets:
    what the web layer adds to `Hook.respond` (routing, admission, the event loop)."""
    import asyncio

    from hooks.web.app import create_app

    settings = corpus.ROLLOUT_SETTINGS
    app = create_app(settings, renderer=LocalRenderer(settings.children))
    body = dumps(corpus.running_resource())
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/sync", "raw_path": b"/sync", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}

    async def one() -> None:
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        statuses = []

        async def receive() -> dict[str, Any]:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(dict(scope), receive, send)
        assert statuses == [200], statuses

    async def run() -> list[float]:
        await one()  # renders, then answers from the cache
        samples = []
        for _ in range(iterations):
            started = time.perf_counter()
            await one()
            samples.append(time.perf_counter() - started)
        return samples

    samples = asyncio.run(run())
    return {"request": RUNNING, "p50_us": percentile(samples, 0.5) * 1e6, "p99_us": percentile(samples, 0.99) * 1e6}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """`llmdeploy serve` with one worker, as in the cluster."""

    def __init__(self) -> None:
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "llmdeploy"), "serve", "--port", str(self.port)],
            env={**os.environ, "LLMDEPLOY_LOG_LEVEL": "WARNING"}, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.1)

    def memory_kib(self) -> dict[str, int]:
        status = Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
        return {k: int(line.split()[1]) for line in status for k in ("VmRSS", "VmHWM") if line.startswith(k + ":")}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def load(port: int, method: str, path: str, body: bytes, concurrency: int, seconds: float, vary: bytes = b"") -> Row:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(body)
        f.flush()
        out = subprocess.run([sys.executable, "-m", "bench.loadgen", str(port), method, path,
                              f.name if body else "-", str(concurrency), str(seconds), *([vary.decode()] if vary else [])],
                             capture_output=True, text=True, check=True, cwd=ROOT)
    result: Row = json.loads(out.stdout)
    return result


def over_http(seconds: float) -> list[Row]:
    """The running resource's resync (answered again from memory), the same byte for byte
    new every time (synced, its children from the cache), and /healthz, on one server."""
    server = Server()
    body = dumps(corpus.running_resource())
    rows = []
    try:
        for _ in range(2):  # rendered, then remembered
            httpx.post(f"http://127.0.0.1:{server.port}/sync", content=body)
        for concurrency in (8, 32):
            sync_run = load(server.port, "POST", "/sync", body, concurrency, seconds)
            changed = load(server.port, "POST", "/sync", body, concurrency, seconds, VARIED)
            health = load(server.port, "GET", "/healthz", b"", concurrency, seconds)
            rows.append({"concurrency": concurrency, "sync_rps": sync_run["rps"], "sync_p50_ms": sync_run["p50_ms"],
                         "sync_p99_ms": sync_run["p99_ms"], "sync_statuses": sync_run["statuses"],
                         "changed_rps": changed["rps"], "changed_p99_ms": changed["p99_ms"],
                         "changed_statuses": changed["statuses"],
                         "healthz_rps": health["rps"], "healthz_p50_ms": health["p50_ms"],
                         "healthz_p99_ms": health["p99_ms"], "ratio": sync_run["rps"] / health["rps"]})
    finally:
        server.stop()
    return rows


def growth_by_size(sizes: list[int], iterations: int) -> list[Row]:
    hook = Hook()
    rows = []
    for size in sizes:
        body = dumps(corpus.grown(size))
        assert b'"error"' not in hook.answer(body)[:20]
        cold = timed(lambda b=body: hook.answer(b, cache=False), max(iterations // 10, 3))  # type: ignore[misc]
        warm = timed(lambda b=body: hook.answer(b), iterations)  # type: ignore[misc]
        rows.append({"size": size, "bytes_in": len(body), "uncached_p50_us": percentile(cold, 0.5) * 1e6,
                     "cached_p50_us": percentile(warm, 0.5) * 1e6})
    return rows


def growth_by_fleet(fleet_sizes: list[int], syncs: int) -> list[Row]:
    rows = []
    for n in fleet_sizes:
        hook = Hook()
        bodies = [corpus.fleet_member(i) for i in range(n)]
        for body in bodies:  # every resource synced once: the cache holds the fleet
            hook.answer(body)
        count = max(syncs, n)
        started = time.perf_counter()
        for i in range(count):
            hook.answer(bodies[i % n])
        per_sync = (time.perf_counter() - started) / count
        rows.append({"resources": n, "per_sync_us": per_sync * 1e6, "cached": len(hook.cache),
                     "answers": len(hook.answers)})
    return rows


def server_memory(resources: int) -> Row:
    server = Server()
    try:
        before = server.memory_kib()
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as client:
            for round_ in range(2):
                for i in range(resources):
                    client.post("/sync", content=corpus.fleet_member(i))
                if round_ == 0:
                    first = server.memory_kib()
        return {"resources": resources, "rss_start_mib": before["VmRSS"] / 1024,
                "rss_after_first_pass_mib": first["VmRSS"] / 1024,
                "rss_after_second_pass_mib": server.memory_kib()["VmRSS"] / 1024,
                "peak_mib": server.memory_kib()["VmHWM"] / 1024}
    finally:
        server.stop()
