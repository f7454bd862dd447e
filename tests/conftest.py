"""Shared fixtures: settings, the shipped template set, a real hook server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hooks.edge.templates import load_templates
from hooks.rendering.templateset import TemplateSet
from hooks.settings import Settings

from tests.manifests import SHARED
from tests.prerequisites import missing

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = SHARED / "design" / "samples"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings()


@pytest.fixture(scope="session")
def templates(settings: Settings) -> TemplateSet:
    return load_templates(None, settings.children)


def load_sample(name: str) -> dict[str, Any]:
    path = SAMPLES / name
    if not path.is_file():
        missing(f"{path} is not here (no ../shared): the Metacontroller samples live there")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class HookServer:
    """`llmdeploy serve` in its own process, as it runs in the cluster."""

    def __init__(self, env: dict[str, str] | None = None, args: list[str] | None = None,
                 verify: ssl.SSLContext | None = None) -> None:
        self.port = free_port()
        self.verify: ssl.SSLContext | bool = verify or True
        self.url = f"{'https' if verify else 'http'}://127.0.0.1:{self.port}"
        command = [str(Path(sys.executable).parent / "llmdeploy"), "serve", "--host", "127.0.0.1",
                   "--port", str(self.port), *(args or [])]
        # A file, not a pipe: nobody reads a pipe while tests run, and a full one blocks the server.
        self.log = tempfile.TemporaryFile()
        self.output = ""
        self.process = subprocess.Popen(command, env={**os.environ, **(env or {})},
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, path: str = "/healthz", timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self.stop()
                raise RuntimeError(f"hook server exited with {self.process.returncode}:\n{output}")
            try:
                if httpx.get(self.url + path, timeout=1, verify=self.verify).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"hook server on {self.url} did not become ready")

    def stop(self) -> str:
        """Stop the server (SIGTERM) and return everything it printed."""
        if self.log.closed:
            return self.output
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.seek(0)
        self.output = self.log.read().decode(errors="replace")
        self.log.close()
        return self.output


@pytest.fixture(scope="session")
def server() -> Iterator[HookServer]:
    hook = HookServer()
    try:
        hook.wait_ready("/readyz")
        yield hook
    finally:
        hook.stop()


@pytest.fixture(scope="session")
def client(server: HookServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


@pytest.fixture(autouse=True)
def every_status_fits_the_crd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every status the hook computes in any test must validate against the committed CRD's
    status schema with unknown fields rejected: a field the API server prunes would make
    Metacontroller rewrite status on every sync."""
    import hooks.core.status
    from hooks.api.status import LLMDeploymentStatus

    from tests.crdschema import root_schema, schema_problems

    status_schema = root_schema()["properties"]["status"]
    original = hooks.core.status._status

    def checked(*args: Any, **kwargs: Any) -> LLMDeploymentStatus:
        status = original(*args, **kwargs)
        problems = schema_problems(status_schema, status.as_json())
        assert not problems, f"status does not fit the CRD: {problems}"
        return status

    monkeypatch.setattr(hooks.core.status, "_status", checked)
