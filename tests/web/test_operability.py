"""Limits, metrics, logs, load, workers and graceful shutdown of a real server."""

from __future__ import annotations

import concurrent.futures
import json
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hooks.settings import ServerSettings, Settings
from hooks.web.logs import FIELDS, JSONFormatter, TextFormatter

from tests import metacontroller as mc
from tests.conftest import HookServer, free_port
from tests.syncing import timeless
from tests.web.test_app import call, local_app

SPECS: list[dict[str, Any]] = [
    {"model": {"uri": f"hf://org/model-{i}"}, "replicas": i % 3 + 1,
     **({"canary": {"weight": i * 7 % 100}} if i % 2 else {}), **({"autoscaling": {}} if i % 3 == 0 else {})}
    for i in range(24)
]


def bodies() -> list[bytes]:
    return [json.dumps(mc.request(mc.parent(spec, name=f"model-{i}"))).encode() for i, spec in enumerate(SPECS)]


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def test_body_over_the_limit_is_413() -> None:
    app = local_app(Settings(server=ServerSettings(max_body_bytes=2000)))
    big = mc.request(mc.parent({"model": {"uri": "hf://a/b", "servedName": "x" * 3000}}))
    response = call(app, "POST", "/sync", big)
    assert response.status_code == 413 and response.json()["error"] == "RequestTooLarge"
    assert call(app, "POST", "/sync", mc.request(mc.parent({"model": {"uri": "hf://a/b"}}))).status_code == 200


def test_chunked_body_over_the_limit_is_413() -> None:
    server = HookServer(env={"LLMDEPLOY_MAX_BODY_BYTES": "5000"})
    try:
        server.wait_ready()

        def chunks() -> Any:
            for _ in range(10):
                yield b" " * 1000

        response = httpx.post(server.url + "/sync", content=chunks())
        assert response.status_code == 413
    finally:
        server.stop()


def test_load_answers_match_single_requests_and_metrics_add_up() -> None:
    server = HookServer(env={"LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=30) as client:
            expected = [timeless(client.post("/sync", content=b).content) for b in bodies()]
        work = bodies() * 10

        def send(body: bytes) -> tuple[int, bytes]:
            response = httpx.post(server.url + "/sync", content=body, timeout=30)
            return response.status_code, response.content

        deadline = time.monotonic() + 120
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(send, work))
        assert time.monotonic() < deadline
        assert [code for code, _ in results] == [200] * len(work)  # 8 at once is under the limit of 32
        assert [timeless(content) for _, content in results] == [expected[i % len(expected)] for i in range(len(work))]
        text = httpx.get(server.url + "/metrics").text
        assert metric(text, "llmdeploy_hook_requests_total", outcome="ok") == len(work) + len(expected)
        assert metric(text, "llmdeploy_hook_request_duration_seconds_count") == len(work) + len(expected)
        assert metric(text, "llmdeploy_resources", phase="Pending") == len(SPECS)
        assert metric(text, "llmdeploy_hook_in_flight") == 0
    finally:
        server.stop()


def test_answers_from_the_cache_are_never_turned_away() -> None:
    """A warm burst: every sync is answered on the event loop at once, none waits in flight,
    so none gets 429 (the body budget bounds what queues for the loop)."""
    server = HookServer(env={"LLMDEPLOY_MAX_IN_FLIGHT": "2", "LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready()
        expected = {b: timeless(httpx.post(server.url + "/sync", content=b, timeout=30).content) for b in bodies()}
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(lambda b: (httpx.post(server.url + "/sync", content=b, timeout=30), b),
                                    bodies() * 4))
        assert [r.status_code for r, _ in results] == [200] * len(results)
        assert all(timeless(r.content) == expected[b] for r, b in results)
    finally:
        server.stop()


def test_overload_is_answered_429_with_retry_after() -> None:
    # Budgets far above any render here: the cold syncs wait for renders, never time out.
    server = HookServer(env={"LLMDEPLOY_MAX_IN_FLIGHT": "2", "LLMDEPLOY_LOG_LEVEL": "WARNING",
                             "LLMDEPLOY_RENDER_TIMEOUT_SECONDS": "20", "LLMDEPLOY_SYNC_DEADLINE_SECONDS": "25"})
    try:
        server.wait_ready()
        # Cold: each resource's first syncs wait for a render, so syncs are in flight at once
        # (an answer from the cache is given on the event loop at once and never waits).
        work = bodies() * 4

        def send(body: bytes) -> tuple[int, bytes, str | None, bytes]:
            response = httpx.post(server.url + "/sync", content=body, timeout=30)
            return response.status_code, response.content, response.headers.get("retry-after"), body

        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(send, work))
        expected = {b: timeless(httpx.post(server.url + "/sync", content=b, timeout=30).content) for b in bodies()}
        codes = [code for code, *_ in results]
        assert set(codes) <= {200, 429} and codes.count(429) > 0 and codes.count(200) >= 2
        for code, content, retry_after, body in results:
            if code == 200:
                assert timeless(content) == expected[body]
            else:
                assert retry_after == "1" and json.loads(content)["error"] == "TooManyRequests"
        text = httpx.get(server.url + "/metrics").text
        assert metric(text, "llmdeploy_hook_requests_total", outcome="overloaded") == codes.count(429)
        assert metric(text, "llmdeploy_hook_requests_total", outcome="ok") == codes.count(200) + len(expected)
    finally:
        server.stop()


SLOW_TEMPLATE = ("{% for i in range(800) %}{% for j in range(800) %}{% endfor %}{% endfor %}"
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}, labels: {{ view.labels }}}\n")


def test_sigterm_during_a_burst_loses_no_accepted_request(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(SLOW_TEMPLATE)  # every sync takes a while: the burst queues
    server = HookServer(env={"LLMDEPLOY_LOG_LEVEL": "WARNING", "LLMDEPLOY_TEMPLATES_DIR": str(tmp_path)})
    try:
        server.wait_ready("/readyz")
        work = bodies()[:16]
        # Clients made beforehand: making one (its TLS context) takes long enough under load
        # that a burst of them would not connect before the signal.
        clients = [httpx.Client(timeout=60) for _ in work]

        def send(client: httpx.Client, body: bytes) -> int | str:
            try:
                return client.post(server.url + "/sync", content=body).status_code
            except httpx.ConnectError:
                return "not accepted"
            except httpx.HTTPError as e:
                return f"accepted, then lost: {type(e).__name__}"
            finally:
                client.close()

        started = time.monotonic()
        httpx.post(server.url + "/sync", content=bodies()[20], timeout=60)
        one_sync = time.monotonic() - started
        signal_after = 0.5
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(work)) as pool:
            futures = [pool.submit(send, c, b) for c, b in zip(clients, work)]
            time.sleep(signal_after)  # the burst is queued: it needs len(work) * one_sync to finish
            server.process.send_signal(signal.SIGTERM)
            outcomes = [f.result() for f in futures]
        assert [o for o in outcomes if o not in (200, "not accepted")] == []
        finished_before_signal = signal_after / one_sync + 1
        assert outcomes.count(200) > finished_before_signal, (outcomes, one_sync)
        assert server.process.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises it when done
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.url + "/healthz")
    finally:
        server.stop()


def test_one_json_log_line_per_sync() -> None:
    server = HookServer(env={"LLMDEPLOY_LOG_FORMAT": "json"})
    try:
        server.wait_ready()
        httpx.post(server.url + "/sync", content=bodies()[1], headers={"x-request-id": "req-42"})
        httpx.post(server.url + "/sync", content=b"{")
    finally:
        output = server.stop()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    syncs = [line for line in lines if line["message"] == "sync"]
    assert len(syncs) == 2
    ok, bad = syncs
    assert ok["parent"] == "ml/model-1" and ok["generation"] == 1 and ok["outcome"] == "ok"
    assert ok["children"] == 6 and ok["request_id"] == "req-42" and ok["duration_ms"] > 0
    assert bad["outcome"] == "bad_request" and bad["status"] == 400 and re.fullmatch(r"[0-9a-f]{32}", bad["request_id"])


def test_text_logs_for_people() -> None:
    import logging

    record = logging.LogRecord("llmdeploy", logging.INFO, __file__, 1, "sync", None, None)
    setattr(record, FIELDS, {"parent": "ml/a", "outcome": "ok"})
    assert TextFormatter().format(record).endswith("sync  parent=ml/a outcome=ok")
    assert json.loads(JSONFormatter().format(record))["parent"] == "ml/a"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_metrics_on_a_port_of_their_own(workers: str) -> None:
    port = free_port()
    server = HookServer(args=["--workers", workers], env={"LLMDEPLOY_METRICS_PORT": str(port),
                                                         "LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready("/readyz", timeout=60)
        for body in bodies()[:3]:
            assert httpx.post(server.url + "/sync", content=body, headers={"connection": "close"}).status_code == 200
        text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert metric(text, "llmdeploy_hook_requests_total", outcome="ok") == 3
    finally:
        server.stop()


def test_workers_answer_identically_and_metrics_sum() -> None:
    server = HookServer(args=["--workers", "2"], env={"LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready("/readyz", timeout=60)
        body = bodies()[3]
        answers = [timeless(httpx.post(server.url + "/sync", content=body, headers={"connection": "close"}).content)
                   for _ in range(40)]
        assert all(a == answers[0] for a in answers)
        text = httpx.get(server.url + "/metrics").text
        assert metric(text, "llmdeploy_hook_requests_total", outcome="ok") == 40
    finally:
        server.stop()


# Measured by test_memory_stays_within_what_admission_allows (MiB, and MiB per MiB of body).
SERVER_START_MIB = 90
RENDER_WORKER_START_MIB = 70
PER_BODY_BYTE = 6


def process_tree_rss_mib(pid: int) -> dict[int, int]:
    """Resident memory of a process and of its children, per process."""
    found = {pid}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    sizes = {}
    for process in found:
        try:
            status = Path(f"/proc/{process}/status").read_text()
        except OSError:
            continue
        sizes[process] = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) >> 10
    return sizes


def test_memory_stays_within_what_admission_allows() -> None:
    """Twelve 8 MiB syncs at once (more than the body budget admits): the server grows by at
    most PER_BODY_BYTE times the budget, and every sync is answered 200 or 429."""
    big = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "big", "namespace": "ml", "annotations": {"blob": "x" * (8 << 20)}}}
    body = json.dumps(mc.request(mc.parent({"model": {"uri": "hf://org/model"}}), [big])).encode()
    server = HookServer(env={"LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready("/readyz")
        time.sleep(0.5)
        start = process_tree_rss_mib(server.process.pid)
        assert start[server.process.pid] <= SERVER_START_MIB
        assert all(size <= RENDER_WORKER_START_MIB for pid, size in start.items() if pid != server.process.pid)
        peak = [0]
        done = False

        def sample() -> None:
            while not done:
                peak[0] = max(peak[0], process_tree_rss_mib(server.process.pid).get(server.process.pid, 0))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
            codes = list(pool.map(lambda _: httpx.post(server.url + "/sync", content=body, timeout=60).status_code,
                                  range(24)))
        done = True
        sampler.join()
        assert set(codes) <= {200, 429} and 200 in codes
        budget_mib = Settings().server.max_bodies_bytes >> 20
        assert peak[0] - start[server.process.pid] <= PER_BODY_BYTE * budget_mib, (peak[0], start)
    finally:
        server.stop()


def test_each_resource_counts_once_across_workers() -> None:
    server = HookServer(args=["--workers", "2"], env={"LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready("/readyz", timeout=60)
        for _ in range(4):  # every resource reaches both workers, most likely
            for body in bodies()[:10]:
                assert httpx.post(server.url + "/sync", content=body, headers={"connection": "close"}).status_code == 200
        time.sleep(2.5)  # each worker writes its book at most once a second
        text = httpx.get(server.url + "/metrics").text
        assert metric(text, "llmdeploy_resources", phase="Pending") == 10
        assert metric(text, "llmdeploy_resources") == 10
    finally:
        server.stop()


def test_a_resource_counts_in_its_latest_phase_only() -> None:
    from hooks.web.phases import PhaseBook, counts

    book = PhaseBook()
    book.saw("ml/a", "Pending")
    book.saw("ml/b", "Pending")
    book.saw("ml/a", "Ready")
    other = {"ml/a": ("Degraded", 0.0), "ml/c": ("Invalid", 1.0)}  # another worker, older news of ml/a
    assert counts([book.snapshot(), other]) == {"Pending": 1, "Progressing": 0, "Ready": 1, "Degraded": 0,
                                                 "Invalid": 1, "Paused": 0, "Terminating": 0}
