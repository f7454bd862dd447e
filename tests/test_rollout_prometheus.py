"""Whole rollouts judged on a real Prometheus: vLLM's own metrics for both tracks, backfilled
over the simulated hours, queried by the hook's edge client at the hook's (injected) clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from hooks.core.facts import Measurement
from hooks.core.rollout import MeasurementPlan
from hooks.core.sync import Measure
from hooks.edge.prometheus import Prometheus
from hooks.rendering.templateset import TemplateSet
from hooks.settings import AnalysisSettings

from tests.promserver import PrometheusServer, Series, counter, histogram
from tests.rollouts import CANARY, STABLE, START, Rollout, canary_spec

PODS = {"stable": "llama3-stable-7c9f2d1e4-fghij", "canary": "llama3-canary-5d8f7c9b4-abcde"}
DECOY = "llama3-canary-stable-7c9f2d1e4-klmno"  # the pods of a resource named llama3-canary: never selected
BEGIN, END = START - timedelta(hours=1), START + timedelta(hours=3)
BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5]
BREAKS = START + timedelta(minutes=15)  # when the broken canary starts failing


def series(canary_5xx: float, canary_ttft: list[float], broken_after: datetime | None = None) -> list[Series]:
    """Per track: requests as the mesh counts them (Istio's, which error-rate reads with
    traffic.istio) and as vLLM counts them, 10 per second, and time to first token."""
    out: list[Series] = []
    begin, end = BEGIN.timestamp(), END.timestamp()
    for track, pod in (*PODS.items(), ("decoy", DECOY)):
        labels = {"namespace": "ml", "pod": pod}
        workload = {"reporter": "destination", "destination_workload_namespace": "ml",
                    "destination_workload": pod.rsplit("-", 2)[0], "pod": pod}
        errors = canary_5xx if track == "canary" else 0.001 if track == "stable" else 50.0
        for name, ok, failed in (("http_requests_total", {**labels, "status": "2xx"}, {**labels, "status": "5xx"}),
                                 ("istio_requests_total", {**workload, "response_code": "200"},
                                  {**workload, "response_code": "503"})):
            out.append(counter(name, ok, begin, end, 15, 10.0))
            if track == "canary" and broken_after is not None:
                split = broken_after.timestamp()
                healthy = counter(name, failed, begin, split, 15, 0.001)
                failing = counter(name, failed, split + 15, end, 15, errors, initial=healthy.samples[-1][1])
                out.append(Series(name, failed, healthy.samples + failing.samples, "counter"))
            else:
                out.append(counter(name, failed, begin, end, 15, errors))
        ttft = canary_ttft if track == "canary" else [0.2, 0.3, 0.4] if track == "stable" else [4.0]
        out += histogram("vllm:time_to_first_token_seconds", labels, BUCKETS, begin, end, 15, ttft)
    return out


def measuring(url: str) -> Measure:
    """The hook's edge client, one event loop per sync (as the tests' syncs are synchronous)."""
    def measure(plan: MeasurementPlan) -> Measurement | None:
        async def once() -> Measurement | None:
            prometheus = Prometheus(AnalysisSettings({"default": url}, timeout_seconds=2.0))
            try:
                return await prometheus.measure("ml/llama3", plan)
            finally:
                await prometheus.aclose()
        return asyncio.run(once())
    return measure


@pytest.fixture(scope="module")
def healthy() -> Iterator[PrometheusServer]:
    with PrometheusServer(series(0.005, [0.2, 0.3, 0.45])) as server:
        yield server


@pytest.mark.parametrize("istio", [True, False], ids=["mesh-metrics", "engine-metrics"])
def test_a_healthy_canary_is_promoted_on_real_measurements(templates: TemplateSet, healthy: PrometheusServer,
                                                           istio: bool) -> None:
    spec = canary_spec()
    spec["traffic"] = {"istio": istio}
    rollout = Rollout(templates, spec, measure=measuring(healthy.url))
    rollout.deployed()
    rollout.new_revision("2")
    done = rollout.run(lambda s: s.phase == "Promoting", every=60)
    measured = [s.rollout["analysis"] for s in rollout.history if s.rollout.get("analysis", {}).get("checks")]
    assert len(measured) >= 18  # every minute of two 10-minute steps
    checks = {c["name"]: c for c in measured[-1]["checks"]}
    # error-rate: 0.005/s of 10.005/s; ttft-p95 against the stable's in the same window.
    assert checks["error-rate"]["result"] == "Passed"
    assert checks["error-rate"]["value"] == pytest.approx(0.005 / 10.005, rel=1e-3)
    assert checks["ttft-p95"]["result"] == "Passed" and checks["ttft-p95"]["stableValue"] > 0
    assert checks["ttft-p95"]["bound"] == "maxRatioToStable 1.5"
    assert all(a["failures"] == 0 and a["inconclusive"] == 0 for a in measured)
    assert done.revision(STABLE) == done.rollout["revision"]


def test_an_error_rate_regression_rolls_back_at_the_step_it_shows(templates: TemplateSet) -> None:
    with PrometheusServer(series(1.0, [0.2, 0.3, 0.45], broken_after=BREAKS)) as server:
        rollout = Rollout(templates, canary_spec(), measure=measuring(server.url))
        old = rollout.deployed()
        rollout.new_revision("2")
        done = rollout.run(lambda s: s.phase == "RolledBack", every=60)
    assert done.rollout["step"] == 1, "the canary broke during the second step"
    assert done.at >= BREAKS and done.at - BREAKS <= timedelta(minutes=4), "two failed measurements, a minute apart"
    failed = next(c for c in done.rollout["analysis"]["checks"] if c["name"] == "error-rate")
    assert failed["result"] == "Failed" and failed["value"] > 0.01
    assert done.weights() == {"stable": 100, "canary": 0} and done.replicas(CANARY) == 0
    assert done.deployments[STABLE]["spec"]["template"] == old.deployments[STABLE]["spec"]["template"]


def test_a_ttft_regression_against_the_stable_rolls_back(templates: TemplateSet) -> None:
    with PrometheusServer(series(0.005, [1.5, 2.0, 3.0])) as server:
        rollout = Rollout(templates, canary_spec(), measure=measuring(server.url))
        rollout.deployed()
        rollout.new_revision("2")
        done = rollout.run(lambda s: s.phase == "RolledBack", every=60)
    failed = next(c for c in done.rollout["analysis"]["checks"] if c["name"] == "ttft-p95")
    assert done.rollout["step"] == 0 and failed["value"] > 1.5 * failed["stableValue"]


def test_prometheus_down_holds_and_never_rolls_back(templates: TemplateSet) -> None:
    with PrometheusServer(series(0.005, [0.2, 0.3, 0.45])) as server:
        rollout = Rollout(templates, canary_spec(), measure=measuring(server.url))
        rollout.deployed()
        rollout.new_revision("2")
        rollout.run(lambda s: s.rollout.get("analysis", {}).get("passed") == 2, every=60)
        server.stop()
        paused = rollout.run(lambda s: s.phase == "Paused", every=60, limit=10)
        assert "unreachable" in paused.rollout["message"] and paused.rollout["analysis"]["failures"] == 0
        assert paused.weights() == {"stable": 90, "canary": 10}
        server.start()
        done = rollout.run(lambda s: s.phase == "Promoting", every=60)
    assert all(s.phase != "RolledBack" for s in rollout.history) and done.rollout["analysis"]["failures"] == 0


def test_no_traffic_yet_is_no_data_not_a_failure(templates: TemplateSet) -> None:
    """The canary has had no requests: Flagger and Argo roll back here; the hook waits."""
    quiet = [s for s in series(0.005, [0.2]) if s.labels.get("pod") != PODS["canary"]]
    with PrometheusServer(quiet) as server:
        rollout = Rollout(templates, canary_spec(), measure=measuring(server.url))
        rollout.deployed()
        rollout.new_revision("2")
        paused = rollout.run(lambda s: s.phase == "Paused", every=60, limit=20)
    checks = {c["name"]: c for c in paused.rollout["analysis"]["checks"]}
    assert {c["result"] for c in checks.values()} == {"Inconclusive"}
    assert "value" not in checks["error-rate"] and paused.rollout["analysis"]["failures"] == 0
