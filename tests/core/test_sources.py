"""Where weights land: every downloaded source and revision in a directory of its own, filled
privately and moved into place only when complete. The init container's real command runs
here under sh, with a stand-in for the cloud CLI that copies from a local "bucket"."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from hooks.core.sources import (
    COMPLETE_MARKER,
    MODEL_CACHE_PATH,
    download_directory,
    locate,
)
from hooks.settings import DEFAULT_DOWNLOADER_IMAGES

# A stand-in for `aws s3 sync SRC .`, `gcloud storage rsync --recursive SRC .`, and the
# others: copy the bucket folder named by the URI's path into the current directory.
FAKE_CLI = """#!/bin/sh
set -eu
for last; do :; done
for arg; do case "$arg" in s3://*|gs://*|models:/*) src="$arg";; esac; done
sleep "${FAKE_DELAY:-0}"
[ -n "${FAKE_FAIL:-}" ] && exit 3
path="${src#*://}"; path="${path#models:/}"
cp -R "$BUCKETS/$path/." "$last"
"""


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("aws", "gcloud", "mlflow"):
        (bin_dir / name).write_text(FAKE_CLI)
        (bin_dir / name).chmod(0o755)
    for version in ("v1", "v2"):
        folder = tmp_path / "buckets" / "acme-models" / "llama" / version
        folder.mkdir(parents=True)
        (folder / "weights.safetensors").write_text(f"weights {version}")
        (folder / "config.json").write_text(f"config {version}")
    (tmp_path / "cache").mkdir()
    return tmp_path


def fetch(world: Path, uri: str, revision: str | None = None, pod: str = "pod-a",
          **env: str) -> subprocess.CompletedProcess[str]:
    """Run the init container's command for `uri` against the test's cache folder."""
    location = locate(uri, revision, DEFAULT_DOWNLOADER_IMAGES)
    assert location.download is not None
    cache = str(world / "cache")
    command = [arg.replace(MODEL_CACHE_PATH, cache) if arg.startswith(MODEL_CACHE_PATH) else arg
               for arg in location.download.command]
    environment = {"PATH": f"{world / 'bin'}:{os.environ['PATH']}", "HOSTNAME": pod,
                   "BUCKETS": str(world / "buckets"), **env}
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)


def served(world: Path, uri: str, revision: str | None = None) -> dict[str, str]:
    """What the engine of that source would load: the files at its --model path."""
    path = Path(locate(uri, revision, DEFAULT_DOWNLOADER_IMAGES).engine_model.replace(
        MODEL_CACHE_PATH, str(world / "cache")))
    return {p.name: p.read_text() for p in path.iterdir() if p.name != COMPLETE_MARKER}


def test_stable_and_canary_on_one_claim_keep_their_own_weights(world: Path) -> None:
    stable, canary = "s3://acme-models/llama/v1", "s3://acme-models/llama/v2"
    assert fetch(world, stable).returncode == 0 and fetch(world, canary, pod="pod-b").returncode == 0
    assert served(world, stable) == {"weights.safetensors": "weights v1", "config.json": "config v1"}
    assert served(world, canary) == {"weights.safetensors": "weights v2", "config.json": "config v2"}
    # The stable restarts: it finds its own complete copy and does not fetch again.
    (world / "buckets" / "acme-models" / "llama" / "v1" / "weights.safetensors").write_text("changed in place")
    assert fetch(world, stable, pod="pod-c").returncode == 0
    assert served(world, stable)["weights.safetensors"] == "weights v1"


@pytest.mark.parametrize("other", [("s3://acme-models/llama/v1", "2"), ("gs://acme-models/llama/v1", None),
                                   ("models:/acme-models/llama/v1", None), ("s3://acme-models/llama/v1/", None)])
def test_another_source_or_revision_is_another_directory(other: tuple[str, str | None]) -> None:
    assert download_directory(*other) != download_directory("s3://acme-models/llama/v1", None)


def test_a_failed_download_leaves_nothing_an_engine_could_load(world: Path) -> None:
    uri = "s3://acme-models/llama/v1"
    assert fetch(world, uri, FAKE_FAIL="1").returncode != 0
    assert not Path(download_directory(uri, None).replace(MODEL_CACHE_PATH, str(world / "cache"))).exists()
    assert fetch(world, uri).returncode == 0 and served(world, uri)["config.json"] == "config v1"


def test_concurrent_pods_on_one_claim_end_with_one_complete_copy(world: Path) -> None:
    uri = "s3://acme-models/llama/v2"
    results: list[int] = []
    pods = [threading.Thread(target=lambda p=pod: results.append(fetch(world, uri, pod=p, FAKE_DELAY="0.3")
                                                                 .returncode)) for pod in ("a", "b", "c")]
    for pod in pods:
        pod.start()
    for pod in pods:
        pod.join()
    assert results == [0, 0, 0]
    target = Path(download_directory(uri, None).replace(MODEL_CACHE_PATH, str(world / "cache")))
    assert sorted(p.name for p in target.iterdir()) == sorted([COMPLETE_MARKER, "config.json", "weights.safetensors"])
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_a_uri_is_data_to_the_shell(world: Path) -> None:
    uri = "s3://acme-models/llama/v1$(touch${IFS}pwned)`touch${IFS}pwned2`;touch${IFS}pwned3"
    fetch(world, uri)
    assert not list(world.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))
