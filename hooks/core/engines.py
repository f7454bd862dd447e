"""What differs between serving engines: image, command, arguments, health path, queue metric.

vLLM is first-class; TGI, SGLang and Triton follow the same shape. Called by the view model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hooks.api.spec import EngineType


@dataclass(frozen=True)
class EngineArgs:
    """The inputs every engine's arguments are built from."""

    model: str
    revision: str | None
    served_name: str
    tensor_parallel_size: int
    quantization: str
    max_model_len: int | None
    port: int


@dataclass(frozen=True)
class EngineProfile:
    command: tuple[str, ...]  # empty: the image's entrypoint
    health_path: str
    metrics_path: str
    queue_metric: str  # Prometheus gauge of requests waiting, per pod
    build_args: Callable[[EngineArgs], list[str]]
    metrics_port: int | None = None  # None: metrics are served on the engine port


@dataclass(frozen=True)
class Flags:
    """An OpenAI-compatible engine's names for the same settings."""

    model: str
    served_name: str
    tensor_parallel: str
    quantization: str
    max_model_len: str
    quantization_names: dict[str, str]  # where the engine's name differs from the API's
    extra: tuple[str, ...] = ()


def _arguments(flags: Flags) -> Callable[[EngineArgs], list[str]]:
    def build(a: EngineArgs) -> list[str]:
        quantization = flags.quantization_names.get(a.quantization, a.quantization)
        return [
            f"{flags.model}={a.model}",
            *([f"--revision={a.revision}"] if a.revision else []),
            f"{flags.served_name}={a.served_name}",
            f"{flags.tensor_parallel}={a.tensor_parallel_size}",
            *([f"{flags.quantization}={quantization}"] if a.quantization != "none" else []),
            *([f"{flags.max_model_len}={a.max_model_len}"] if a.max_model_len else []),
            *flags.extra,
            f"--port={a.port}",
        ]
    return build


_vllm = _arguments(Flags("--model", "--served-model-name", "--tensor-parallel-size", "--quantization",
                         "--max-model-len", {"int8": "compressed-tensors"}))
_tgi = _arguments(Flags("--model-id", "--served-model-name", "--num-shard", "--quantize", "--max-total-tokens",
                        {"int8": "bitsandbytes"}, ("--hostname=0.0.0.0",)))
# SGLang serves /metrics only when asked to (vLLM and TGI always do).
_sglang = _arguments(Flags("--model-path", "--served-model-name", "--tp-size", "--quantization",
                           "--context-length", {"int8": "w8a8_int8"}, ("--host=0.0.0.0", "--enable-metrics")))
TRITON_METRICS_PORT = 8002


def _triton(a: EngineArgs) -> list[str]:
    # Triton serves a model repository; parallelism and quantization live in its config.pbtxt.
    # Its metrics are on by default on their own port; say so, so that no image default moves them.
    return [f"--model-repository={a.model}", f"--http-port={a.port}", "--allow-metrics=true",
            f"--metrics-port={TRITON_METRICS_PORT}"]


PROFILES: dict[EngineType, EngineProfile] = {
    "vllm": EngineProfile((), "/health", "/metrics", "vllm:num_requests_waiting", _vllm),
    "tgi": EngineProfile((), "/health", "/metrics", "tgi_queue_size", _tgi),
    "sglang": EngineProfile(("python3", "-m", "sglang.launch_server"), "/health", "/metrics",
                            "sglang:num_queue_reqs", _sglang),
    "triton": EngineProfile(("tritonserver",), "/v2/health/ready", "/metrics",
                            "nv_inference_pending_request_count", _triton, metrics_port=TRITON_METRICS_PORT),
}

GPU_UTILIZATION_METRIC = "DCGM_FI_DEV_GPU_UTIL"


def tracing(engine: EngineType, endpoint: str, service: str, ratio: float) -> tuple[list[str], list[tuple[str, str]]]:
    """The engine's OTLP trace export: its arguments and environment (the spec allows only
    the engines here)."""
    if engine == "vllm":  # the OpenTelemetry SDK reads the sampler and insecurity from the environment
        env = [("OTEL_SERVICE_NAME", service), ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
               ("OTEL_TRACES_SAMPLER_ARG", f"{ratio:g}")]
        if endpoint.startswith("http://"):
            env.append(("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "true"))
        return [f"--otlp-traces-endpoint={endpoint}"], env
    if engine == "tgi":
        return [f"--otlp-endpoint={endpoint}", f"--otlp-service-name={service}"], []
    raise AssertionError(f"{engine} exports no traces: the spec rules refuse it")
