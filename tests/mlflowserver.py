"""A real MLflow tracking server for tests, with its model registry in a fresh SQLite file.

`mlflow server` runs on 127.0.0.1 in its own process group, and the helpers fill its registry
through the REST API 2.0 only, as the operator reads it:

    with MLflowServer() as mlflow:
        mlflow.create_model("llama")
        version = mlflow.create_version("llama", "s3://models/llama/1")   # "1"
        mlflow.set_alias("llama", "champion", version)

What mlflow 3.17 does, found by trying (see tests/test_mlflowserver.py):

* A start takes about 8 s on two cores, the first one and restarts alike: the CLI and then its
  uvicorn child each import mlflow (the CLI also creates or upgrades the tables). uvicorn binds the
  port only once the app is loaded, so `/health` and the registry answer from the same moment.
* The server rejects some sources when a version is created (400 INVALID_PARAMETER_VALUE): a
  local path or `file:` URI unless `run_id` names a run whose artifact directory holds it;
  `runs:/<id>/...` unless `run_id` is that run; `models:/m-<id>` unless `model_id` is that logged
  model; any path with `..`; and `http(s)`, `ftp` and other schemes naming a host (unless the
  server's MLFLOW_ALLOWED_HOST_ADDRESSED_ARTIFACT_SCHEMES allows them). `s3://`, `gs://`,
  `hf://`, `oci://`, `pvc://` and the like are stored as given.
* Versions of the SQL registry are READY as soon as they are created.
* `get-download-uri` gives the source as stored, except for `models:/` sources, which it resolves
  when the version is created: `models:/<name>/<version>` to that version's download URI,
  `models:/m-<id>` to the logged model's artifact directory. A version's `model_id` is not in any
  REST answer (it is not in the ModelVersion proto).
* An unknown alias is a 400 INVALID_PARAMETER_VALUE, not a 404; deleting one that is not set is
  a 200. An unknown model or version is a 404 RESOURCE_DOES_NOT_EXIST.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.conftest import free_port
from tests.prerequisites import venv_tool

# The experiment every SQL backend store creates ("Default").
DEFAULT_EXPERIMENT = "0"
# Job execution starts a huey consumer, and telemetry talks to the internet: tests need neither.
_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true",
                "DO_NOT_TRACK": "true"}


class MLflowServer:
    """`mlflow server` in its own process group on 127.0.0.1, with an empty registry. `with` starts
    it and, on leaving, stops it and deletes its files; `stop()` and `start()` in between take it
    down and bring it back on the same port and store."""

    def __init__(self, *, startup_timeout: float = 60.0) -> None:
        self.executable = venv_tool("mlflow")
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.directory = Path(tempfile.mkdtemp(prefix="mlflowserver-"))
        self.log_path = self.directory / "mlflow.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start the server (if it is not running) and wait until its registry answers."""
        if self.running:
            return
        command = [self.executable, "server", "--backend-store-uri", f"sqlite:///{self.directory / 'mlflow.db'}",
                   "--default-artifact-root", str(self.directory / "artifacts"), "--host", "127.0.0.1",
                   "--port", str(self.port), "--workers", "1"]
        # A file, not a pipe: nobody reads a pipe while tests run, and a full one blocks the server.
        # A session of its own, so that stop() reaches the uvicorn child too.
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.directory, env={**os.environ, **_ENVIRONMENT},
                                            start_new_session=True)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                code = self.process.returncode
                self.stop()
                raise RuntimeError(f"mlflow server exited with {code} before it was ready:\n{self.log_tail()}")
            try:
                response = httpx.get(f"{self.url}/api/2.0/mlflow/registered-models/search",
                                     params={"max_results": 1}, timeout=2)
                if response.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"mlflow server on {self.url} was not ready within {self.startup_timeout} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server's process group: SIGTERM, then SIGKILL if the server has not exited
        within 10 s, and SIGKILL for whatever of the group outlived it."""
        process, self.process = self.process, None
        if process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop the server and delete its store, artifacts and log."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed, over all its starts."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def api(self, method: str, endpoint: str, *, params: dict[str, Any] | None = None,
            body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One call of the REST API 2.0 (`endpoint` as in `model-versions/create`); an answer other
        than 200 raises with MLflow's error. GET takes `params`, the other methods a JSON `body`."""
        response = httpx.request(method, f"{self.url}/api/2.0/mlflow/{endpoint}", params=params, json=body, timeout=30)
        if response.status_code != 200:
            raise RuntimeError(f"{method} {endpoint} {params or body} failed ({response.status_code}): {response.text}")
        answer: dict[str, Any] = response.json()
        return answer

    def create_model(self, name: str) -> None:
        self.api("POST", "registered-models/create", body={"name": name})

    def create_version(self, name: str, source: str, run_id: str | None = None, model_id: str | None = None,
                       timeout: float = 30.0) -> str:
        """A new version of `name` from `source` (see the module's notes on which sources the server
        takes), once it is READY: its number, as the API writes it."""
        body = {"name": name, "source": source}
        if run_id is not None:
            body["run_id"] = run_id
        if model_id is not None:
            body["model_id"] = model_id
        version: str = self.api("POST", "model-versions/create", body=body)["model_version"]["version"]
        deadline = time.monotonic() + timeout
        while True:
            status = self.api("GET", "model-versions/get", params={"name": name, "version": version})[
                "model_version"]["status"]
            if status == "READY":
                return version
            if status == "FAILED_REGISTRATION" or time.monotonic() > deadline:
                raise RuntimeError(f"version {version} of {name} is {status}, not READY")
            time.sleep(0.1)

    def set_alias(self, name: str, alias: str, version: str) -> None:
        self.api("POST", "registered-models/alias", body={"name": name, "alias": alias, "version": version})

    def delete_alias(self, name: str, alias: str) -> None:
        self.api("DELETE", "registered-models/alias", body={"name": name, "alias": alias})

    def transition_stage(self, name: str, version: str, stage: str) -> None:
        """Move the version to a deprecated stage (None, Staging, Production, Archived), leaving the
        stage's other versions where they are."""
        self.api("POST", "model-versions/transition-stage",
                 body={"name": name, "version": version, "stage": stage, "archive_existing_versions": False})

    def create_run(self) -> str:
        """A new run of the default experiment, for versions that carry a run_id: its id."""
        run_id: str = self.api("POST", "runs/create", body={"experiment_id": DEFAULT_EXPERIMENT})["run"]["info"][
            "run_id"]
        return run_id

    def create_logged_model(self) -> str:
        """A new logged model of the default experiment, as MLflow 3 clients register from
        (source `models:/<id>` with model_id `<id>`): its id, `m-...`."""
        model_id: str = self.api("POST", "logged-models", body={"experiment_id": DEFAULT_EXPERIMENT})["model"][
            "info"]["model_id"]
        return model_id

    def __enter__(self) -> MLflowServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


__all__ = ["DEFAULT_EXPERIMENT", "MLflowServer"]
