"""Canary analysis, pure: which queries a measurement runs, and what the answers mean."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hooks.api.spec import ENGINE_CHECKS, MESH_CHECKS, LLMDeploymentSpec
from hooks.core.analysis import ENGINE_QUERIES, analysis_plan, judge, track_queries
from hooks.core.facts import QueryResult
from hooks.core.naming import Names
from hooks.core.strategy import RolloutPolicy


def plan_of(checks: list[dict[str, Any]] | None = None, engine: str = "vllm", istio: bool = True) -> Any:
    analysis: dict[str, Any] = {} if checks is None else {"checks": checks}
    spec = LLMDeploymentSpec.model_validate({"model": {"uri": "hf://o/m"}, "engine": {"type": engine},
                                             "traffic": {"istio": istio},
                                             "rollout": {"strategy": "Canary", "analysis": analysis}})
    plan = analysis_plan(spec)
    assert plan is not None
    return plan


def verdict(checks: list[dict[str, Any]], canary: dict[str, QueryResult],
            stable: dict[str, QueryResult] | None = None) -> tuple[str, dict[str, Any]]:
    plan = plan_of(checks)
    names = Names("llama3", "ml")
    canary_q, stable_q = track_queries(plan, names, "canary", "m@2"), track_queries(plan, names, "stable", "m@1")
    results = {canary_q[n]: r for n, r in canary.items()} | {stable_q[n]: r for n, r in (stable or {}).items()}
    overall, statuses = judge(plan, canary_q, stable_q, results)
    return overall, {s.name: s.model_dump(by_alias=True, exclude_none=True) for s in statuses}


def one(value: float) -> QueryResult:
    return QueryResult((value,))


def test_the_engines_queries_and_the_apis_table_agree() -> None:
    for engine, checks in ENGINE_CHECKS.items():
        assert set(ENGINE_QUERIES[engine]) == checks, engine
    assert MESH_CHECKS == {"error-rate"}


@pytest.mark.parametrize(("engine", "istio", "expected"), [
    ("vllm", True, [("error-rate", "max 0.01"), ("ttft-p95", "maxRatioToStable 1.5")]),
    ("sglang", False, [("ttft-p95", "maxRatioToStable 1.5")]),
    ("sglang", True, [("error-rate", "max 0.01"), ("ttft-p95", "maxRatioToStable 1.5")]),
    ("tgi", False, [("error-rate", "max 0.01"), ("e2e-latency-p95", "maxRatioToStable 1.5")]),
    ("triton", False, [("error-rate", "max 0.01")]),
])
def test_default_checks_are_what_the_engine_can_answer(engine: str, istio: bool,
                                                       expected: list[tuple[str, str]]) -> None:
    plan = plan_of(None, engine, istio)
    assert [(c.name, ", ".join(str(b) for b in c.bounds)) for c in plan.checks] == expected


def test_error_rate_reads_the_mesh_with_istio_and_the_engine_without() -> None:
    names = Names("llama3", "ml")
    mesh = track_queries(plan_of([{"metric": "error-rate", "max": 0.1}], istio=True), names, "canary", "")
    engine = track_queries(plan_of([{"metric": "error-rate", "max": 0.1}], istio=False), names, "canary", "")
    assert 'destination_workload="llama3-canary"' in mesh["error-rate"]
    assert 'http_requests_total{namespace="ml",pod=~"llama3-canary-[a-z0-9]+-[a-z0-9]+",status="5xx"}' in \
        engine["error-rate"]


def test_the_stable_is_measured_only_for_relative_bounds() -> None:
    plan = plan_of([{"metric": "error-rate", "max": 0.1}, {"metric": "ttft-p95", "maxRatioToStable": 2}])
    stable = track_queries(plan, Names("llama3", "ml"), "stable", "m")
    assert list(stable) == ["ttft-p95"] and "llama3-stable" in stable["ttft-p95"]


@pytest.mark.parametrize(("bound", "value", "result"), [
    ({"max": 0.01}, 0.01, "Passed"), ({"max": 0.01}, 0.0101, "Failed"), ({"min": 50}, 49.9, "Failed"),
    ({"min": 50}, 50, "Passed"), ({"min": 1, "max": 2}, 3, "Failed"), ({"max": 1}, math.inf, "Failed"),
    ({"min": 1}, math.inf, "Passed"),
])
def test_absolute_bounds(bound: dict[str, float], value: float, result: str) -> None:
    overall, checks = verdict([{"name": "c", "query": "up", **bound}], {"c": one(value)})
    assert overall == result == checks["c"]["result"]
    assert ("value" in checks["c"]) == math.isfinite(value), "JSON has no infinity: an infinite value is absent"


@pytest.mark.parametrize(("canary", "stable", "result"), [
    (1.5, 1.0, "Passed"), (1.51, 1.0, "Failed"), (0.0, 0.0, "Passed"), (0.3, 0.0, "Inconclusive"),
])
def test_bounds_relative_to_the_stable(canary: float, stable: float, result: str) -> None:
    overall, checks = verdict([{"metric": "ttft-p95", "maxRatioToStable": 1.5}], {"ttft-p95": one(canary)},
                              {"ttft-p95": one(stable)})
    assert overall == result and checks["ttft-p95"]["stableValue"] == stable
    if result == "Failed":
        assert "1.51x the stable's 1" in checks["ttft-p95"]["message"]


@pytest.mark.parametrize(("answer", "why"), [
    (QueryResult(()), "no data"), (one(math.nan), "NaN"), (QueryResult((1.0, 2.0)), "2 series, not one number"),
    (QueryResult(error="Prometheus unreachable: ConnectError"), "unreachable"),
])
def test_anything_but_one_number_is_inconclusive_never_failed(answer: QueryResult, why: str) -> None:
    overall, checks = verdict([{"metric": "error-rate", "max": 0.01}], {"error-rate": answer})
    assert overall == "Inconclusive" and why in checks["error-rate"]["message"]


def test_a_failed_check_outweighs_an_inconclusive_one() -> None:
    overall, _ = verdict([{"metric": "error-rate", "max": 0.01}, {"name": "c", "query": "up", "min": 1}],
                         {"error-rate": one(0.5), "c": QueryResult(())})
    assert overall == "Failed"


@pytest.mark.parametrize(("fixed", "weight", "stable", "expected"), [
    (None, 10, 4, 1), (None, 50, 4, 2), (None, 50, 5, 3), (None, 10, 0, 1), (None, 100, 7, 7), (3, 10, 40, 3),
])
def test_canary_replicas(fixed: int | None, weight: int, stable: int, expected: int) -> None:
    policy = RolloutPolicy((), fixed, None, True)
    assert policy.canary_replicas_for(weight, stable) == expected
