"""Over HTTP, on a real server: one resource whose render runs away gets a non-200 within
Metacontroller's 10 s, and every other resource is answered as usual meanwhile."""

from __future__ import annotations

import concurrent.futures
import json
import time
from pathlib import Path

import httpx
import pytest

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.rendering.escapes import BOMBS

BOMB = dict(BOMBS)


def body(name: str) -> bytes:
    return json.dumps(mc.request(mc.parent({"model": {"uri": "hf://org/model"}}, name=name))).encode()


@pytest.mark.parametrize(("bomb", "outlasts_the_others"), [("range_nested", True), ("ns_doubling_tilde", False)])
def test_a_runaway_render_answers_non_200_and_others_go_on(tmp_path: Path, bomb: str,
                                                           outlasts_the_others: bool) -> None:
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}, labels: {{ view.labels }}}\n"
        f'data: {{v: "{{% if view.name == "bomb" %}}{BOMB[bomb]}{{% endif %}}"}}\n')
    server = HookServer(env={"LLMDEPLOY_TEMPLATES_DIR": str(tmp_path), "LLMDEPLOY_RENDER_TIMEOUT_SECONDS": "2",
                             "LLMDEPLOY_RENDER_MEMORY_MIB": "256", "LLMDEPLOY_LOG_LEVEL": "WARNING"})
    try:
        server.wait_ready("/readyz")
        finished: list[str] = []

        def sync(name: str) -> httpx.Response:
            response = httpx.post(server.url + "/sync", content=body(name), timeout=30)
            finished.append(name)
            return response

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            started = time.monotonic()
            runaway = pool.submit(sync, "bomb")
            time.sleep(0.3)  # the runaway holds a render worker
            calm = [pool.submit(sync, f"calm-{i}") for i in range(6)]
            answers = [c.result() for c in calm]
            bombed = runaway.result()
            elapsed = time.monotonic() - started
        assert [a.status_code for a in answers] == [200] * 6
        if outlasts_the_others:  # runs until its budget is spent: the others were answered meanwhile
            assert finished[-1] == "bomb", finished
        assert bombed.status_code == 500 and bombed.json()["error"] == "TemplateError"
        assert "ml/bomb" in bombed.json()["message"] and elapsed < 10
        assert httpx.get(server.url + "/healthz").status_code == 200
        again = httpx.post(server.url + "/sync", content=body("bomb"), timeout=30)
        assert again.status_code == 500  # a retry changes nothing either
    finally:
        server.stop()
