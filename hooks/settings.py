"""The hook's configuration: one grouped object, read once at start-up and passed in.

Nothing on the sync path reads the environment; `Settings.from_env` is called by the CLI.
`ChildSettings` is the part that shapes rendered children, so it is part of every sync's
inputs (and of the desired-state cache key); the other groups configure the server.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.errors import ConfigError

DEFAULT_ISTIO_API_VERSION = "networking.istio.io/v1"
ISTIO_API_VERSIONS = ("networking.istio.io/v1", "networking.istio.io/v1beta1")
ROUTERS = ("istio", "gateway-api", "linkerd")  # besides `none`, which every install has
DEFAULT_ROUTERS = ("istio",)
DEFAULT_GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
GATEWAY_API_VERSIONS = ("gateway.networking.k8s.io/v1", "gateway.networking.k8s.io/v1beta1")
DEFAULT_MONITORING_NAMESPACES = ("monitoring",)  # where kube-prometheus-stack installs Prometheus
DEFAULT_TRUST_DOMAIN = "cluster.local"  # Istio's, in the principals of `access`
DEFAULT_TEMPLATES_POLL_SECONDS = 2.0  # how often a mounted override folder is checked for changes
DEFAULT_MAX_BODY_BYTES = 16 << 20
# Bodies held at once (read or being answered); a decoded request takes about five times its
# body, so this bounds the hook's own memory (README: "Operating the hook").
DEFAULT_MAX_BODIES_BYTES = 32 << 20
DEFAULT_BODY_TIMEOUT_SECONDS = 5.0
# Metacontroller syncs at most 5 parents at once per controller (its --workers): far more than
# that in flight means a backlog that would outlast its 10 s timeout, so answer 429 instead.
DEFAULT_MAX_IN_FLIGHT = 32
DEFAULT_CACHE_SIZE = 16384  # resources remembered: a fleet this size resyncs without re-rendering
DEFAULT_CACHE_BYTES = 48 << 20  # and the compressed bytes they take, at most (each memory: children, answers)
DEFAULT_GRACEFUL_SHUTDOWN_SECONDS = 25.0  # under the pod's 30 s termination grace period
# Rendering: two workers, so that one runaway template leaves one to the rest; 3 s each, so
# that waiting for a worker and rendering stay inside Metacontroller's 10 s.
DEFAULT_RENDER_WORKERS = 2
DEFAULT_RENDER_TIMEOUT_SECONDS = 3.0
DEFAULT_RENDER_MEMORY_MIB = 256
DEFAULT_SYNC_DEADLINE_SECONDS = 8.0  # waiting for a worker and rendering, inside Metacontroller's 10 s
DEFAULT_FAILURE_MEMORY_SECONDS = 60.0  # a render that failed is answered from memory this long
DEFAULT_PROMETHEUS_TIMEOUT_SECONDS = 3.0  # one measurement's queries, all at once
PROMETHEUS_URL_ENV = "LLMDEPLOY_PROMETHEUS_URL"  # provider "default"; _<NAME> suffixes name others
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("auto", "json", "text")

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


@dataclass(frozen=True)
class ChildSettings:
    """What the hook's configuration contributes to every resource's children."""

    istio_api_version: str = DEFAULT_ISTIO_API_VERSION
    # The routers whose child types the CompositeController declares: a resource asking for
    # another one is refused, never answered with a child Metacontroller does not watch.
    routers: tuple[str, ...] = DEFAULT_ROUTERS
    gateway_api_version: str = DEFAULT_GATEWAY_API_VERSION
    engine_images: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ENGINE_IMAGES))
    downloader_images: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_DOWNLOADER_IMAGES))
    analysis_providers: tuple[str, ...] = ()  # the Prometheus names a spec may use (never their URLs)
    # `access`: where the exposure path's proxies run (None: each exposure's usual namespace,
    # README "Security"), where the Prometheus scraper runs, and the mesh's trust domain.
    ingress_namespaces: tuple[str, ...] | None = None
    monitoring_namespaces: tuple[str, ...] = DEFAULT_MONITORING_NAMESPACES
    trust_domain: str = DEFAULT_TRUST_DOMAIN

    def __post_init__(self) -> None:
        if self.istio_api_version not in ISTIO_API_VERSIONS:
            raise ConfigError(f"the Istio API version must be one of {', '.join(ISTIO_API_VERSIONS)}, "
                              f"not {self.istio_api_version!r}")
        if self.gateway_api_version not in GATEWAY_API_VERSIONS:
            raise ConfigError(f"LLMDEPLOY_GATEWAY_API_VERSION must be one of {', '.join(GATEWAY_API_VERSIONS)}, "
                              f"not {self.gateway_api_version!r}")
        unknown = [r for r in self.routers if r not in ROUTERS]
        if unknown:
            raise ConfigError(f"LLMDEPLOY_ROUTERS names {', '.join(map(repr, unknown))}: the routers are "
                              f"{', '.join(ROUTERS)} (and none, always there)")
        for setting, namespaces in (("LLMDEPLOY_INGRESS_NAMESPACES", self.ingress_namespaces or ()),
                                    ("LLMDEPLOY_MONITORING_NAMESPACES", self.monitoring_namespaces)):
            bad = [n for n in namespaces if not _DNS_LABEL.match(n)]
            if bad:
                raise ConfigError(f"{setting} must list namespaces (DNS labels), not {', '.join(map(repr, bad))}")
        if not _TRUST_DOMAIN.match(self.trust_domain):
            raise ConfigError(f"LLMDEPLOY_TRUST_DOMAIN must be a trust domain such as cluster.local, not "
                              f"{self.trust_domain!r}")
        for kind, images in (("engine", self.engine_images), ("downloader", self.downloader_images)):
            for name, image in images.items():
                if not image.strip() or any(c.isspace() for c in image):
                    raise ConfigError(f"the {name} {kind} image must be an image reference, not {image!r}")

    @property
    def istio_security_api_version(self) -> str:
        """security.istio.io at the version of the networking API (v1 from Istio 1.22)."""
        return self.istio_api_version.replace("networking.istio.io", "security.istio.io")

    @property
    def http_routes(self) -> bool:
        """Whether the install declares Gateway API HTTPRoutes (the gateway-api or linkerd part)."""
        return "gateway-api" in self.routers or "linkerd" in self.routers


@dataclass(frozen=True)
class TemplateSettings:
    folder: Path | None = None  # override folder on top of the shipped templates
    poll_seconds: float = DEFAULT_TEMPLATES_POLL_SECONDS


@dataclass(frozen=True)
class ServerSettings:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_bodies_bytes: int = DEFAULT_MAX_BODIES_BYTES
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    cache_size: int = DEFAULT_CACHE_SIZE  # resources remembered by each memory (about 3 KiB each)
    cache_bytes: int = DEFAULT_CACHE_BYTES
    graceful_shutdown_seconds: float = DEFAULT_GRACEFUL_SHUTDOWN_SECONDS
    metrics_port: int | None = None  # set: /metrics is also served on this port, alone
    auth_token_file: Path | None = None  # set: /sync requires "Authorization: Bearer <its content>"
    tls_cert_file: Path | None = None  # set with tls_key_file: serve HTTPS
    tls_key_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ConfigError("TLS needs both a certificate file and a key file")
        if self.max_bodies_bytes < self.max_body_bytes:
            raise ConfigError("LLMDEPLOY_MAX_BODIES_BYTES must hold at least one body of LLMDEPLOY_MAX_BODY_BYTES")


@dataclass(frozen=True)
class RenderSettings:
    """Render workers: processes, and each render's budget of time and memory."""

    workers: int = DEFAULT_RENDER_WORKERS
    timeout_seconds: float = DEFAULT_RENDER_TIMEOUT_SECONDS
    memory_mib: int = DEFAULT_RENDER_MEMORY_MIB
    sync_deadline_seconds: float = DEFAULT_SYNC_DEADLINE_SECONDS
    failure_memory_seconds: float = DEFAULT_FAILURE_MEMORY_SECONDS


@dataclass(frozen=True)
class AnalysisSettings:
    """The Prometheus servers canary analysis may query, by provider name: the hook's
    configuration, never a resource's, so no resource chooses an address the hook calls."""

    providers: dict[str, str] = field(default_factory=dict)  # name -> base URL
    timeout_seconds: float = DEFAULT_PROMETHEUS_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        for name, url in self.providers.items():
            if not _DNS_LABEL.match(name):
                raise ConfigError(f"the Prometheus provider name {name!r} must be a DNS label")
            if not _BASE_URL.match(url):
                raise ConfigError(f"the Prometheus URL of provider {name} must be http(s)://host[:port][/path], "
                                  f"without query or fragment, not {url!r}")


DEFAULT_REGISTRY_REFRESH_SECONDS = 60.0
DEFAULT_REGISTRY_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class RegistrySettings:
    """The MLflow model registry the hook resolves `models:/name@alias` with, and its
    credentials: the hook's configuration (never a resource's)."""

    tracking_uri: str | None = None
    token: str | None = None  # MLFLOW_TRACKING_TOKEN: a bearer token
    username: str | None = None  # MLFLOW_TRACKING_USERNAME and _PASSWORD: basic auth
    password: str | None = None
    refresh_seconds: float = DEFAULT_REGISTRY_REFRESH_SECONDS  # how long a resolution is reused
    timeout_seconds: float = DEFAULT_REGISTRY_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        if self.tracking_uri is not None and not _BASE_URL.match(self.tracking_uri):
            raise ConfigError("LLMDEPLOY_MLFLOW_TRACKING_URI must be http(s)://host[:port][/path], without "
                              f"credentials, query or fragment, not {self.tracking_uri!r}")
        if (self.username is None) != (self.password is None):
            raise ConfigError("MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD go together")


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_TRUST_DOMAIN = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9._]{0,251}[A-Za-z0-9])?$")
_BASE_URL = re.compile(r"^https?://[^\s/?#@]+(/[^\s?#]*)?$")


@dataclass(frozen=True)
class LogSettings:
    level: str = "INFO"
    format: str = "auto"  # json, text, or auto: text in a terminal

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ConfigError(f"the log format must be auto, json or text, not {self.format!r}")
        if self.level.upper() not in LOG_LEVELS:
            raise ConfigError(f"the log level must be one of {', '.join(LOG_LEVELS)}, not {self.level!r}")


@dataclass(frozen=True)
class Settings:
    """Everything the hook can be configured with, with its defaults."""

    children: ChildSettings = field(default_factory=ChildSettings)
    templates: TemplateSettings = field(default_factory=TemplateSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    render: RenderSettings = field(default_factory=RenderSettings)
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    logging: LogSettings = field(default_factory=LogSettings)
    registry: RegistrySettings = field(default_factory=RegistrySettings)

    def __post_init__(self) -> None:
        if set(self.children.analysis_providers) != set(self.analysis.providers):
            raise ConfigError("the analysis providers specs may name must be the configured Prometheus servers")

    @classmethod
    def with_prometheus(cls, providers: Mapping[str, str], timeout_seconds: float = DEFAULT_PROMETHEUS_TIMEOUT_SECONDS,
                        children: ChildSettings | None = None, **groups: Any) -> Settings:
        """Settings whose analysis may query `providers` (name -> URL)."""
        children = dataclasses.replace(children or ChildSettings(), analysis_providers=tuple(sorted(providers)))
        return cls(children=children, analysis=AnalysisSettings(dict(providers), timeout_seconds), **groups)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from the LLMDEPLOY_* variables the README lists; ConfigError names the
        first one that is unusable."""
        env = os.environ if environ is None else environ
        return cls.with_prometheus(
            _prometheus_urls(env),
            _positive(env, "LLMDEPLOY_PROMETHEUS_TIMEOUT_SECONDS", DEFAULT_PROMETHEUS_TIMEOUT_SECONDS),
            children=ChildSettings(
                istio_api_version=env.get("LLMDEPLOY_ISTIO_API_VERSION", DEFAULT_ISTIO_API_VERSION),
                routers=_routers(env),
                gateway_api_version=env.get("LLMDEPLOY_GATEWAY_API_VERSION") or DEFAULT_GATEWAY_API_VERSION,
                engine_images={name: env.get(f"LLMDEPLOY_{name.upper()}_IMAGE", image)
                               for name, image in DEFAULT_ENGINE_IMAGES.items()},
                ingress_namespaces=_names(env, "LLMDEPLOY_INGRESS_NAMESPACES"),
                monitoring_namespaces=_names(env, "LLMDEPLOY_MONITORING_NAMESPACES") or DEFAULT_MONITORING_NAMESPACES,
                trust_domain=env.get("LLMDEPLOY_TRUST_DOMAIN", "").strip() or DEFAULT_TRUST_DOMAIN,
            ),
            templates=TemplateSettings(
                folder=_path(env, "LLMDEPLOY_TEMPLATES_DIR"),
                poll_seconds=_positive(env, "LLMDEPLOY_TEMPLATES_POLL_SECONDS", DEFAULT_TEMPLATES_POLL_SECONDS),
            ),
            server=ServerSettings(
                max_body_bytes=_whole(env, "LLMDEPLOY_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
                max_bodies_bytes=_whole(env, "LLMDEPLOY_MAX_BODIES_BYTES", DEFAULT_MAX_BODIES_BYTES),
                body_timeout_seconds=_positive(env, "LLMDEPLOY_BODY_TIMEOUT_SECONDS", DEFAULT_BODY_TIMEOUT_SECONDS),
                max_in_flight=_whole(env, "LLMDEPLOY_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT),
                cache_size=_whole(env, "LLMDEPLOY_CACHE_SIZE", DEFAULT_CACHE_SIZE),
                cache_bytes=_whole(env, "LLMDEPLOY_CACHE_BYTES", DEFAULT_CACHE_BYTES),
                graceful_shutdown_seconds=_positive(env, "LLMDEPLOY_GRACEFUL_SHUTDOWN_SECONDS",
                                                    DEFAULT_GRACEFUL_SHUTDOWN_SECONDS),
                metrics_port=_port(env, "LLMDEPLOY_METRICS_PORT"),
                auth_token_file=_path(env, "LLMDEPLOY_AUTH_TOKEN_FILE"),
                tls_cert_file=_path(env, "LLMDEPLOY_TLS_CERT_FILE"),
                tls_key_file=_path(env, "LLMDEPLOY_TLS_KEY_FILE"),
            ),
            render=RenderSettings(
                workers=_whole(env, "LLMDEPLOY_RENDER_WORKERS", DEFAULT_RENDER_WORKERS),
                timeout_seconds=_positive(env, "LLMDEPLOY_RENDER_TIMEOUT_SECONDS", DEFAULT_RENDER_TIMEOUT_SECONDS),
                memory_mib=_whole(env, "LLMDEPLOY_RENDER_MEMORY_MIB", DEFAULT_RENDER_MEMORY_MIB),
                sync_deadline_seconds=_positive(env, "LLMDEPLOY_SYNC_DEADLINE_SECONDS", DEFAULT_SYNC_DEADLINE_SECONDS),
                failure_memory_seconds=_positive(env, "LLMDEPLOY_FAILURE_MEMORY_SECONDS",
                                                 DEFAULT_FAILURE_MEMORY_SECONDS),
            ),
            logging=LogSettings(level=env.get("LLMDEPLOY_LOG_LEVEL") or "INFO",
                                format=env.get("LLMDEPLOY_LOG_FORMAT") or "auto"),
            registry=RegistrySettings(
                tracking_uri=(env.get("LLMDEPLOY_MLFLOW_TRACKING_URI") or "").strip().rstrip("/") or None,
                token=(env.get("MLFLOW_TRACKING_TOKEN") or "").strip() or None,  # a Secret from a file ends in \n
                username=env.get("MLFLOW_TRACKING_USERNAME") or None,
                password=env.get("MLFLOW_TRACKING_PASSWORD") or None,
                refresh_seconds=_positive(env, "LLMDEPLOY_REGISTRY_REFRESH_SECONDS", DEFAULT_REGISTRY_REFRESH_SECONDS),
                timeout_seconds=_positive(env, "LLMDEPLOY_REGISTRY_TIMEOUT_SECONDS", DEFAULT_REGISTRY_TIMEOUT_SECONDS),
            ),
        )


MAX_WHOLE_SETTING = 2**40  # far above any sensible limit, and still a machine integer


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    """A positive whole number: '0.5' or '1e400' is a mistake to report, not to round."""
    text = env.get(name, "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MAX_WHOLE_SETTING:
        raise ConfigError(f"{name} must be a whole number from 1 to {MAX_WHOLE_SETTING}, not {env[name]!r}")
    return int(text)


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 10**6:
        raise ConfigError(f"{name} must be a positive number of seconds, not {env[name]!r}")
    return value


def _port(env: Mapping[str, str], name: str) -> int | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ConfigError(f"{name} must be a port number from 1 to 65535, not {env[name]!r}")
    return int(text)


def _prometheus_urls(env: Mapping[str, str]) -> dict[str, str]:
    """LLMDEPLOY_PROMETHEUS_URL is provider `default`; LLMDEPLOY_PROMETHEUS_URL_EU_WEST is `eu-west`."""
    urls = {}
    for name, value in env.items():
        if name == PROMETHEUS_URL_ENV or name.startswith(PROMETHEUS_URL_ENV + "_"):
            provider = name[len(PROMETHEUS_URL_ENV) + 1:].lower().replace("_", "-") or "default"
            if value.strip():
                urls[provider] = value.strip().rstrip("/")
    return urls


def _routers(env: Mapping[str, str]) -> tuple[str, ...]:
    """LLMDEPLOY_ROUTERS, a comma list (empty entries, which the composed install leaves for
    router parts it lacks, are skipped); unset: istio."""
    if "LLMDEPLOY_ROUTERS" not in env:
        return DEFAULT_ROUTERS
    names = [n.strip() for n in env["LLMDEPLOY_ROUTERS"].split(",")]
    return tuple(dict.fromkeys(n for n in names if n and n != "none"))


def _names(env: Mapping[str, str], name: str) -> tuple[str, ...] | None:
    """A comma list of names; None when unset or empty (the default applies)."""
    names = tuple(dict.fromkeys(n.strip() for n in env.get(name, "").split(",") if n.strip()))
    return names or None


def _path(env: Mapping[str, str], name: str) -> Path | None:
    return Path(env[name]) if env.get(name) else None
