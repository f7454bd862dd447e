"""Answers given again to byte-identical requests (`AnswerMemory`): only answers that hold at
any time, only to the same bytes under the same template set, and byte for byte what the sync
would answer."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import httpx
import pytest
from hooks.canonical import dumps
from hooks.core.facts import Facts
from hooks.edge.templates import read_sources
from hooks.settings import ROUTERS, Settings
from hooks.web.answer import Answer
from hooks.web.cache import AnswerMemory
from hooks.web.logs import FIELDS

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.golden import load
from tests.syncing import NOW, local_hook
from tests.web.test_app import call, local_app, post
from tests.web.test_operability import metric

# Resources synced until nothing changes (their answers were recorded at another time).
SETTLED = [case for case in load("examples") if case["name"].endswith("/settled")]
REPLAYED = "llmdeploy_answers_replayed_total"


def test_a_settled_resource_resynced_over_http_gets_its_recorded_answer_again() -> None:
    """A real server, configured as the recorded answers were made (every router, a
    Prometheus named), and another clock: the first sync is a sync, the second a replay, and
    both are the answer recorded months ago."""
    server = HookServer({"LLMDEPLOY_ROUTERS": ",".join(ROUTERS), "LLMDEPLOY_PROMETHEUS_URL": "http://127.0.0.1:9"})
    try:
        server.wait_ready("/readyz")
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for case in SETTLED:
                for replays in (0, 1):
                    answered = post(client, case["request"])
                    assert answered.status_code == 200 and answered.text == case["body"], case["name"]
                    assert metric(client.get("/metrics").text, REPLAYED) == SETTLED.index(case) + replays
    finally:
        server.stop()


def test_an_answer_that_read_the_clock_is_synced_every_time(caplog: pytest.LogCaptureFixture) -> None:
    """A new resource's conditions are stamped now: its next sync is a sync."""
    app = local_app(Settings())
    request = mc.request(mc.parent({"model": {"uri": "hf://org/model"}}))
    with caplog.at_level(logging.INFO, logger="llmdeploy"):
        first, second = call(app, "POST", "/sync", request), call(app, "POST", "/sync", request)
    assert first.status_code == second.status_code == 200
    assert len(app.state.hook.answers) == 0 and app.state.hook.answers.hits == 0
    assert not any(getattr(r, FIELDS, {}).get("replayed") for r in caplog.records)


def test_a_replay_is_logged_and_counted_as_its_outcome(caplog: pytest.LogCaptureFixture) -> None:
    app = local_app(Settings())
    request = SETTLED[0]["request"]
    with caplog.at_level(logging.INFO, logger="llmdeploy"):
        first, second = call(app, "POST", "/sync", request), call(app, "POST", "/sync", request)
    assert first.content == second.content
    logged = [getattr(r, FIELDS) for r in caplog.records if r.getMessage() == "sync"]
    assert [f.get("replayed", False) for f in logged] == [False, True]
    assert logged[0]["parent"] == logged[1]["parent"] and logged[0]["phase"] == logged[1]["phase"] == "Ready"
    assert logged[1]["outcome"] == "ok" and logged[1]["children"] == logged[0]["children"]
    metrics = call(app, "GET", "/metrics").text
    assert metric(metrics, REPLAYED) == 1 and metric(metrics, "llmdeploy_hook_requests_total", outcome="ok") == 2


def test_only_the_same_bytes_are_replayed() -> None:
    """Any other byte is another request: synced (the desired state may still come from the
    cache), and its answer remembered in turn."""
    hook = local_hook()
    request = SETTLED[0]["request"]
    body = dumps(request)
    answered = hook.respond(body, Facts(NOW)).body
    assert hook.respond(body, Facts(NOW)).body == answered and hook.answers.hits == 1
    moved = json.loads(body)
    moved["parent"]["metadata"]["resourceVersion"] = "7"
    spaced = body.replace(b'"spec":', b'"spec": ')
    for other in (dumps(moved), spaced):
        assert hook.respond(other, Facts(NOW)).body == answered
    assert hook.answers.hits == 1 and len(hook.answers) == 3


def test_a_new_template_set_is_never_answered_from_the_old_one(tmp_path: Path) -> None:
    hook = local_hook()
    body = dumps(SETTLED[0]["request"])
    before = hook.respond(body, Facts(NOW)).body
    assert hook.respond(body, Facts(NOW)).body == before and hook.answers.hits == 1
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n")
    hook.install(hook.renderer.load(read_sources(tmp_path)))
    after = json.loads(hook.respond(body, Facts(NOW)).body)
    assert hook.answers.hits == 1 and after != json.loads(before)
    assert any(c["kind"] == "ConfigMap" for c in after["children"])


def test_the_memory_is_bounded_in_entries_and_bytes() -> None:
    def answer(i: int) -> bytes:
        return random.Random(i).randbytes(3000)  # as good as incompressible

    by_count, by_bytes = AnswerMemory(size=10), AnswerMemory(size=1000, max_bytes=256 * 1024)
    for memory in (by_count, by_bytes):
        for i in range(100):
            memory.put(AnswerMemory.key(str(i).encode(), "t"), Answer(200, answer(i), "ok", {}))
    assert len(by_count) == 10
    assert by_bytes.bytes <= 256 * 1024 and 50 < len(by_bytes) < 100
    kept = by_count.get(AnswerMemory.key(b"99", "t"))
    assert kept is not None and kept.body == answer(99) and by_count.get(AnswerMemory.key(b"0", "t")) is None


def test_a_large_request_is_replayed_too() -> None:
    """A body over 256 KiB is hashed and answered on a worker thread, not the event loop."""
    from hooks.web.app import INLINE_BODY_BYTES

    request = json.loads(json.dumps(SETTLED[0]["request"]))
    service = next(c for group in request["children"].values() for c in group.values() if c["kind"] == "Service")
    service["metadata"]["annotations"]["example.com/notes"] = "x" * INLINE_BODY_BYTES
    app = local_app(Settings())
    first, second = call(app, "POST", "/sync", request), call(app, "POST", "/sync", request)
    assert len(json.dumps(request)) > INLINE_BODY_BYTES
    assert first.status_code == second.status_code == 200 and first.content == second.content
    assert metric(call(app, "GET", "/metrics").text, REPLAYED) == 1
