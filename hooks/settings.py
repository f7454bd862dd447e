"""The hook's configuration: one object built once at start-up and passed in.

Nothing on the sync path reads the environment; `Settings.from_env` is called by the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hooks.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_ISTIO_API_VERSION = "networking.istio.io/v1"
DEFAULT_TEMPLATES_POLL_SECONDS = 2.0  # how often a mounted override folder is checked for changes
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
# Metacontroller syncs at most 5 parents at once per controller (its --workers): far more than
# that in flight means a backlog that would outlast its 10 s timeout, so answer 429 instead.
DEFAULT_MAX_IN_FLIGHT = 32
DEFAULT_CACHE_SIZE = 16384  # resources remembered: a fleet this size resyncs without re-rendering
DEFAULT_GRACEFUL_SHUTDOWN_SECONDS = 25  # under the pod's 30 s termination grace period
ISTIO_API_VERSIONS = ("networking.istio.io/v1", "networking.istio.io/v1beta1")

DEFAULT_ENGINE_IMAGES: Mapping[str, str] = {
    "vllm": "vllm/vllm-openai:v0.11.0",
    "tgi": "ghcr.io/huggingface/text-generation-inference:3.3.6",
    "sglang": "lmsysorg/sglang:v0.5.3",
    "triton": "nvcr.io/nvidia/tritonserver:25.09-vllm-python-py3",
}

DEFAULT_DOWNLOADER_IMAGES: Mapping[str, str] = {
    "s3": "amazon/aws-cli:2.31.10",
    "gs": "gcr.io/google.com/cloudsdktool/google-cloud-cli:541.0.0-slim",
    "https": "curlimages/curl:8.16.0",
    "models": "ghcr.io/mlflow/mlflow:v3.4.0",
}


def _positive_number(env: Mapping[str, str], name: str) -> float:
    try:
        value = float(env[name])
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{name} must be a positive number, not {env[name]!r}")
    return value


def shipped_templates_dir() -> Path:
    """The templates that come with llmdeploy: inside the installed package, or the
    repository's `templates/` folder in a development checkout."""
    packaged = Path(__file__).resolve().parent / "templates"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "templates"


@dataclass(frozen=True)
class Settings:
    """Everything the hook can be configured with, with its defaults."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    templates_dir: Path | None = None  # override folder on top of the shipped templates
    templates_poll_seconds: float = DEFAULT_TEMPLATES_POLL_SECONDS
    istio_api_version: str = DEFAULT_ISTIO_API_VERSION
    engine_images: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ENGINE_IMAGES))
    downloader_images: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_DOWNLOADER_IMAGES))
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    cache_size: int = DEFAULT_CACHE_SIZE  # rendered resources remembered (about 3 KiB each)
    graceful_shutdown_seconds: float = DEFAULT_GRACEFUL_SHUTDOWN_SECONDS
    log_level: str = "INFO"
    log_format: str = "auto"  # json, text, or auto: text in a terminal
    auth_token_file: Path | None = None  # set: /sync requires "Authorization: Bearer <its content>"
    tls_cert_file: Path | None = None  # set with tls_key_file: serve HTTPS
    tls_key_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ConfigError("TLS needs both a certificate file and a key file")
        if self.log_format not in ("auto", "json", "text"):
            raise ConfigError(f"log format must be auto, json or text, not {self.log_format!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ConfigError(f"log level must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {self.log_level!r}")
        if self.istio_api_version not in ISTIO_API_VERSIONS:
            raise ConfigError(
                f"istio API version must be one of {', '.join(ISTIO_API_VERSIONS)}, "
                f"not {self.istio_api_version!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from LLMDEPLOY_* variables; keyword overrides (from CLI flags) win.

        LLMDEPLOY_TEMPLATES_DIR, LLMDEPLOY_TEMPLATES_POLL_SECONDS, LLMDEPLOY_ISTIO_API_VERSION, LLMDEPLOY_<ENGINE>_IMAGE,
        LLMDEPLOY_AUTH_TOKEN_FILE, LLMDEPLOY_TLS_CERT_FILE, LLMDEPLOY_TLS_KEY_FILE,
        LLMDEPLOY_MAX_BODY_BYTES, LLMDEPLOY_MAX_IN_FLIGHT, LLMDEPLOY_CACHE_SIZE,
        LLMDEPLOY_GRACEFUL_SHUTDOWN_SECONDS, LLMDEPLOY_LOG_LEVEL, LLMDEPLOY_LOG_FORMAT.
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if env.get("LLMDEPLOY_TEMPLATES_POLL_SECONDS"):
            values["templates_poll_seconds"] = _positive_number(env, "LLMDEPLOY_TEMPLATES_POLL_SECONDS")
        for name in ("max_body_bytes", "max_in_flight", "cache_size"):
            if env.get(f"LLMDEPLOY_{name.upper()}"):
                values[name] = int(_positive_number(env, f"LLMDEPLOY_{name.upper()}"))
        if env.get("LLMDEPLOY_GRACEFUL_SHUTDOWN_SECONDS"):
            values["graceful_shutdown_seconds"] = _positive_number(env, "LLMDEPLOY_GRACEFUL_SHUTDOWN_SECONDS")
        for name in ("log_level", "log_format"):
            if env.get(f"LLMDEPLOY_{name.upper()}"):
                values[name] = env[f"LLMDEPLOY_{name.upper()}"]
        if env.get("LLMDEPLOY_TEMPLATES_DIR"):
            values["templates_dir"] = Path(env["LLMDEPLOY_TEMPLATES_DIR"])
        if "LLMDEPLOY_ISTIO_API_VERSION" in env:
            values["istio_api_version"] = env["LLMDEPLOY_ISTIO_API_VERSION"]
        for name in ("auth_token_file", "tls_cert_file", "tls_key_file"):
            if env.get(f"LLMDEPLOY_{name.upper()}"):
                values[name] = Path(env[f"LLMDEPLOY_{name.upper()}"])
        images = dict(DEFAULT_ENGINE_IMAGES)
        for engine in DEFAULT_ENGINE_IMAGES:
            images[engine] = env.get(f"LLMDEPLOY_{engine.upper()}_IMAGE", images[engine])
        values["engine_images"] = images
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
