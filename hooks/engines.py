"""What differs between serving engines: image, command, arguments, health path, queue metric.

vLLM is first-class; TGI, SGLang and Triton follow the same shape. Called by the view model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hooks.spec import EngineType


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


def _vllm(a: EngineArgs) -> list[str]:
    quantization = {"int8": "compressed-tensors"}.get(a.quantization, a.quantization)
    return [
        f"--model={a.model}",
        *([f"--revision={a.revision}"] if a.revision else []),
        f"--served-model-name={a.served_name}",
        f"--tensor-parallel-size={a.tensor_parallel_size}",
        *([f"--quantization={quantization}"] if a.quantization != "none" else []),
        *([f"--max-model-len={a.max_model_len}"] if a.max_model_len else []),
        f"--port={a.port}",
    ]


def _tgi(a: EngineArgs) -> list[str]:
    quantization = {"int8": "bitsandbytes"}.get(a.quantization, a.quantization)
    return [
        f"--model-id={a.model}",
        *([f"--revision={a.revision}"] if a.revision else []),
        f"--served-model-name={a.served_name}",
        f"--num-shard={a.tensor_parallel_size}",
        *([f"--quantize={quantization}"] if a.quantization != "none" else []),
        *([f"--max-total-tokens={a.max_model_len}"] if a.max_model_len else []),
        "--hostname=0.0.0.0",
        f"--port={a.port}",
    ]


def _sglang(a: EngineArgs) -> list[str]:
    quantization = {"int8": "w8a8_int8"}.get(a.quantization, a.quantization)
    return [
        f"--model-path={a.model}",
        *([f"--revision={a.revision}"] if a.revision else []),
        f"--served-model-name={a.served_name}",
        f"--tp-size={a.tensor_parallel_size}",
        *([f"--quantization={quantization}"] if a.quantization != "none" else []),
        *([f"--context-length={a.max_model_len}"] if a.max_model_len else []),
        "--host=0.0.0.0",
        f"--port={a.port}",
    ]


def _triton(a: EngineArgs) -> list[str]:
    # Triton serves a model repository; parallelism and quantization live in its config.pbtxt.
    return [f"--model-repository={a.model}", f"--http-port={a.port}"]


PROFILES: dict[EngineType, EngineProfile] = {
    "vllm": EngineProfile((), "/health", "/metrics", "vllm:num_requests_waiting", _vllm),
    "tgi": EngineProfile((), "/health", "/metrics", "tgi_queue_size", _tgi),
    "sglang": EngineProfile(("python3", "-m", "sglang.launch_server"), "/health", "/metrics",
                            "sglang:num_queue_reqs", _sglang),
    "triton": EngineProfile(("tritonserver",), "/v2/health/ready", "/metrics",
                            "nv_inference_pending_request_count", _triton, metrics_port=8002),
}

GPU_UTILIZATION_METRIC = "DCGM_FI_DEV_GPU_UTIL"
