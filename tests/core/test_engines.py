"""Every engine serves the metrics its HPA metric and its scrape annotations point at.

What each engine needs, from its own documentation (an independent statement of the facts
that hooks/core/engines.py encodes):
- vLLM: /metrics on the API port, always (docs.vllm.ai, "Production Metrics").
- TGI: /metrics on the API port, always (huggingface.co/docs/text-generation-inference, "Metrics").
- SGLang: /metrics on the API port only with --enable-metrics (docs.sglang.ai, "Monitoring").
- Triton: /metrics on its own port, 8002 by default, with --allow-metrics (default true) and
  --metrics-port (docs.nvidia.com/deeplearning/triton-inference-server, "Metrics").
"""

from __future__ import annotations

import pytest
from hooks.api.validation import validate_resource
from hooks.core.engines import PROFILES

from tests.core.test_view import view_of

NEEDS = {
    "vllm": ((), "vllm:num_requests_waiting", None),
    "tgi": ((), "tgi_queue_size", None),
    "sglang": (("--enable-metrics",), "sglang:num_queue_reqs", None),
    "triton": (("--allow-metrics=true", "--metrics-port=8002"), "nv_inference_pending_request_count", 8002),
}


def test_every_engine_is_covered() -> None:
    assert set(NEEDS) == set(PROFILES)


@pytest.mark.parametrize("engine", sorted(NEEDS))
def test_metrics_are_served_where_the_pod_says_and_the_hpa_asks(engine: str) -> None:
    flags, queue_metric, metrics_port = NEEDS[engine]
    spec = {"model": {"uri": "s3://b/m"}, "engine": {"type": engine, "port": 9000}, "autoscaling": {}}
    validate_resource("m", spec)
    view = view_of(spec)
    (track,) = view.tracks
    assert all(flag in track.args for flag in flags), track.args
    assert track.pod_annotations["prometheus.io/scrape"] == "true"
    assert track.pod_annotations["prometheus.io/port"] == str(metrics_port or 9000)
    assert track.pod_annotations["prometheus.io/path"] == "/metrics"
    assert view.autoscaler is not None and view.autoscaler.metrics[0].name == queue_metric
