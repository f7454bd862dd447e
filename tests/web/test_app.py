"""The web layer: in-process for the edge cases, and a real uvicorn on 127.0.0.1 over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import hooks.web.hook
import httpx
import pytest
from fastapi import FastAPI
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION
from hooks.rendering.templateset import shipped_templates_dir
from hooks.settings import Settings, TemplateSettings
from hooks.web.app import create_app
from hooks.workers.renderer import LocalRenderer

from tests import metacontroller as mc
from tests.conftest import HookServer, load_sample
from tests.syncing import timeless

SPEC = {"model": {"uri": "hf://org/model"}, "canary": {"weight": 10}}

MALFORMED: list[tuple[bytes, str]] = [
    (b"", "InvalidJSON"), (b"{", "InvalidJSON"), (b"null", "RequestError"), (b"[]", "RequestError"),
    (b'"text"', "RequestError"), (b"{}", "RequestError"), (b'{"parent": null}', "RequestError"),
    (b'{"parent": {"kind": "LLMDeployment"}}', "RequestError"),
    (b'{"parent": {"apiVersion": "v", "kind": "K", "metadata": {"name": ""}}}', "RequestError"),
    (b'{"parent": {"apiVersion": "v", "kind": "K", "metadata": {"name": "x"}}, "children": []}', "RequestError"),
    (b'{"parent": {"apiVersion": "v", "kind": "K", "metadata": {"name": "x"}}, '
     b'"children": {"Deployment.apps/v1": {"a": {"kind": "Deployment"}}}}', "RequestError"),
    (b'{"parent": {"apiVersion": "v", "kind": "K", "metadata": {"name": "x", "generation": "one"}}}',
     "RequestError"),
    (b"\xff\xfe", "InvalidJSON"), (b'{"a": "\\ud800"}', "InvalidJSON"), (b"1" * 5000, "InvalidJSON"),
]


def post(client: httpx.Client, body: Any) -> httpx.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post("/sync", content=data, headers={"Content-Type": "application/json"})


def local_app(settings: Settings, **options: Any) -> FastAPI:
    """The app rendering in this process (the real server, with render workers, is tested
    through HookServer)."""
    return create_app(settings, renderer=LocalRenderer(settings.children), **options)


def call(app: FastAPI, method: str, path: str, body: Any = None) -> httpx.Response:
    """One request to the app in-process, through the ASGI interface."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hook") as client:
            content = json.dumps(body).encode() if body is not None else None
            return await client.request(method, path, content=content)

    return asyncio.run(send())


def test_health_and_readiness(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


def test_samples_over_http(client: httpx.Client) -> None:
    for name in ("sync-new.json", "sync-existing.json"):
        response = post(client, load_sample(name))
        assert response.status_code == 200 and response.headers["content-type"] == "application/json"
        body = response.json()
        assert set(body) == {"status", "children"} and body["children"]


def test_http_answer_is_the_canonical_bytes(client: httpx.Client) -> None:
    raw = mc.request(mc.parent(SPEC))
    first, second = post(client, raw), post(client, raw)
    assert timeless(first.content) == timeless(second.content)
    assert first.content == json.dumps(first.json(), sort_keys=True, separators=(",", ":")).encode()


@pytest.mark.parametrize(("body", "error"), MALFORMED)
def test_malformed_requests_get_a_4xx_json_error(client: httpx.Client, body: bytes, error: str) -> None:
    response = post(client, body)
    assert 400 <= response.status_code < 500
    assert response.json()["error"] == error and response.json()["message"]
    assert client.get("/healthz").status_code == 200


def test_unsafe_freeze_is_refused_with_409(client: httpx.Client) -> None:
    child = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "llama3-stable", "namespace": "ml", "annotations": {}}, "spec": {}}
    response = post(client, mc.request(mc.parent({"model": {"uri": "bad"}}), [child]))
    assert response.status_code == 409
    assert LAST_APPLIED_ANNOTATION in response.json()["message"]


def test_invalid_spec_is_a_200_that_keeps_children(client: httpx.Client) -> None:
    applied: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llama3", "namespace": "ml"}}
    child = {**applied, "metadata": {**applied["metadata"],
                                     "annotations": {LAST_APPLIED_ANNOTATION: json.dumps(applied)}}}
    response = post(client, mc.request(mc.parent({"model": {"uri": "bad"}}), [child]))
    assert response.status_code == 200
    assert response.json()["children"] == [applied]
    assert response.json()["status"]["phase"] == "Invalid"


def test_unknown_paths_and_methods_answer_json(client: httpx.Client) -> None:
    assert client.get("/nope").status_code == 404
    assert client.get("/nope").headers["content-type"] == "application/json"
    for method in ("GET", "HEAD", "PUT"):
        refused = client.request(method, "/sync", headers={"X-Request-Id": "r-1"})
        assert (refused.status_code, refused.headers["allow"], refused.headers["x-request-id"]) == (405, "POST", "r-1")
        assert refused.headers["content-type"] == "application/json"
    assert client.get("/sync").json()["error"] == "MethodNotAllowed"


def test_sync_answers_under_a_trailing_slash_and_a_root_path(settings: Settings) -> None:
    """As FastAPI's route did: `/sync/` (which it redirected), and below a root path."""
    body = mc.request(mc.parent(SPEC))
    expected = call(local_app(settings), "POST", "/sync", body)
    assert expected.status_code == 200
    assert timeless(call(local_app(settings), "POST", "/sync/", body).content) == timeless(expected.content)

    async def mounted() -> httpx.Response:
        transport = httpx.ASGITransport(app=local_app(settings), root_path="/hook")
        async with httpx.AsyncClient(transport=transport, base_url="http://hook") as client:
            return await client.post("/hook/sync", content=json.dumps(body).encode())

    assert timeless(asyncio.run(mounted()).content) == timeless(expected.content)


def broken_copy(settings: Settings, tmp_path: Path, text: str) -> Path:
    """An override folder whose service.yaml is `text`."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "service.yaml").write_text(text)
    return folder


def test_broken_templates_fail_readiness(settings: Settings, tmp_path: Path) -> None:
    folder = broken_copy(settings, tmp_path, "apiVersion: v1\n{{ nope }}\n")
    app = local_app(Settings(templates=TemplateSettings(folder=folder)))
    assert call(app, "GET", "/healthz").status_code == 200
    ready = call(app, "GET", "/readyz")
    assert ready.status_code == 503 and ready.json()["error"] == "NotReady"
    assert call(app, "POST", "/sync", mc.request(mc.parent(SPEC))).status_code == 503


def test_server_refuses_to_start_with_broken_templates(settings: Settings, tmp_path: Path) -> None:
    folder = broken_copy(settings, tmp_path, "apiVersion: v1\n\n{{ nope }}\n")
    hook = HookServer(env={"LLMDEPLOY_TEMPLATES_DIR": str(folder)})
    with pytest.raises(RuntimeError, match=r"service.yaml:3: UndefinedError"):
        hook.wait_ready()
    assert hook.process.returncode != 0


def test_template_failure_during_sync_is_a_500_not_fewer_children(settings: Settings, tmp_path: Path) -> None:
    text = (shipped_templates_dir() / "service.yaml").read_text()
    folder = broken_copy(settings, tmp_path, text + '{% if view.name == "boom" %}{{ nope }}{% endif %}\n')
    app = local_app(Settings(templates=TemplateSettings(folder=folder)))
    assert call(app, "POST", "/sync", mc.request(mc.parent(SPEC))).status_code == 200
    response = call(app, "POST", "/sync", mc.request(mc.parent(SPEC, name="boom")))
    assert response.status_code == 500
    assert response.json()["error"] == "TemplateError" and "service.yaml" in response.json()["message"]


def test_a_failure_before_the_sync_is_a_json_500_that_is_logged_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from hooks.edge.gather import FactGatherer

    class Broken(FactGatherer):
        async def gather(self, request: Any, direct: Any = None, deadline: Any = None, resolutions: Any = None) -> Any:
            raise RuntimeError("clock fell off the wall")

    app = local_app(Settings(), facts=Broken())
    response = call(app, "POST", "/sync", mc.request(mc.parent(SPEC)))
    assert response.status_code == 500 and response.json()["error"] == "InternalError"
    assert "clock fell off the wall" in response.json()["message"] and response.headers["x-request-id"]
    def explode(payload: Any) -> Any:
        raise KeyError("a bug in parsing")

    monkeypatch.setattr(hooks.web.hook, "parse_request", explode)
    response = call(local_app(Settings()), "POST", "/sync", mc.request(mc.parent(SPEC)))
    assert response.status_code == 500 and response.json()["error"] == "InternalError"
    metrics = call(app, "GET", "/metrics").text
    assert 'llmdeploy_hook_requests_total{hook="sync",outcome="error"} 1.0' in metrics


def test_malformed_child_status_fields_are_not_errors(client: httpx.Client) -> None:
    child = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama3-stable", "namespace": "ml"},
             "status": {"conditions": 5, "availableReplicas": "x"}}
    route = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "llama3"},
             "spec": {"http": [{"route": 5}]}}
    assert post(client, mc.request(mc.parent(SPEC), [child, route])).status_code == 200


@pytest.mark.parametrize("depth", [40, 250, 900])
def test_a_deeply_nested_spec_is_invalid_not_an_error(client: httpx.Client, depth: int) -> None:
    affinity: dict[str, Any] = {}
    for _ in range(depth):
        affinity = {"nodeAffinity": affinity}
    response = post(client, mc.request(mc.parent({"model": {"uri": "hf://o/m"}, "pod": {"affinity": affinity}})))
    assert response.status_code == 200, response.text
    status = response.json()["status"]
    assert status["phase"] == "Invalid" and "levels deep" in status["conditions"][-1]["message"]


def test_a_kept_child_that_cannot_be_encoded_is_refused_not_a_raw_500(client: httpx.Client) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ml"}, "data": deep}
    child = {**applied, "metadata": {**applied["metadata"],
                                     "annotations": {LAST_APPLIED_ANNOTATION: json.dumps(applied)}}}
    response = post(client, json.dumps(mc.request(mc.parent({"model": {"uri": "bad"}}), [child])).encode())
    assert response.status_code == 409 and response.json()["error"] == "UnsafeToAnswer"
