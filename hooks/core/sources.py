"""Where a model's weights come from, and how the engine gets to see them as a local path or
a Hugging Face id (never a URL it cannot read).

hf:// is loaded by the engine itself (into the Hugging Face cache, which keeps every repository
and revision apart); s3://, gs://, https:// and models:/ are fetched into the model cache by an
init container, each source and revision into a directory of its own, so that tracks, resources
and revisions sharing one cache claim never mix files; pvc:// mounts a claim read-only; oci:// is
an image volume.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

MODEL_CACHE_PATH = "/model-cache"
DOWNLOADS_PATH = f"{MODEL_CACHE_PATH}/models"
MODEL_SOURCE_PATH = "/model-source"
COMPLETE_MARKER = ".llmdeploy-complete"

# Fetches into a private directory and moves it into place only once complete, so that a pod
# never sees a half-written or foreign model, and one that restarts reuses what is there.
# The script is ours; every value from the resource arrives as a positional argument, so no
# shell ever parses a resource's text.
FETCH_SCRIPT = f"""set -eu
target="$1"; shift
if [ -f "$target/{COMPLETE_MARKER}" ]; then exit 0; fi
partial="$target.partial-${{HOSTNAME:-$$}}"
rm -rf "$partial"
mkdir -p "$partial"
cd "$partial"
"$@"
touch {COMPLETE_MARKER}
cd /
if [ -e "$target" ]; then rm -rf "$partial"; else mv "$partial" "$target"; fi
rm -rf "$target/$(basename "$partial")"
"""


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


def download_directory(uri: str, revision: str | None) -> str:
    """The cache directory of one source and revision: readable, and unique by a digest."""
    key = hashlib.sha256(f"{uri}\n{revision or ''}".encode()).hexdigest()[:16]
    readable = re.sub(r"[^a-z0-9]+", "-", uri.lower()).strip("-")[:48].rstrip("-")
    return f"{DOWNLOADS_PATH}/{readable}-{key}"


def _downloaded(scheme: str, uri: str, revision: str | None, images: Mapping[str, str]) -> ModelLocation:
    target = download_directory(uri, revision)
    engine_model = target
    fetch: tuple[str, ...]  # run inside the private directory, so it writes to "."
    if scheme == "s3":
        fetch = ("aws", "s3", "sync", "--no-progress", uri, ".")
    elif scheme == "gs":
        fetch = ("gcloud", "storage", "rsync", "--recursive", uri, ".")
    elif scheme == "models":
        versioned = f"{uri.rstrip('/')}/{revision}" if revision else uri
        fetch = ("mlflow", "artifacts", "download", "--artifact-uri", versioned, "--dst-path", ".")
    else:  # https: one file, e.g. a GGUF
        name = _file_name(uri)
        engine_model = f"{target}/{name}"
        fetch = ("curl", "--fail", "--location", "--silent", "--show-error", "--output", name, uri)
    command = ("sh", "-c", FETCH_SCRIPT, "fetch", target, *fetch)
    return ModelLocation("download", engine_model, download=Download(images[scheme], command))


def _file_name(url: str) -> str:
    """The last path segment of an https:// URL (without query or fragment), or "model"."""
    path = url.removeprefix("https://").partition("#")[0].partition("?")[0]
    name = path.rsplit("/", 1)[-1] if "/" in path else ""
    return name if name and name not in (".", "..") else "model"
