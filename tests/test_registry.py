"""Registry references pinned: the references and pins (pure), then a real MLflow tracking
server: aliases, latest and stages resolved and pinned in every pod, an alias that moves
rolled out, an outage and an unknown alias that change nothing, one request per reference
for many resources, and the hook server resolving through its own configuration."""

from __future__ import annotations

import asyncio
import copy
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from hooks.core.registry import Pin, Resolution, pins, reference_of, references
from hooks.edge.gather import FactGatherer
from hooks.edge.registry import MLflowRegistry
from hooks.errors import ConfigError
from hooks.rendering.templateset import TemplateSet
from hooks.settings import RegistrySettings, Settings
from hooks.web.app import create_app
from hooks.workers.renderer import LocalRenderer

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.mlflowserver import MLflowServer
from tests.rollouts import CANARY, STABLE, Rollout, values
from tests.syncing import NOW, run_sync
from tests.web.test_rollout_http import Hanging, timed_sync

JSON = dict[str, Any]
NAMES = (f"model-{i}" for i in itertools.count())


@pytest.mark.parametrize(("uri", "revision", "expected"), [
    ("models:/llama@champion", None, ("llama", "champion", None)),
    ("models:/team@x@champion", None, ("team@x", "champion", None)),  # as MLflow splits it
    ("models:/llama/latest", None, ("llama", None, "latest")),
    ("models:/llama/Production", None, ("llama", None, "Production")),
    ("models:/llama/staging", None, ("llama", None, "Staging")),
    ("models:/llama/3", None, None), ("models:/m-0123abcd", None, None), ("models:/llama@champion", "3", None),
    ("models:/llama/Shipping", None, None), ("models:/a/b/c", None, None), ("s3://b/llama@champion", None, None),
])
def test_which_uris_are_moving_references(uri: str, revision: str | None, expected: Any) -> None:
    found = reference_of(uri, revision)
    assert (None if found is None else (found.name, found.alias, found.stage)) == expected


def test_references_of_a_spec_as_written() -> None:
    spec = {"model": {"uri": "models:/a@champion"}, "canary": {"model": {"uri": "models:/a@challenger"}}}
    assert references(spec) == ("models:/a@champion", "models:/a@challenger")
    assert references({"model": {"uri": "models:/a@champion"}, "canary": {"replicas": 1}}) == ("models:/a@champion",)
    assert references({"model": "nonsense", "canary": []}) == () == references(None)


def test_the_registry_answer_wins_and_an_outage_keeps_the_running_version() -> None:
    uri = "models:/a@champion"
    before = {uri: Pin(uri, "3", "s3://b/3", "r3", "2026-09-01T10:00:00Z")}
    later = datetime(2026, 9, 1, 12, tzinfo=timezone.utc)
    moved = Resolution("4", "s3://b/4", "r4", later)
    assert pins([uri], {uri: moved}, before)[uri] == Pin(uri, "4", "s3://b/4", "r4", "2026-09-01T12:00:00Z")
    same = Resolution("3", "s3://b/3", "r3", later)
    assert pins([uri], {uri: same}, before)[uri].resolved_at == "2026-09-01T10:00:00Z", "first resolved, kept"
    assert pins([uri], {uri: Resolution(error="down")}, before)[uri] == before[uri]
    assert pins([uri], {uri: Resolution(error="down")}, {}) == {}


def test_an_answer_older_than_the_running_version_does_not_undo_it() -> None:
    """Two hook replicas, each with its own memory: one still remembers the alias before it
    moved. Its answer predates the version the Deployment runs, so it is not pinned."""
    uri = "models:/a@champion"
    running = {uri: Pin(uri, "4", "s3://b/4", "", "2026-09-01T12:05:00Z")}
    stale = Resolution("3", "s3://b/3", "", datetime(2026, 9, 1, 12, 1, tzinfo=timezone.utc))
    assert pins([uri], {uri: stale}, running)[uri] == running[uri]
    back = Resolution("3", "s3://b/3", "", datetime(2026, 9, 1, 12, 9, tzinfo=timezone.utc))
    assert pins([uri], {uri: back}, running)[uri].version == "3", "moved back later: a new answer"


def test_a_paused_resource_never_waits_on_the_registry(templates: TemplateSet) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise AssertionError("a paused resource asked the registry")

    resolve = Resolver("http://registry.invalid", transport=httpx.MockTransport(answer))
    try:
        result = run_sync(mc.request(mc.parent({"model": {"uri": "models:/m@champion"}, "paused": True})), templates,
                          resolve=resolve)
    finally:
        resolve.close()
    assert result.outcome == "paused" and resolve.registry.requests == 0
    assert "ModelResolved" not in [c["type"] for c in result.status.as_json()["conditions"]]


def test_registry_settings_are_the_hooks_and_checked() -> None:
    settings = Settings.from_env({"LLMDEPLOY_MLFLOW_TRACKING_URI": "https://mlflow.ml:5000/", "MLFLOW_TRACKING_TOKEN": "t\n",
                                  "LLMDEPLOY_REGISTRY_REFRESH_SECONDS": "30"})
    assert (settings.registry.tracking_uri, settings.registry.token, settings.registry.refresh_seconds) == \
        ("https://mlflow.ml:5000", "t", 30.0)
    for bad in ({"LLMDEPLOY_MLFLOW_TRACKING_URI": "http://user:pw@mlflow"}, {"MLFLOW_TRACKING_USERNAME": "u"},
                {"LLMDEPLOY_MLFLOW_TRACKING_URI": "file:///tmp/mlruns"}):
        with pytest.raises(ConfigError):
            Settings.from_env(bad)


class Resolver:
    """A real MLflowRegistry on a loop of its own, called as sync_through's `resolve`."""

    def __init__(self, url: str, refresh_seconds: float = 60.0, timeout_seconds: float = 3.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.now = NOW
        self.loop = asyncio.new_event_loop()
        self.registry = MLflowRegistry(RegistrySettings(url, token="secret-token", refresh_seconds=refresh_seconds,
                                                        timeout_seconds=timeout_seconds),
                                       clock=lambda: self.now, transport=transport)

    def __call__(self, refs: tuple[str, ...]) -> dict[str, Resolution]:
        return self.loop.run_until_complete(self.registry.resolve(refs))

    def close(self) -> None:
        self.loop.run_until_complete(self.registry.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def mlflow() -> Iterator[MLflowServer]:
    with MLflowServer() as server:
        yield server


@pytest.fixture
def resolver(mlflow: MLflowServer) -> Iterator[Resolver]:
    found = Resolver(mlflow.url)
    yield found
    found.close()


def registered(mlflow: MLflowServer, versions: int = 1, alias: str | None = "champion") -> str:
    """A new registered model with `versions` versions (sources s3://models/<name>/<n>, each from a run)."""
    name = next(NAMES)
    mlflow.create_model(name)
    for n in range(1, versions + 1):
        mlflow.create_version(name, f"s3://models/{name}/{n}", run_id=mlflow.create_run())
    if alias is not None:
        mlflow.set_alias(name, alias, "1")
    return name


def fetched(children: Any, deployment: str = STABLE) -> str:
    """The model uri the Deployment's download init container fetches."""
    (found,) = [c for c in children if c["kind"] == "Deployment" and c["metadata"]["name"] == deployment]
    command = found["spec"]["template"]["spec"]["initContainers"][0]["command"]
    return str(command[command.index("--artifact-uri") + 1])


def condition(status: JSON, kind: str = "ModelResolved") -> JSON:
    return next(c for c in status["conditions"] if c["type"] == kind)


def test_an_alias_is_pinned_in_the_pod_template_and_reported(mlflow: MLflowServer, resolver: Resolver,
                                                              templates: TemplateSet) -> None:
    name = registered(mlflow)
    run_id = mlflow.api("GET", "model-versions/get", params={"name": name, "version": "1"})["model_version"]["run_id"]
    result = run_sync(mc.request(mc.parent({"model": {"uri": f"models:/{name}@champion"}})), templates,
                      resolve=resolver)
    assert result.outcome == "ok" and fetched(result.children) == f"models:/{name}/1"
    status = result.status.as_json()
    assert status["stable"]["model"] == f"models:/{name}@champion", "as written"
    assert status["stable"]["resolved"] == {"version": "1", "artifactUri": f"s3://models/{name}/1", "runId": run_id,
                                            "resolvedAt": "2026-09-01T12:00:00Z"}
    assert condition(status)["status"] == "True" and condition(status)["message"] == \
        f"models:/{name}@champion is version 1"
    assert result.resync_after == 60.0, "asked again when the answer is due for a refresh"


def test_an_mlflow_3_logged_model_is_reported_where_its_files_are(mlflow: MLflowServer, resolver: Resolver,
                                                                  templates: TemplateSet) -> None:
    """MLflow 3 registers a version from `models:/m-<id>`: the status names its artifact
    location (the download-uri endpoint), not that indirection."""
    name = next(NAMES)
    mlflow.create_model(name)
    model_id = mlflow.create_logged_model()
    mlflow.create_version(name, f"models:/{model_id}", model_id=model_id)
    mlflow.set_alias(name, "champion", "1")
    result = run_sync(mc.request(mc.parent({"model": {"uri": f"models:/{name}@champion"}})), templates,
                      resolve=resolver)
    resolved = result.status.as_json()["stable"]["resolved"]
    assert fetched(result.children) == f"models:/{name}/1"
    assert resolved["artifactUri"].endswith(f"/models/{model_id}/artifacts") and "models:/" not in resolved["artifactUri"]


@pytest.mark.parametrize(("suffix", "version"), [("latest", "3"), ("Production", "2"), ("staging", "1")])
def test_latest_and_stages(suffix: str, version: str, mlflow: MLflowServer, resolver: Resolver,
                           templates: TemplateSet) -> None:
    name = registered(mlflow, versions=3, alias=None)
    mlflow.transition_stage(name, "2", "Production")
    mlflow.transition_stage(name, "1", "Staging")
    result = run_sync(mc.request(mc.parent({"model": {"uri": f"models:/{name}/{suffix}"}})), templates,
                      resolve=resolver)
    assert fetched(result.children) == f"models:/{name}/{version}"


def test_a_pinned_version_is_used_as_written_and_never_asked_about(mlflow: MLflowServer, resolver: Resolver,
                                                                   templates: TemplateSet) -> None:
    result = run_sync(mc.request(mc.parent({"model": {"uri": "models:/anything/7"}})), templates, resolve=resolver)
    assert fetched(result.children) == "models:/anything/7" and resolver.registry.requests == 0
    assert "ModelResolved" not in [c["type"] for c in result.status.as_json()["conditions"]]


def converge(cluster: mc.Cluster, spec: JSON, templates: TemplateSet, resolve: Resolver,
             status: JSON | None = None, generation: int = 1) -> tuple[Any, JSON]:
    """Syncs until the answer changes nothing (at most five), pods rolled out after each."""
    for _ in range(5):
        result = run_sync(mc.request(mc.parent(spec, generation=generation, status=status), cluster.observed()),
                          templates, resolve=resolve, now=resolve.now)
        before = copy.deepcopy(cluster.objects)
        cluster.apply(result.children)
        cluster.roll_out()
        status = result.status.as_json()
        if cluster.objects == before:
            return result, status
    raise AssertionError("no convergence")


def test_an_alias_that_moves_rolls_out_the_new_version(mlflow: MLflowServer, templates: TemplateSet) -> None:
    name = registered(mlflow, versions=2)
    spec = {"model": {"uri": f"models:/{name}@champion"}}
    resolve = Resolver(mlflow.url, refresh_seconds=0.2)
    try:
        cluster = mc.Cluster()
        _, status = converge(cluster, spec, templates, resolve)
        assert status["stable"]["resolved"]["version"] == "1"
        mlflow.set_alias(name, "champion", "2")
        time.sleep(0.3)  # the remembered answer is due for a refresh
        resolve.now = NOW + timedelta(minutes=5)
        result, status = converge(cluster, spec, templates, resolve, status)
        assert fetched(cluster.observed()) == f"models:/{name}/2"
        assert status["stable"]["resolved"]["version"] == "2"
        assert status["stable"]["resolved"]["resolvedAt"] == "2026-09-01T12:05:00Z"
        assert condition(status)["status"] == "True"
    finally:
        resolve.close()


def test_two_hook_replicas_with_different_memories_move_the_alias_once(mlflow: MLflowServer,
                                                                       templates: TemplateSet) -> None:
    name = registered(mlflow, versions=2)
    spec = {"model": {"uri": f"models:/{name}@champion"}}
    early, late = Resolver(mlflow.url), Resolver(mlflow.url)
    try:
        cluster = mc.Cluster()
        _, status = converge(cluster, spec, templates, early)  # early remembers version 1
        mlflow.set_alias(name, "champion", "2")
        late.now = NOW + timedelta(minutes=5)
        _, status = converge(cluster, spec, templates, late)
        generation = cluster.objects["Deployment", STABLE]["metadata"]["generation"]
        for replica in (early, late, early, late):  # Metacontroller's calls land on either replica
            replica.now = late.now
            result = run_sync(mc.request(mc.parent(spec, status=status), cluster.observed()), templates,
                              resolve=replica, now=late.now)
            cluster.apply(result.children)
            status = result.status.as_json()
            assert fetched(cluster.observed()) == f"models:/{name}/2"
        assert cluster.objects["Deployment", STABLE]["metadata"]["generation"] == generation
    finally:
        early.close()
        late.close()


def test_an_alias_that_moves_is_a_judged_canary_with_the_canary_strategy(mlflow: MLflowServer,
                                                                        templates: TemplateSet) -> None:
    name = registered(mlflow, versions=2)
    spec = {"model": {"uri": f"models:/{name}@champion"}, "replicas": 2,
            "rollout": {"strategy": "Canary", "steps": [{"weight": 50, "pauseSeconds": 60}],
                        "analysis": {"intervalSeconds": 30, "windowSeconds": 60,
                                     "checks": [{"metric": "error-rate", "max": 0.01}]}}}
    resolve = Resolver(mlflow.url, refresh_seconds=0.01)
    try:
        rollout = Rollout(templates, spec, measure=values({"error-rate": 0.0}), resolve=resolve)
        rollout.deployed()
        mlflow.set_alias(name, "champion", "2")
        time.sleep(0.05)
        step = rollout.run(lambda s: s.rollout.get("weight") == 50)
        assert fetched(step.result.children, STABLE) == f"models:/{name}/1", "the stable keeps its version"
        assert fetched(step.result.children, CANARY) == f"models:/{name}/2"
        assert step.status["stable"]["resolved"]["version"] == "1"
        assert step.status["canary"]["resolved"]["version"] == "2"
        done = rollout.run(lambda s: s.phase == "Succeeded")
        assert fetched(done.result.children, STABLE) == f"models:/{name}/2"
        assert done.status["stable"]["resolved"]["version"] == "2"
    finally:
        resolve.close()


def test_a_registry_outage_changes_no_child(mlflow: MLflowServer, templates: TemplateSet) -> None:
    name = registered(mlflow)
    spec = {"model": {"uri": f"models:/{name}@champion"}}
    resolve = Resolver(mlflow.url)
    cluster = mc.Cluster()
    try:
        _, status = converge(cluster, spec, templates, resolve)
    finally:
        resolve.close()
    applied = copy.deepcopy(cluster.objects)
    mlflow.stop()
    down = Resolver(mlflow.url)  # nothing remembered: it has to ask
    try:
        for generation, changed in ((1, spec), (2, {**spec, "replicas": 2})):
            result = run_sync(mc.request(mc.parent(changed, generation=generation, status=status),
                                         cluster.observed()), templates, resolve=down)
            cluster.apply(result.children)
            cluster.roll_out()
            model_resolved = condition(result.status.as_json())
            assert model_resolved["status"] == "False" and model_resolved["reason"] == "RegistryUnreachable"
            assert "keeps version 1" in model_resolved["message"] and result.resync_after == 10.0
            assert fetched(cluster.observed()) == f"models:/{name}/1"
        assert cluster.objects["Deployment", STABLE]["spec"]["replicas"] == 2, "other changes still apply"
        assert {k for k in cluster.objects} == {k for k in applied}
        new = run_sync(mc.request(mc.parent(spec, name="fresh")), templates, resolve=down)
        assert new.outcome == "unresolved" and new.children == ()
        assert "nothing is created for it until it resolves" in condition(new.status.as_json())["message"]
        assert new.status.as_json()["phase"] == "Pending" and new.resync_after == 10.0
    finally:
        down.close()
        mlflow.start()


def test_during_an_outage_what_runs_is_read_from_the_deployments_not_the_status(
        mlflow: MLflowServer, resolver: Resolver, templates: TemplateSet) -> None:
    """A status one write behind, or written by someone else, does not choose the version."""
    name = registered(mlflow, versions=2)
    spec = {"model": {"uri": f"models:/{name}@champion"}}
    cluster = mc.Cluster()
    _, status = converge(cluster, spec, templates, resolver)
    forged = copy.deepcopy(status)
    forged["stable"]["resolved"] = {"version": "2", "artifactUri": "x", "runId": "", "resolvedAt": "2099-01-01T00:00:00Z"}
    down = Resolver("http://127.0.0.1:9")  # nothing listens there
    try:
        result = run_sync(mc.request(mc.parent(spec, status=forged), cluster.observed()), templates, resolve=down)
    finally:
        down.close()
    assert fetched(result.children) == f"models:/{name}/1"
    assert result.status.as_json()["stable"]["resolved"]["version"] == "1"
    assert "keeps version 1" in condition(result.status.as_json())["message"]


def test_an_unknown_alias_keeps_what_runs_and_a_new_resource_waits(mlflow: MLflowServer, resolver: Resolver,
                                                                   templates: TemplateSet) -> None:
    name = registered(mlflow)
    spec = {"model": {"uri": f"models:/{name}@champion"}}
    cluster = mc.Cluster()
    _, status = converge(cluster, spec, templates, resolver)
    mlflow.delete_alias(name, "champion")
    again = Resolver(mlflow.url)
    try:
        result = run_sync(mc.request(mc.parent(spec, status=status), cluster.observed()), templates, resolve=again)
        assert fetched(result.children) == f"models:/{name}/1"
        assert condition(result.status.as_json())["reason"] == "NotFound"
        unknown = run_sync(mc.request(mc.parent({"model": {"uri": f"models:/{name}@nope"}})), templates,
                           resolve=again)
        assert unknown.outcome == "unresolved" and unknown.children == ()
        assert condition(unknown.status.as_json())["reason"] == "NotFound"
    finally:
        again.close()


def test_many_resources_on_one_alias_ask_the_registry_once(mlflow: MLflowServer, resolver: Resolver,
                                                           templates: TemplateSet) -> None:
    name = registered(mlflow)
    for i in range(20):
        result = run_sync(mc.request(mc.parent({"model": {"uri": f"models:/{name}@champion"}}, name=f"r{i}")),
                          templates, resolve=resolver)
        assert fetched(result.children, f"r{i}-stable") == f"models:/{name}/1"
    assert resolver.registry.requests == 2, "the alias and its download location, once"


def test_a_version_that_is_not_ready_is_not_pinned(templates: TemplateSet) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer secret-token"
        if request.url.path.endswith("/registered-models/alias"):
            return httpx.Response(200, json={"model_version": {"name": "m", "version": "5",
                                                               "status": "PENDING_REGISTRATION"}})
        return httpx.Response(404, json={"error_code": "RESOURCE_DOES_NOT_EXIST"})

    resolve = Resolver("http://registry.invalid", transport=httpx.MockTransport(answer))
    try:
        result = run_sync(mc.request(mc.parent({"model": {"uri": "models:/m@champion"}})), templates,
                          resolve=resolve)
    finally:
        resolve.close()
    assert result.outcome == "unresolved"
    found = condition(result.status.as_json())
    assert found["reason"] == "VersionNotReady" and "PENDING_REGISTRATION" in found["message"]


class Trickling:
    """A 'registry' that answers a status line and headers, then one byte of body now and then."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with suppress(OSError), connection:
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
            while not self.stopped.wait(0.1):
                connection.sendall(b" ")

    def close(self) -> None:
        self.stopped.set()
        self.socket.close()


def test_a_registry_that_trickles_its_answer_is_bounded_and_its_failure_remembered() -> None:
    trickling = Trickling()
    resolve = Resolver(trickling.url, timeout_seconds=0.3)
    try:
        first = resolve(("models:/m@a",))["models:/m@a"]
        assert first.reason == "RegistryUnreachable" and "0.3 s" in str(first.error)
        time.sleep(0.6)  # past the whole exchange's bound, twice the timeout
        started = time.monotonic()
        second = resolve(("models:/m@a",))["models:/m@a"]
        assert time.monotonic() - started < 0.1, "remembered: not asked again at once"
        assert second.reason == "RegistryUnreachable" and "0.6 s" in str(second.error)
        assert not resolve.registry._in_flight
    finally:
        resolve.close()
        trickling.close()


def test_basic_auth_when_configured() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        return httpx.Response(200, json={"model_version": {"version": "2", "status": "READY", "source": "s3://b/2"}})

    registry = MLflowRegistry(RegistrySettings("http://registry.invalid", username="u", password="p"),
                              transport=httpx.MockTransport(answer))

    async def resolve() -> dict[str, Resolution]:
        try:
            return await registry.resolve(("models:/m@a",))
        finally:
            await registry.aclose()

    assert asyncio.run(resolve())["models:/m@a"].version == "2"
    assert seen and all(h == "Basic dTpw" for h in seen)


def test_without_a_configured_registry_a_reference_waits_and_says_why(templates: TemplateSet) -> None:
    resolve = Resolver("http://unused.invalid")
    resolve.registry.settings = RegistrySettings()
    try:
        result = run_sync(mc.request(mc.parent({"model": {"uri": "models:/m@champion"}})), templates,
                          resolve=resolve)
    finally:
        resolve.close()
    found = condition(result.status.as_json())
    assert found["reason"] == "RegistryNotConfigured" and "LLMDEPLOY_MLFLOW_TRACKING_URI" in found["message"]


def test_a_hanging_registry_delays_no_other_resource() -> None:
    hanging = Hanging()
    settings = Settings(registry=RegistrySettings(hanging.url, timeout_seconds=1.0))
    facts = FactGatherer(registry=MLflowRegistry(settings.registry))
    app = create_app(settings, renderer=LocalRenderer(settings.children), facts=facts)

    async def scenario() -> tuple[tuple[float, JSON], list[tuple[float, JSON]]]:
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://hook", timeout=15) as client:
                slow = asyncio.ensure_future(timed_sync(client, mc.request(mc.parent({"model": {"uri": "models:/m@a"}}))))
                await asyncio.sleep(0.05)
                others = [mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, name=f"other-{i}")) for i in range(5)]
                fast = await asyncio.gather(*(timed_sync(client, r) for r in others))
                return await slow, fast
        finally:  # what the app's lifespan does on shutdown (ASGITransport runs no lifespan)
            await facts.aclose()

    try:
        (slow_seconds, slow_body), fast = asyncio.run(scenario())
    finally:
        hanging.close()
    assert all(seconds < 0.9 for seconds, _ in fast), [s for s, _ in fast]
    assert 0.9 <= slow_seconds < 5, "bounded by the registry timeout, well inside Metacontroller's 10 s"
    assert slow_body["children"] == [] and condition(slow_body["status"])["reason"] == "RegistryUnreachable"


def test_the_hook_server_resolves_through_its_own_configuration(mlflow: MLflowServer) -> None:
    name = registered(mlflow)
    server = HookServer(env={"LLMDEPLOY_MLFLOW_TRACKING_URI": mlflow.url})
    try:
        server.wait_ready("/readyz")
        response = httpx.post(server.url + "/sync", json=mc.request(mc.parent(
            {"model": {"uri": f"models:/{name}@champion"}})), timeout=10)
    finally:
        server.stop()
    assert response.status_code == 200, response.text
    body = response.json()
    assert fetched(body["children"]) == f"models:/{name}/1"
    assert body["status"]["stable"]["resolved"]["version"] == "1"


def test_render_previews_with_the_configured_registry(mlflow: MLflowServer, tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    name = registered(mlflow)
    resource = tmp_path / "r.yaml"
    resource.write_text(yaml.safe_dump({"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                        "metadata": {"name": "llama3"},
                                        "spec": {"model": {"uri": f"models:/{name}@champion"}}}))
    cli = str(Path(sys.executable).parent / "llmdeploy")
    result = subprocess.run([cli, "render", "-f", str(resource)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "LLMDEPLOY_MLFLOW_TRACKING_URI": mlflow.url}, check=False)
    assert result.returncode == 0, result.stderr
    assert fetched(list(yaml.safe_load_all(result.stdout))) == f"models:/{name}/1"
