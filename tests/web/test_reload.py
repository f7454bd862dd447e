"""Live reload of a mounted template folder: good sets swap in, broken ones never do."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import httpx
import pytest
from hooks.edge.templates import read_sources
from hooks.settings import ChildSettings, Settings, TemplateSettings
from hooks.web.reload import TemplateReloader
from hooks.workers.renderer import LocalRenderer

from tests import metacontroller as mc
from tests.conftest import HookServer

GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}, labels: {{ view.labels }}}\ndata: {v: \"%s\"}\n"
BROKEN = "apiVersion: v1\nkind: ConfigMap\n{{ view.nope }}\n"
BODY = mc.request(mc.parent({"model": {"uri": "hf://org/model"}}))


def mount(folder: Path, version: str, text: str) -> None:
    """Swap the folder's content the way the kubelet updates a ConfigMap volume: a new
    timestamped directory, then an atomic rename of the ..data symlink."""
    target = folder / f"..{version}"
    target.mkdir()
    (target / "cm.yaml").write_text(text)
    link = folder / "..data_tmp"
    link.symlink_to(target.name)
    os.replace(link, folder / "..data")
    if not (folder / "cm.yaml").is_symlink():
        (folder / "cm.yaml").symlink_to("..data/cm.yaml")


def test_poll_installs_good_sets_and_keeps_the_last_good_one(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    mount(folder, "1", GOOD % "one")
    installed: list[str] = []
    results: list[bool] = []
    reloader = TemplateReloader(TemplateSettings(folder=folder), LocalRenderer(ChildSettings()), installed.append,
                                results.append)
    assert reloader.poll() is None
    mount(folder, "2", BROKEN)
    assert reloader.poll() is False and installed == []
    assert reloader.poll() is None  # a broken set is not retried until it changes again
    mount(folder, "3", GOOD % "three")
    assert reloader.poll() is True and len(installed) == 1
    assert results == [False, True]


def test_a_set_is_known_by_its_content_not_its_timestamps(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x")
    before = read_sources(tmp_path).digest()
    os.utime(tmp_path / "a.yaml", (0, 0))
    assert read_sources(tmp_path).digest() == before
    (tmp_path / "a.yaml").write_text("y")
    assert read_sources(tmp_path).digest() != before


def configmap_value(hook: HookServer) -> str:
    response = httpx.post(hook.url + "/sync", json=BODY, timeout=10)
    assert response.status_code == 200, response.text
    (config_map,) = [c for c in response.json()["children"] if c["kind"] == "ConfigMap"]
    return str(config_map["data"]["v"])


def wait_for(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise TimeoutError("condition not reached")


def test_server_swaps_good_to_broken_and_back(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    mount(folder, "1", GOOD % "one")
    hook = HookServer(env={"LLMDEPLOY_TEMPLATES_DIR": str(folder), "LLMDEPLOY_TEMPLATES_POLL_SECONDS": "0.2"})
    try:
        hook.wait_ready("/readyz")
        assert configmap_value(hook) == "one"
        mount(folder, "2", BROKEN)
        time.sleep(1.0)  # several polls
        assert configmap_value(hook) == "one"
        assert httpx.get(hook.url + "/readyz").status_code == 200
        mount(folder, "3", GOOD % "three")
        wait_for(lambda: configmap_value(hook) == "three")
    finally:
        output = hook.stop()
    assert "broken, still serving the previous set" in output and "cm.yaml:3" in output


def test_server_becomes_ready_once_a_broken_folder_is_fixed(tmp_path: Path) -> None:
    from tests.web.test_app import call, local_app

    folder = tmp_path / "templates"
    folder.mkdir()
    mount(folder, "1", BROKEN)
    app = local_app(Settings(templates=TemplateSettings(folder=folder)))
    assert call(app, "GET", "/readyz").status_code == 503
    mount(folder, "2", GOOD % "fixed")
    hook = app.state.hook
    reloader = TemplateReloader(TemplateSettings(folder=folder), hook.renderer, hook.install)
    reloader.seen = ""
    assert reloader.poll() is True
    assert call(app, "GET", "/readyz").status_code == 200


def test_a_missing_override_folder_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    hook = HookServer(env={"LLMDEPLOY_TEMPLATES_DIR": str(tmp_path / "absent")})
    with pytest.raises(RuntimeError, match="does not exist"):
        hook.wait_ready()
    shutil.rmtree(tmp_path, ignore_errors=True)
