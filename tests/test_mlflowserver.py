"""tests/mlflowserver.py against a real `mlflow server`: what the helpers write is what the REST API
2.0 reads back, and a restart keeps it. One server for the module: each start takes seconds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.mlflowserver import DEFAULT_EXPERIMENT, MLflowServer


@pytest.fixture(scope="module")
def mlflow() -> Iterator[MLflowServer]:
    with MLflowServer() as server:
        yield server


def get(server: MLflowServer, endpoint: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}/api/2.0/mlflow/{endpoint}", params=params, timeout=10)


def by_alias(server: MLflowServer, name: str, alias: str) -> httpx.Response:
    return get(server, "registered-models/alias", name=name, alias=alias)


def versions(answer: dict[str, Any]) -> dict[str, str]:
    """version -> stage, of a get-latest-versions answer."""
    return {v["version"]: v["current_stage"] for v in answer.get("model_versions", [])}


def test_versions_count_up_and_carry_their_run(mlflow: MLflowServer) -> None:
    mlflow.create_model("counted")
    run_id = mlflow.create_run()
    assert mlflow.create_version("counted", "s3://models/counted/1") == "1"
    assert mlflow.create_version("counted", f"runs:/{run_id}/model", run_id=run_id) == "2"
    response = get(mlflow, "model-versions/get", name="counted", version="2")
    assert response.status_code == 200, response.text
    version = response.json()["model_version"]
    assert (version["source"], version["run_id"], version["status"]) == (f"runs:/{run_id}/model", run_id, "READY")
    assert get(mlflow, "model-versions/get", name="counted", version="3").json()["error_code"] == \
        "RESOURCE_DOES_NOT_EXIST"


def test_aliases_point_move_and_go(mlflow: MLflowServer) -> None:
    mlflow.create_model("aliased")
    first, second = (mlflow.create_version("aliased", f"s3://models/aliased/{n}") for n in (1, 2))
    mlflow.set_alias("aliased", "champion", first)
    answer = by_alias(mlflow, "aliased", "champion")
    assert answer.status_code == 200, answer.text
    assert (answer.json()["model_version"]["version"], answer.json()["model_version"]["aliases"]) == \
        (first, ["champion"])
    mlflow.set_alias("aliased", "champion", second)
    assert by_alias(mlflow, "aliased", "champion").json()["model_version"]["version"] == second
    mlflow.delete_alias("aliased", "champion")
    gone = by_alias(mlflow, "aliased", "champion")
    assert (gone.status_code, gone.json()["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    mlflow.delete_alias("aliased", "champion")  # not set: still a 200


def test_latest_versions_per_stage(mlflow: MLflowServer) -> None:
    mlflow.create_model("staged")
    one, two, three, four = (mlflow.create_version("staged", f"s3://models/staged/{n}") for n in range(1, 5))
    mlflow.transition_stage("staged", one, "Production")
    mlflow.transition_stage("staged", two, "Staging")
    mlflow.transition_stage("staged", three, "Production")  # archive_existing_versions false: one stays
    assert get(mlflow, "model-versions/get", name="staged", version=one).json()["model_version"][
        "current_stage"] == "Production"
    production = get(mlflow, "registered-models/get-latest-versions", name="staged", stages="Production")
    assert production.status_code == 200, production.text
    assert versions(production.json()) == {three: "Production"}
    assert versions(get(mlflow, "registered-models/get-latest-versions", name="staged").json()) == \
        {three: "Production", two: "Staging", four: "None"}
    posted = mlflow.api("POST", "registered-models/get-latest-versions", body={"name": "staged",
                                                                               "stages": ["Staging", "None"]})
    assert versions(posted) == {two: "Staging", four: "None"}


def test_download_uri_resolves_models_sources(mlflow: MLflowServer) -> None:
    mlflow.create_model("downloaded")
    model_id = mlflow.create_logged_model()
    plain = mlflow.create_version("downloaded", "s3://models/downloaded/1")
    pinned = mlflow.create_version("downloaded", f"models:/downloaded/{plain}")
    logged = mlflow.create_version("downloaded", f"models:/{model_id}", model_id=model_id)

    def download_uri(version: str) -> str:
        response = get(mlflow, "model-versions/get-download-uri", name="downloaded", version=version)
        assert response.status_code == 200, response.text
        uri: str = response.json()["artifact_uri"]
        return uri

    assert download_uri(plain) == download_uri(pinned) == "s3://models/downloaded/1"
    assert download_uri(logged) == str(mlflow.directory / "artifacts" / DEFAULT_EXPERIMENT / "models" / model_id / "artifacts")
    stored = get(mlflow, "model-versions/get", name="downloaded", version=logged).json()["model_version"]
    assert stored["source"] == f"models:/{model_id}"
    assert "model_id" not in stored


@pytest.mark.parametrize(("name", "source"), [
    ("local-path", "/srv/models/llama"),  # local sources need the run_id of a run whose artifacts hold them
    ("file-uri", "file:///srv/models/llama"),
    ("https", "https://example.com/llama"),  # the server would connect to that host
    ("dot-dot", "s3://models/../llama"),
    ("runs-without-run-id", "runs:/0123456789abcdef/model"),
    ("logged-model-without-model-id", "models:/m-0123456789abcdef"),
])
def test_sources_the_server_refuses(mlflow: MLflowServer, name: str, source: str) -> None:
    mlflow.create_model(name)
    with pytest.raises(RuntimeError, match="INVALID_PARAMETER_VALUE"):
        mlflow.create_version(name, source)


def test_stop_and_start_keep_port_and_store(mlflow: MLflowServer) -> None:
    mlflow.create_model("kept")
    version = mlflow.create_version("kept", "gs://models/kept/1")
    mlflow.set_alias("kept", "champion", version)
    url = mlflow.url
    mlflow.stop()
    with pytest.raises(httpx.ConnectError):
        by_alias(mlflow, "kept", "champion")
    mlflow.start()
    assert mlflow.url == url
    answer = by_alias(mlflow, "kept", "champion")
    assert answer.status_code == 200, answer.text
    assert (answer.json()["model_version"]["version"], answer.json()["model_version"]["source"]) == \
        (version, "gs://models/kept/1")
