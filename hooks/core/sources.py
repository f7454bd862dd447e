"""Where a model's weights come from, and how the engine gets to see them as a local path or
a Hugging Face id (never a URL it cannot read).

hf:// is loaded by the engine itself; s3://, gs://, https:// and models:/ are fetched into the
model cache by an init container; pvc:// mounts a claim read-only; oci:// is an image volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

MODEL_CACHE_PATH = "/model-cache"
DOWNLOAD_PATH = f"{MODEL_CACHE_PATH}/model"
MODEL_SOURCE_PATH = "/model-source"


@dataclass(frozen=True)
class Download:
    """An init container that fetches the model into the cache before the engine starts."""

    image: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class ModelLocation:
    kind: Literal["hub", "download", "pvc", "oci"]
    engine_model: str  # what the engine's --model (or equivalent) receives
    pass_revision: bool = False  # only the Hugging Face hub understands revisions
    mount_path: str = ""  # where a pvc or oci source is mounted
    claim_name: str = ""
    image_reference: str = ""
    download: Download | None = field(default=None)


def locate(uri: str, revision: str | None, downloader_images: Mapping[str, str]) -> ModelLocation:
    """How a model at `uri` (already validated against the URI rule) reaches the engine."""
    scheme, _, rest = uri.partition(":")
    rest = rest.removeprefix("//") if scheme != "models" else rest
    if scheme == "hf":
        return ModelLocation("hub", rest, pass_revision=True)
    if scheme == "pvc":
        claim, _, path = rest.partition("/")
        engine_path = f"{MODEL_SOURCE_PATH}/{path}".rstrip("/")
        return ModelLocation("pvc", engine_path, mount_path=MODEL_SOURCE_PATH, claim_name=claim)
    if scheme == "oci":
        return ModelLocation("oci", MODEL_SOURCE_PATH, mount_path=MODEL_SOURCE_PATH, image_reference=rest)
    return _downloaded(scheme, uri, revision, downloader_images)


def _downloaded(scheme: str, uri: str, revision: str | None, images: Mapping[str, str]) -> ModelLocation:
    # Every value is its own argv element: no shell ever parses a resource's text.
    command: tuple[str, ...]
    engine_model = DOWNLOAD_PATH
    if scheme == "s3":
        command = ("aws", "s3", "sync", "--no-progress", uri, DOWNLOAD_PATH)
    elif scheme == "gs":
        command = ("gcloud", "storage", "rsync", "--recursive", uri, DOWNLOAD_PATH)
    elif scheme == "models":
        versioned = f"{uri.rstrip('/')}/{revision}" if revision else uri
        command = ("mlflow", "artifacts", "download", "--artifact-uri", versioned, "--dst-path", DOWNLOAD_PATH)
    else:  # https: one file, e.g. a GGUF
        engine_model = f"{DOWNLOAD_PATH}/{_file_name(uri)}"
        command = ("curl", "--fail", "--location", "--silent", "--show-error", "--create-dirs",
                   "--output", engine_model, uri)
    return ModelLocation("download", engine_model, download=Download(images[scheme], command))


def _file_name(url: str) -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name if name and name not in (".", "..") else "model"
