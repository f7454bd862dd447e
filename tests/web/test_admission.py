"""Admission on a real server: slow or vanishing clients hold nothing a complete sync needs,
bodies have a deadline and a shared byte budget, and odd headers are a 401, not a 500."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.web.test_operability import metric

BODY = json.dumps(mc.request(mc.parent({"model": {"uri": "hf://org/model"}}))).encode()


def stalled(port: int, declared: int = 100_000, sent: bytes = b"{") -> socket.socket:
    """A client that declares a body and sends only the start of it."""
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {declared}\r\n\r\n".encode() + sent)
    return conn


def status_of(conn: socket.socket) -> int:
    conn.settimeout(30)
    head = conn.recv(4096).split(b"\r\n", 1)[0]
    return int(head.split()[1])


@pytest.fixture()
def server() -> Iterator[HookServer]:
    hook = HookServer(env={"LLMDEPLOY_BODY_TIMEOUT_SECONDS": "2", "LLMDEPLOY_MAX_IN_FLIGHT": "4",
                           "LLMDEPLOY_LOG_FORMAT": "json"})
    hook.wait_ready("/readyz")
    yield hook
    hook.stop()


def test_slow_bodies_do_not_starve_complete_syncs(server: HookServer) -> None:
    slow = [stalled(server.port) for _ in range(40)]  # ten times the in-flight limit
    try:
        time.sleep(0.3)
        for _ in range(5):
            assert httpx.post(server.url + "/sync", content=BODY, timeout=10).status_code == 200
        assert {status_of(conn) for conn in slow} == {408}  # cut off at the body deadline
    finally:
        for conn in slow:
            conn.close()
    text = httpx.get(server.url + "/metrics").text
    assert metric(text, "llmdeploy_hook_requests_total", outcome="timeout") == 40


def test_a_client_that_goes_away_is_counted_not_an_error(server: HookServer) -> None:
    for _ in range(3):
        stalled(server.port, sent=BODY[:100]).close()
    time.sleep(0.5)
    assert httpx.post(server.url + "/sync", content=BODY, timeout=10).status_code == 200
    text = httpx.get(server.url + "/metrics").text
    assert metric(text, "llmdeploy_hook_requests_total", outcome="disconnected") == 3
    output = server.stop()
    assert "Traceback" not in output and '"level": "error"' not in output


def test_bodies_share_a_byte_budget() -> None:
    hook = HookServer(env={"LLMDEPLOY_MAX_BODY_BYTES": str(len(BODY) * 2),
                           "LLMDEPLOY_MAX_BODIES_BYTES": str(len(BODY) * 2), "LLMDEPLOY_BODY_TIMEOUT_SECONDS": "3"})
    try:
        hook.wait_ready("/readyz")
        holding = stalled(hook.port, declared=len(BODY) * 2, sent=BODY + b" " * 10)  # holds half the budget+
        time.sleep(0.3)
        refused = httpx.post(hook.url + "/sync", content=BODY, timeout=10)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        holding.close()
        time.sleep(0.3)
        assert httpx.post(hook.url + "/sync", content=BODY, timeout=10).status_code == 200
    finally:
        hook.stop()


def test_a_non_ascii_authorization_header_is_a_401(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    hook = HookServer(env={"LLMDEPLOY_AUTH_TOKEN_FILE": str(token)})
    try:
        hook.wait_ready()
        for header in ["Bearer \xe9t\xe9", "Bearer s3cr\xe9t", "Bearer " + "\xff" * 3, "Basic \xe9", "\xe9"]:
            conn = socket.create_connection(("127.0.0.1", hook.port))
            conn.sendall(b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
                         + b"Authorization: " + header.encode("latin-1") + b"\r\n"
                         + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY)
            assert status_of(conn) == 401, header
            conn.close()
        ok = httpx.post(hook.url + "/sync", content=BODY, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    finally:
        output = hook.stop()
    assert "Traceback" not in output


def test_stalled_large_bodies_leave_room_for_complete_syncs() -> None:
    limit = 1 << 20
    hook = HookServer(env={"LLMDEPLOY_MAX_BODY_BYTES": str(limit), "LLMDEPLOY_MAX_BODIES_BYTES": str(2 * limit),
                           "LLMDEPLOY_BODY_TIMEOUT_SECONDS": "5"})
    try:
        hook.wait_ready("/readyz")
        holders = [stalled(hook.port, declared=limit, sent=b" " * (limit - 1)) for _ in range(4)]
        time.sleep(0.5)
        codes = [httpx.post(hook.url + "/sync", content=BODY, timeout=10).status_code for _ in range(10)]
        assert codes == [200] * 10
        for conn in holders:
            conn.close()
    finally:
        hook.stop()


def test_an_answer_keeps_its_bytes_held_until_it_is_sent() -> None:
    import anyio
    from hooks.web.admission import BodyBudget, Held, HeldResponse

    budget = BodyBudget(1000, 1000, 5)
    held = Held(budget)
    budget._take(held, 600)
    sent = anyio.Event()
    seen: list[int] = []

    async def send(message: dict[str, object]) -> None:
        seen.append(budget.held)
        if message["type"] == "http.response.body":
            await sent.wait()  # a client that does not read

    async def respond() -> None:
        await HeldResponse(b"{}", 200, {}, held, 5)({"type": "http"}, None, send)  # type: ignore[arg-type]

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(respond)
            await anyio.sleep(0.1)
            assert budget.held == 600  # still held while the answer waits
            sent.set()
        assert budget.held == 0 and seen == [600, 600]

    anyio.run(scenario)
