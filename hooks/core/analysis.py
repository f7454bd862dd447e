"""Canary analysis: what a measurement asks Prometheus, and what its answers mean.

`analysis_plan` turns the spec's checks into PromQL templates: the built-in checks from each
engine's (or the mesh's) own metrics, custom ones as written. `track_queries` fills them in
for one track; `judge` turns the answers into a verdict per check and for the measurement.
A check without one clear number is Inconclusive, never Failed: no data, NaN, an error, a
timeout and an unreachable Prometheus only ever hold a rollout, never roll it back. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from hooks.api.querytemplate import QueryTemplate, parse
from hooks.api.spec import Check, CheckMetric, EngineType, LLMDeploymentSpec
from hooks.api.status import CheckStatus, Verdict
from hooks.core.facts import QueryResult
from hooks.core.naming import Names, Track

PERCENTILE = 0.95
_POD = 'namespace="{{ namespace }}",pod=~"{{ deployment }}-[a-z0-9]+-[a-z0-9]+"'  # the Deployment's pods only
_WORKLOAD = ('reporter="destination",destination_workload_namespace="{{ namespace }}",'
             'destination_workload="{{ deployment }}"')


def _p95(histogram: str) -> str:
    return f"histogram_quantile({PERCENTILE}, sum by (le) (rate({histogram}_bucket{{{_POD}}}[{{{{ window }}}}])))"


def _mean(gauge: str) -> str:
    return f"avg(avg_over_time({gauge}{{{_POD}}}[{{{{ window }}}}]))"


def _share(counter: str, failed: str, selector: str = _POD) -> str:
    """Failed requests over all requests; 0 when there were requests and none failed (no
    failure series at all), no data when there were no requests."""
    return (f"(sum(rate({counter}{{{selector},{failed}}}[{{{{ window }}}}])) or vector(0)) "
            f"/ sum(rate({counter}{{{selector}}}[{{{{ window }}}}]))")


def _sum_rate(counter: str) -> str:
    """sum(rate(...)) of the track's pods; `counter` may carry matchers of its own: x{a="b"}."""
    name, _, matchers = counter.partition("{")
    selector = f"{_POD},{matchers.rstrip('}')}" if matchers else _POD
    return f"sum(rate({name}{{{selector}}}[{{{{ window }}}}]))"


def _ratio(failed: str, total: str) -> str:
    """Like `_share`, for engines that count failures in a counter of their own."""
    return f"({_sum_rate(failed)} or vector(0)) / {_sum_rate(total)}"


# The built-in checks, per engine, from the engine's own metrics (hooks.api.spec.ENGINE_CHECKS
# says which exist; a test holds the two together).
ENGINE_QUERIES: dict[EngineType, dict[CheckMetric, str]] = {
    "vllm": {
        "error-rate": _share("http_requests_total", 'status="5xx"'),
        "ttft-p95": _p95("vllm:time_to_first_token_seconds"),
        "e2e-latency-p95": _p95("vllm:e2e_request_latency_seconds"),
        "queue-length": _mean("vllm:num_requests_waiting"),
        "kv-cache-usage": _mean("vllm:kv_cache_usage_perc"),
    },
    "sglang": {  # no HTTP status counter: error-rate comes from the mesh
        "ttft-p95": _p95("sglang:time_to_first_token_seconds"),
        "e2e-latency-p95": _p95("sglang:e2e_request_latency_seconds"),
        "queue-length": _mean("sglang:num_queue_reqs"),
        "kv-cache-usage": _mean("sglang:token_usage"),
    },
    "tgi": {  # failures other than the caller's (validation, template) and overload (429)
        "error-rate": _ratio('tgi_request_failure{err=~"generation|incomplete|dropped"}', "tgi_request_count"),
        "e2e-latency-p95": _p95("tgi_request_duration"),
        "queue-length": _mean("tgi_queue_size"),
    },
    "triton": {
        "error-rate": (f"({_sum_rate('nv_inference_request_failure')} or vector(0)) / "
                       f"(({_sum_rate('nv_inference_request_failure')} or vector(0)) "
                       f"+ {_sum_rate('nv_inference_request_success')})"),
        "queue-length": _mean("nv_inference_pending_request_count"),
    },
}
# With Istio, the error rate is the mesh's view of the workload: it also sees requests the
# engine never answered (crashes, resets, timeouts).
MESH_ERROR_RATE = _share("istio_requests_total", 'response_code=~"5.."', _WORKLOAD)
DEFAULT_ERROR_RATE_MAX = 0.01
DEFAULT_LATENCY_RATIO = 1.5


@dataclass(frozen=True)
class Bound:
    kind: str  # max, min, maxRatioToStable or minRatioToStable
    value: float

    @property
    def relative(self) -> bool:
        return self.kind.endswith("ToStable")

    def __str__(self) -> str:
        return f"{self.kind} {self.value:g}"


@dataclass(frozen=True)
class CheckPlan:
    name: str
    query: QueryTemplate
    bounds: tuple[Bound, ...]

    @property
    def relative(self) -> bool:
        """Whether the stable track is measured too."""
        return any(b.relative for b in self.bounds)


@dataclass(frozen=True)
class AnalysisPlan:
    provider: str
    interval_seconds: int
    window_seconds: int
    failure_limit: int
    inconclusive_limit: int
    checks: tuple[CheckPlan, ...]


def analysis_plan(spec: LLMDeploymentSpec) -> AnalysisPlan | None:
    analysis = spec.rollout.analysis
    if analysis is None:
        return None
    engine = spec.engine.type
    checks = analysis.checks if analysis.checks is not None else default_checks(engine, spec.traffic.router_in_use == "istio")
    return AnalysisPlan(analysis.provider, analysis.interval_seconds, analysis.window_seconds,
                        analysis.failure_limit, analysis.inconclusive_limit,
                        tuple(_check_plan(c, engine, spec.traffic.router_in_use == "istio") for c in checks))


def default_checks(engine: EngineType, istio: bool) -> list[Check]:
    """error-rate max 0.01, and ttft-p95 (else e2e-latency-p95) at most 1.5x the stable's,
    where the engine (or the mesh) answers them."""
    checks = []
    if istio or "error-rate" in ENGINE_QUERIES[engine]:
        checks.append(Check.model_validate({"metric": "error-rate", "max": DEFAULT_ERROR_RATE_MAX}))
    latency = next((m for m in ("ttft-p95", "e2e-latency-p95") if m in ENGINE_QUERIES[engine]), None)
    if latency is not None:
        checks.append(Check.model_validate({"metric": latency, "maxRatioToStable": DEFAULT_LATENCY_RATIO}))
    return checks


def _check_plan(check: Check, engine: EngineType, istio: bool) -> CheckPlan:
    if check.query is not None:
        text = check.query
    elif check.metric == "error-rate" and istio:
        text = MESH_ERROR_RATE
    else:
        assert check.metric is not None  # a CEL rule requires metric or query
        text = ENGINE_QUERIES[engine][check.metric]  # validation rejects what the engine lacks
    bounds = tuple(Bound(kind, value) for kind, value in (
        ("max", check.max), ("min", check.min), ("maxRatioToStable", check.max_ratio_to_stable),
        ("minRatioToStable", check.min_ratio_to_stable)) if value is not None)
    return CheckPlan(check.check_name, parse(text), bounds)


def track_queries(plan: AnalysisPlan, names: Names, track: Track, model: str) -> dict[str, str]:
    """Each check's PromQL for `track`, by check name (only relative checks for the stable)."""
    values = {"namespace": names.namespace, "name": names.parent, "deployment": names.deployment(track),
              "track": track, "window": f"{plan.window_seconds}s", "model": model}
    return {c.name: c.query.render(values) for c in plan.checks if track == "canary" or c.relative}


def judge(plan: AnalysisPlan, canary: Mapping[str, str], stable: Mapping[str, str],
          results: Mapping[str, QueryResult]) -> tuple[Verdict, tuple[CheckStatus, ...]]:
    """The measurement's verdict (Failed if any check failed, else Inconclusive if any was,
    else Passed) and each check's."""
    checks = tuple(_judge_check(c, results[canary[c.name]], results[stable[c.name]] if c.relative else None)
                   for c in plan.checks)
    verdicts = {c.result for c in checks}
    verdict: Verdict = "Failed" if "Failed" in verdicts else "Inconclusive" if "Inconclusive" in verdicts \
        else "Passed"
    return verdict, checks


def _judge_check(check: CheckPlan, canary: QueryResult, stable: QueryResult | None) -> CheckStatus:
    bound = ", ".join(str(b) for b in check.bounds)
    value, why = one_number(canary)
    stable_value, stable_why = one_number(stable) if stable is not None else (None, "")
    # JSON has no infinity: status shows an infinite value (a p95 beyond the last bucket) as absent.
    status = CheckStatus.model_construct(name=check.name, value=_finite(value), stable_value=_finite(stable_value),
                                         bound=bound, result="Passed", message=None)
    if value is None:
        return status.model_copy(update={"result": "Inconclusive", "message": f"canary: {why}"})
    failed = []
    for b in check.bounds:
        if b.relative:
            if stable_value is None:
                return status.model_copy(update={"result": "Inconclusive", "message": f"stable: {stable_why}"})
            if stable_value == 0:
                if value == 0:
                    continue
                return status.model_copy(update={"result": "Inconclusive",
                                                 "message": "stable: 0, so there is no ratio to compare"})
            if math.isinf(value) and math.isinf(stable_value):
                return status.model_copy(update={"result": "Inconclusive", "message": "both tracks beyond the "
                                                 "histogram's last bucket, so there is no ratio to compare"})
            ratio = value / stable_value
            if ratio > b.value if b.kind.startswith("max") else ratio < b.value:
                failed.append(f"{ratio:.3g}x the stable's {stable_value:.4g}, {b}")
        elif value > b.value if b.kind == "max" else value < b.value:
            failed.append(str(b))
    if failed:
        return status.model_copy(update={"result": "Failed", "message": f"{value:.4g} crosses " + "; ".join(failed)})
    return status


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def one_number(result: QueryResult) -> tuple[float | None, str]:
    """The single finite-or-infinite number a query answered, or why there is none."""
    if result.error is not None:
        return None, result.error
    if not result.values:
        return None, "no data"
    if len(result.values) > 1:
        return None, f"{len(result.values)} series, not one number"
    value = result.values[0]
    if math.isnan(value):
        return None, "NaN (no requests in the window?)"
    return value, ""

